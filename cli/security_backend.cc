#include "security_backend.h"

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

class BrokerSecurity final : public SecurityBackend {
 public:
  explicit BrokerSecurity(std::unique_ptr<client::AdminClient> admin) : admin_(std::move(admin)) {}
  Status Create(const client::UserCredentials& u) override { return admin_->CreateUser(u); }
  Status Alter(const client::UserCredentials& u) override { return admin_->AlterUser(u); }
  Status Delete(const std::string& name) override { return admin_->DeleteUser(name); }
  Result<std::vector<client::UserListing>> List() override { return admin_->ListUsers(); }
  Result<uint32_t> AddAcls(const std::vector<client::AclBinding>& acls) override {
    return admin_->CreateAcls(acls);
  }
  Result<uint32_t> RemoveAcls(const std::vector<client::AclBinding>& acls) override {
    return admin_->DeleteAcls(acls);
  }
  Result<std::vector<client::AclBinding>> ListAcls() override { return admin_->ListAcls(); }

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

Result<metadata::AclBinding> ToStore(const client::AclBinding& a) {
  metadata::AclBinding b;
  b.principal = a.principal;
  b.resource_name = a.resource_name;
  RDMQ_ASSIGN_OR_RETURN(b.permission, metadata::ParseAclPermission(a.permission));
  RDMQ_ASSIGN_OR_RETURN(b.operation, metadata::ParseAclOperation(a.operation));
  RDMQ_ASSIGN_OR_RETURN(b.resource_type, metadata::ParseAclResourceType(a.resource_type));
  RDMQ_ASSIGN_OR_RETURN(b.pattern_type, metadata::ParseAclPatternType(a.pattern_type));
  RDMQ_RETURN_IF_ERROR(metadata::ValidateAcl(b));
  return b;
}

// A stopped broker's metadata store, with the broker's lock held so that none starts meanwhile.
class LocalSecurity final : public SecurityBackend {
 public:
  LocalSecurity(int lock_fd, std::unique_ptr<metadata::MetadataStore> store)
      : lock_fd_(lock_fd), store_(std::move(store)) {}
  ~LocalSecurity() override { ::close(lock_fd_); }
  LocalSecurity(const LocalSecurity&) = delete;
  LocalSecurity& operator=(const LocalSecurity&) = delete;

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
  Result<uint32_t> AddAcls(const std::vector<client::AclBinding>& acls) override {
    return Change(acls, true);
  }
  Result<uint32_t> RemoveAcls(const std::vector<client::AclBinding>& acls) override {
    return Change(acls, false);
  }
  Result<std::vector<client::AclBinding>> ListAcls() override {
    std::vector<client::AclBinding> out;
    for (const auto& b : store_->ListAcls()) {
      out.push_back({b.principal, metadata::Name(b.permission), metadata::Name(b.operation),
                     metadata::Name(b.resource_type), metadata::Name(b.pattern_type), b.resource_name});
    }
    return out;
  }

 private:
  Result<uint32_t> Change(const std::vector<client::AclBinding>& acls, bool add) {
    std::vector<metadata::AclBinding> bindings;
    for (const auto& a : acls) {
      RDMQ_ASSIGN_OR_RETURN(metadata::AclBinding b, ToStore(a));
      bindings.push_back(std::move(b));
    }
    uint32_t n = 0;
    for (const auto& b : bindings) {
      RDMQ_ASSIGN_OR_RETURN(bool changed, add ? store_->AddAcl(b) : store_->RemoveAcl(b));
      n += changed ? 1 : 0;
    }
    return n;
  }

  const int lock_fd_;
  std::unique_ptr<metadata::MetadataStore> store_;
};

Result<std::unique_ptr<SecurityBackend>> OpenLocal(const std::string& dir) {
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
      return Status(
          Errc::kFailedPrecondition,
          "a broker is running on " + dir + ": manage its users and ACLs through it (drop --data-dir)");
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
  return std::unique_ptr<SecurityBackend>(new LocalSecurity(fd, std::move(*store)));
}

}  // namespace

std::unique_ptr<SecurityBackend> OpenSecurityBackend(const ParsedArgs& a, int* code) {
  if (a.Has("data-dir")) {
    auto local = OpenLocal(a.GetOr("data-dir", ""));
    if (!local.ok()) {
      *code = Fail("open the metadata store of " + a.GetOr("data-dir", ""), local.status());
      return nullptr;
    }
    return std::move(*local);
  }
  auto admin = Connect(a, code);
  if (!admin) return nullptr;
  return std::make_unique<BrokerSecurity>(std::move(admin));
}

bool IsUserExists(const Status& s) {
  return s.is(protocol::WireError::kUserExists) || s.is(metadata::MetadataErrc::kUserExists);
}

bool IsNoSuchUser(const Status& s) {
  return s.is(protocol::WireError::kUnknownUser) || s.is(metadata::MetadataErrc::kNoSuchUser);
}

}  // namespace rdmq::cli::admin
