// MemEnv (files as memfds) and FaultInjectionEnv (durable images and simulated power loss).
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmq/storage/env.h"

namespace rdmq::storage {

struct MemEnv::File {
  int fd = -1;
  std::byte* live = nullptr;  // the Env's own read-write mapping
  size_t size = 0;
  std::vector<std::byte> durable;  // FaultInjectionEnv only: what survives a power loss

  ~File() {
    if (live != nullptr) ::munmap(live, size);
    if (fd >= 0) ::close(fd);
  }
};

class MemMappedFile final : public MappedFile {
 public:
  MemMappedFile(MemEnv* env, std::shared_ptr<MemEnv::File> file, std::string path, int fd, std::byte* data,
                size_t size, bool writable, bool is_pmem)
      : MappedFile(std::move(path), fd, data, size, writable, is_pmem), env_(env), file_(std::move(file)) {}
  ~MemMappedFile() override {
    if (data_ != nullptr) ::munmap(data_, size_);
    if (fd_ >= 0) ::close(fd_);
  }
  Status Flush(const void* addr, size_t len) override { return Persist(addr, len); }
  Status Drain() override { return Status::Ok(); }
  Status Persist(const void* addr, size_t len) override {
    const auto* p = static_cast<const std::byte*>(addr);
    if (len == 0) return Status::Ok();
    if (p < data_ || p + len > data_ + size_) {
      return Status(Errc::kInvalidArgument, "persist outside the mapping of " + path_);
    }
    return env_->Persist(*file_, static_cast<size_t>(p - data_), len);
  }

