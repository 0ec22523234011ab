#include "user_backend.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <utility>

#include "rdmq/metadata/store.h"
#include "rdmq/protocol/messages.h"

namespace rdmq::cli::admin {
namespace {

class BrokerUsers final : public UserBackend {
 public:
  explicit BrokerUsers(std::unique_ptr<client::AdminClient> admin) : admin_(std::move(admin)) {}
  Status Create(const client::UserCredentials& u) override { return admin_->CreateUser(u); }
  Status Alter(const client::UserCredentials& u) override { return admin_->AlterUser(u); }
  Status Delete(const std::string& name) override { return admin_->DeleteUser(name); }
  Result<std::vector<client::UserListing>> List() override { return admin_->ListUsers(); }

 private:
  std::unique_ptr<client::AdminClient> admin_;
};

metadata::UserInfo ToStore(const client::UserCredentials& u) {
  metadata::UserInfo out{u.name, {}};
  for (const auto& s : u.secrets) {
    out.scram[s.mechanism] = metadata::ScramSecret{s.salt, s.iterations, s.stored_key, s.server_key};
  }
  return out;
}

// A stopped broker's metadata store, with the broker's lock held so that none starts meanwhile.
class LocalUsers final : public UserBackend {
 public:
  LocalUsers(int lock_fd, std::unique_ptr<metadata::MetadataStore> store)
      : lock_fd_(lock_fd), store_(std::move(store)) {}
  ~LocalUsers() override { ::close(lock_fd_); }
  LocalUsers(const LocalUsers&) = delete;
  LocalUsers& operator=(const LocalUsers&) = delete;

  Status Create(const client::UserCredentials& u) override { return store_->CreateUser(ToStore(u)); }
  Status Alter(const client::UserCredentials& u) override { return store_->UpdateUser(ToStore(u)); }
  Status Delete(const std::string& name) override { return store_->DeleteUser(name); }
  Result<std::vector<client::UserListing>> List() override {
    std::vector<client::UserListing> out;
    for (const auto& u : store_->ListUsers()) {
      client::UserListing l{u.name, {}};
      for (const auto& [mechanism, secret] : u.scram) l.mechanisms.push_back(mechanism);
      out.push_back(std::move(l));
    }
    return out;
  }

 private:
  const int lock_fd_;
  std::unique_ptr<metadata::MetadataStore> store_;
};

Result<std::unique_ptr<UserBackend>> OpenLocal(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) {
    return Status(Errc::kNotFound, "--data-dir " + dir + ": no such directory");
  }
  const std::string lock_path = dir + "/rdmq.lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "open " + lock_path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status(Errc::kFailedPrecondition,
                    "a broker is running on " + dir + ": manage its users through it (drop --data-dir)");
    }
    return Status::FromErrno(err, "lock " + lock_path);
  }
  metadata::StoreOptions so;
  so.dir = dir + "/meta";
  auto store = metadata::MetadataStore::Open(so);
  if (!store.ok()) {
    ::close(fd);
    return store.status();
  }
  return std::unique_ptr<UserBackend>(new LocalUsers(fd, std::move(*store)));
}

}  // namespace

std::unique_ptr<UserBackend> OpenUserBackend(const ParsedArgs& a, int* code) {
  if (a.Has("data-dir")) {
    auto local = OpenLocal(a.GetOr("data-dir", ""));
    if (!local.ok()) {
      *code = Fail("open the users of " + a.GetOr("data-dir", ""), local.status());
      return nullptr;
    }
    return std::move(*local);
  }
  auto admin = Connect(a, code);
  if (!admin) return nullptr;
  return std::make_unique<BrokerUsers>(std::move(admin));
}

bool IsUserExists(const Status& s) {
  return s.is(protocol::WireError::kUserExists) || s.is(metadata::MetadataErrc::kUserExists);
}

bool IsNoSuchUser(const Status& s) {
  return s.is(protocol::WireError::kUnknownUser) || s.is(metadata::MetadataErrc::kNoSuchUser);
}

}  // namespace rdmq::cli::admin