 private:
  MemEnv* env_;
  std::shared_ptr<MemEnv::File> file_;
};

MemEnv::MemEnv(uint64_t capacity_bytes) : capacity_(capacity_bytes ? capacity_bytes : (uint64_t{1} << 40)) {}
MemEnv::~MemEnv() = default;

std::string MemEnv::Parent(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

Status MemEnv::Persist(File& f, size_t offset, size_t len) {
  MutexLock lock(mu_);
  return OnPersist(f, offset, len);
}

Status MemEnv::OnPersist(File&, size_t, size_t) { return Status::Ok(); }
Status MemEnv::OnSyncDir(const std::string&) { return Status::Ok(); }

Status MemEnv::CreateDir(const std::string& dir) {
  MutexLock lock(mu_);
  std::string d = dir;
  while (!d.empty() && d.back() == '/') d.pop_back();
  // Register the directory and its parents.
  for (std::string p = d; !p.empty(); p = Parent(p)) dirs_.insert(p);
  return Status::Ok();
}

Result<std::vector<std::string>> MemEnv::ListDir(const std::string& dir) {
  MutexLock lock(mu_);
  if (!dirs_.count(dir)) return Status(Errc::kNotFound, "open directory " + dir + ": no such directory");
  std::vector<std::string> names;
  for (const auto& [path, f] : files_) {
    if (Parent(path) == dir) names.push_back(path.substr(dir.size() + 1));
  }
  return names;  // std::map iteration is already sorted by path
}

bool MemEnv::FileExists(const std::string& path) {
  MutexLock lock(mu_);
  return files_.count(path) != 0;
}

Result<uint64_t> MemEnv::FileSize(const std::string& path) {
  MutexLock lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status(Errc::kNotFound, "stat " + path + ": no such file");
  return static_cast<uint64_t>(it->second->size);
}

Status MemEnv::DeleteFile(const std::string& path) {
  MutexLock lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status(Errc::kNotFound, "delete " + path + ": no such file");
  used_ -= it->second->size;
  files_.erase(it);
  return Status::Ok();
}

Status MemEnv::RenameFile(const std::string& from, const std::string& to) {
  MutexLock lock(mu_);
  auto it = files_.find(from);
  if (it == files_.end()) return Status(Errc::kNotFound, "rename " + from + ": no such file");
  if (!dirs_.count(Parent(to))) return Status(Errc::kNotFound, "rename to " + to + ": no such directory");
  auto f = it->second;
  files_.erase(it);
  if (auto old = files_.find(to); old != files_.end()) {
    used_ -= old->second->size;
    old->second = f;
  } else {
    files_.emplace(to, f);
  }
  return Status::Ok();
}

Status MemEnv::SyncDir(const std::string& dir) {
  MutexLock lock(mu_);
  if (!dirs_.count(dir)) return Status(Errc::kNotFound, "sync directory " + dir + ": no such directory");
  return OnSyncDir(dir);
}

Result<SpaceInfo> MemEnv::Space(const std::string& dir) {
  MutexLock lock(mu_);
  if (!dirs_.count(dir)) return Status(Errc::kNotFound, "statvfs " + dir + ": no such directory");
  return SpaceInfo{capacity_, capacity_ - used_};
}

Result<std::shared_ptr<MemEnv::File>> MemEnv::NewFile(size_t size) {
  auto f = std::make_shared<File>();
  f->fd = ::memfd_create("rdmq-memenv", MFD_CLOEXEC);
  if (f->fd < 0) return Status::FromErrno(errno, "memfd_create");
  if (size > 0) {
    if (::ftruncate(f->fd, static_cast<off_t>(size)) != 0) return Status::FromErrno(errno, "ftruncate memfd");
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
    if (p == MAP_FAILED) return Status::FromErrno(errno, "mmap memfd");
    f->live = static_cast<std::byte*>(p);
  }
  f->size = size;
  return f;
}

Result<std::unique_ptr<MappedFile>> MemEnv::CreateMapped(const std::string& path, size_t size) {
  std::shared_ptr<File> f;
  {
    MutexLock lock(mu_);
    if (files_.count(path)) return Status(Errc::kAlreadyExists, "create " + path + ": file exists");
    if (!dirs_.count(Parent(path))) return Status(Errc::kNotFound, "create " + path + ": no such directory");
    if (size == 0) return Status(StorageErrc::kInvalidOptions, "create " + path + ": size 0");
    if (size > capacity_ - used_) {
      return Status::FromErrno(ENOSPC, "allocate " + std::to_string(size) + " bytes for " + path);
    }
    RDMQ_ASSIGN_OR_RETURN(f, NewFile(size));
    if (TracksDurability()) f->durable.assign(size, std::byte{0});
    files_.emplace(path, f);
    used_ += size;
  }
  return OpenMapped(path, Access::kReadWrite);
}

Result<std::unique_ptr<MappedFile>> MemEnv::OpenMapped(const std::string& path, Access access) {
  std::shared_ptr<File> f;
  {
    MutexLock lock(mu_);
    auto it = files_.find(path);
    if (it == files_.end()) return Status(Errc::kNotFound, "open " + path + ": no such file");
    f = it->second;
  }
  const bool rw = access == Access::kReadWrite;
  const int fd = ::fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "dup memfd of " + path);
  std::byte* data = nullptr;
  if (f->size > 0) {
    void* p = ::mmap(nullptr, f->size, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno(err, "map " + path);
    }
    data = static_cast<std::byte*>(p);
  }
  return std::unique_ptr<MappedFile>(
      new MemMappedFile(this, f, path, fd, data, f->size, rw, TracksDurability()));
}

Status MemEnv::WriteFile(const std::string& path, std::string_view content) {
  MutexLock lock(mu_);
  if (!dirs_.count(Parent(path))) return Status(Errc::kNotFound, "write " + path + ": no such directory");
  uint64_t old_size = 0;
  if (auto it = files_.find(path); it != files_.end()) old_size = it->second->size;
  if (content.size() > capacity_ - used_ + old_size) {
    return Status::FromErrno(ENOSPC, "write " + std::to_string(content.size()) + " bytes to " + path);
  }
  RDMQ_ASSIGN_OR_RETURN(auto f, NewFile(content.size()));
  if (!content.empty()) std::memcpy(f->live, content.data(), content.size());
  if (TracksDurability()) {
    f->durable.assign(f->live, f->live + content.size());
  }
  used_ = used_ - old_size + content.size();
  files_[path] = f;
  return Status::Ok();
}

Result<std::string> MemEnv::ReadFile(const std::string& path) {
  MutexLock lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return Status(Errc::kNotFound, "read " + path + ": no such file");
  const auto& f = *it->second;
  return std::string(reinterpret_cast<const char*>(f.live), f.size);
}

// ---------------------------------------------------------------------------------------------
// FaultInjectionEnv

void FaultInjectionEnv::SetPersistBudget(int64_t events) {
  MutexLock lock(mu_);
  budget_ = events;
  failed_ = false;
}

bool FaultInjectionEnv::PowerFailed() {
  MutexLock lock(mu_);
  return failed_;
}

uint64_t FaultInjectionEnv::persist_events() {
  MutexLock lock(mu_);
  return events_;
}

Status FaultInjectionEnv::Spend(std::string_view what) {
  if (failed_ || budget_ == 0) {
    failed_ = true;
    return Status(StorageErrc::kPowerLoss,
                  std::string(what) + " after " + std::to_string(events_) + " durability events");
  }
  if (budget_ > 0) --budget_;
  ++events_;
  return Status::Ok();
}

Status FaultInjectionEnv::OnPersist(File& f, size_t offset, size_t len) {
  RDMQ_RETURN_IF_ERROR(Spend("persist"));
  if (f.durable.size() != f.size) return Status::Ok();  // planted without tracking
  const size_t lo = offset & ~size_t{7};
  const size_t hi = std::min(f.size, (offset + len + 7) & ~size_t{7});
  std::memcpy(f.durable.data() + lo, f.live + lo, hi - lo);
  return Status::Ok();
}

Status FaultInjectionEnv::OnSyncDir(const std::string& dir) {
  RDMQ_RETURN_IF_ERROR(Spend("sync directory " + dir));
  for (auto it = durable_names_.begin(); it != durable_names_.end();) {
    it = Parent(it->first) == dir ? durable_names_.erase(it) : std::next(it);
  }
  for (const auto& [path, f] : files_) {
    if (Parent(path) == dir) durable_names_[path] = f;
  }
  return Status::Ok();
}

Result<uint64_t> FaultInjectionEnv::SimulatePowerLoss(std::mt19937_64& rng, LossMode mode) {
  MutexLock lock(mu_);
  uint64_t differing = 0;
  files_ = durable_names_;
  used_ = 0;
  for (auto& [path, fp] : files_) {
    File& f = *fp;
    used_ += f.size;
    if (f.durable.size() != f.size) f.durable.assign(f.live, f.live + f.size);
    for (size_t w = 0; w + 8 <= f.size; w += 8) {
      if (std::memcmp(f.live + w, f.durable.data() + w, 8) == 0) continue;
      ++differing;
      bool keep_new = mode == LossMode::kKeepUnpersisted;
      if (mode == LossMode::kTearWords) keep_new = (rng() & 1) != 0;
      if (keep_new) {
        std::memcpy(f.durable.data() + w, f.live + w, 8);
      } else {
        std::memcpy(f.live + w, f.durable.data() + w, 8);
      }
    }
    // A tail shorter than a word is handled byte-wise as one unit.
    const size_t tail = f.size & ~size_t{7};
    if (tail < f.size && std::memcmp(f.live + tail, f.durable.data() + tail, f.size - tail) != 0) {
      ++differing;
      std::memcpy(f.live + tail, f.durable.data() + tail, f.size - tail);
    }
  }
  budget_ = -1;
  failed_ = false;
  return differing;
}

}  // namespace rdmq::storage
