// PmemEnv: real files, mapped with libpmem.
#include <dirent.h>
#include <fcntl.h>
#include <libpmem.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <thread>

#include "rdmq/storage/env.h"

namespace rdmq::storage {

std::string_view PersistModeName(PersistMode m) noexcept {
  switch (m) {
    case PersistMode::kPmem:
      return "pmem";
    case PersistMode::kMsync:
      return "msync";
    case PersistMode::kNone:
      return "none";
  }
  return "?";
}

Result<PersistMode> ParsePersistMode(std::string_view name) {
  if (name == "pmem") return PersistMode::kPmem;
  if (name == "msync") return PersistMode::kMsync;
  if (name == "none") return PersistMode::kNone;
  return Status(StorageErrc::kInvalidOptions,
                "persistence mode '" + std::string(name) + "' is not one of pmem, msync, none");
}

namespace {

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int release() { return std::exchange(fd_, -1); }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string PmemError() {
  const char* m = pmem_errormsg();
  return m && *m ? std::string(" (libpmem: ") + m + ")" : std::string();
}

FileId IdOf(const struct stat& st) {
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

class PmemMappedFile final : public MappedFile {
 public:
  // `via_pmem`: the mapping came from pmem_map_file (unmap with pmem_unmap).
  // No descriptor is kept (env.h): `id` names the file for OpenMappedFileFd.
  PmemMappedFile(std::string path, FileId id, std::byte* data, size_t size, bool writable, bool is_pmem,
                 bool via_pmem)
      : MappedFile(std::move(path), -1, data, size, writable, is_pmem, id), via_pmem_(via_pmem) {}
  ~PmemMappedFile() override {
    if (data_ != nullptr) {
      if (via_pmem_) {
        pmem_unmap(data_, size_);
      } else {
        ::munmap(data_, size_);
      }
    }
  }

  Status Flush(const void* addr, size_t len) override {
    if (len == 0) return Status::Ok();
    if (is_pmem_) {
      pmem_flush(addr, len);
      return Status::Ok();
    }
    return Msync(addr, len);
  }
  Status Drain() override {
    if (is_pmem_) pmem_drain();
    return Status::Ok();
  }
  Status Persist(const void* addr, size_t len) override {
    if (len == 0) return Status::Ok();
    if (is_pmem_) {
      pmem_persist(addr, len);
      return Status::Ok();
    }
    return Msync(addr, len);
  }

 private:
  Status Msync(const void* addr, size_t len) {
    if (pmem_msync(addr, len) != 0) {
      const int err = errno;
      const auto off = static_cast<const std::byte*>(addr) - data_;
      return Status::FromErrno(err, "msync " + path_ + " bytes " + std::to_string(off) + ".." +
                                        std::to_string(off + static_cast<long>(len)));
    }
    return Status::Ok();
  }
  bool via_pmem_;
};

class PmemEnv final : public Env {
 public:
  Status CreateDir(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status(ec, "create directory " + dir);
    return Status::Ok();
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::FromErrno(errno, "open directory " + dir);
    std::vector<std::string> names;
    std::string path = dir + "/";
    const size_t prefix = path.size();
    // readdir on a stream only this call uses is safe (concurrency-mt-unsafe flags every call).
    while (dirent* e = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe)
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      path.resize(prefix);
      path += name;
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  bool FileExists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<uint64_t> FileSize(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
    return static_cast<uint64_t>(st.st_size);
  }

  Status DeleteFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno(errno, "delete " + path);
    return Status::Ok();
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + from + " to " + to);
    }
    return Status::Ok();
  }

  Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open directory " + dir);
    FdCloser closer(fd);
    if (::fsync(fd) != 0) return Status::FromErrno(errno, "fsync directory " + dir);
    return Status::Ok();
  }

  Result<SpaceInfo> Space(const std::string& dir) override {
    struct statvfs st;
    if (::statvfs(dir.c_str(), &st) != 0) return Status::FromErrno(errno, "statvfs " + dir);
    SpaceInfo s;
    s.capacity_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
    s.free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
    return s;
  }

  Result<std::unique_ptr<MappedFile>> CreateMapped(const std::string& path, size_t size) override {
    return CreateMappedGradually(path, size, size);
  }

  Result<std::unique_ptr<MappedFile>> CreateMappedGradually(const std::string& path, size_t size,
                                                            size_t step) override {
    if (size == 0) return Status(StorageErrc::kInvalidOptions, "create " + path + ": size 0");
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create " + path);
    FdCloser closer(fd);
    auto fail = [&](Status s) -> Status {
      ::unlink(path.c_str());
      return s;
    };
    step = step == 0 ? size : step;
    for (size_t at = 0; at < size; at += step) {
      if (at != 0) std::this_thread::yield();
      const size_t len = std::min(step, size - at);
      // posix_fallocate returns the error number instead of setting errno.
      if (const int err = ::posix_fallocate(fd, static_cast<off_t>(at), static_cast<off_t>(len)); err != 0) {
        return fail(Status::FromErrno(err, "allocate " + std::to_string(size) + " bytes for " + path));
      }
    }
    if (::fsync(fd) != 0) return fail(Status::FromErrno(errno, "fsync " + path));
    auto m = MapReadWrite(path, fd, size);
    if (!m.ok()) ::unlink(path.c_str());
    return m;
  }

  Result<std::unique_ptr<MappedFile>> OpenMapped(const std::string& path, Access access) override {
    const bool rw = access == Access::kReadWrite;
    const int fd = ::open(path.c_str(), (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, std::string("open ") + (rw ? "" : "read-only ") + path);
    FdCloser closer(fd);
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
    if (!S_ISREG(st.st_mode)) return Status(Errc::kInvalidArgument, path + " is not a regular file");
    const auto size = static_cast<size_t>(st.st_size);
    const FileId id = IdOf(st);
    if (size == 0)
      return std::unique_ptr<MappedFile>(new PmemMappedFile(path, id, nullptr, 0, rw, false, false));
    if (rw) return MapReadWrite(path, fd, size);
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return Status::FromErrno(errno, "map read-only " + path);
    return std::unique_ptr<MappedFile>(
        new PmemMappedFile(path, id, static_cast<std::byte*>(p), size, false, false, false));
  }

 private:
  // Maps `path`, open read-write as `fd` (which the caller closes), with pmem_map_file.
  static Result<std::unique_ptr<MappedFile>> MapReadWrite(const std::string& path, int fd, size_t size) {
    struct stat st;
    if (::fstat(fd, &st) != 0) return Status::FromErrno(errno, "stat " + path);
    size_t mapped = 0;
    int is_pmem = 0;
    void* p = pmem_map_file(path.c_str(), 0, 0, 0, &mapped, &is_pmem);
    if (p == nullptr) return Status::FromErrno(errno, "map " + path + PmemError());
    if (mapped != size) {
      pmem_unmap(p, mapped);
      return Status(Errc::kIoError, "map " + path + ": file changed size while being mapped");
    }
    return std::unique_ptr<MappedFile>(
        new PmemMappedFile(path, IdOf(st), static_cast<std::byte*>(p), mapped, true, is_pmem != 0, true));
  }
};

}  // namespace

std::unique_ptr<Env> NewPmemEnv() { return std::make_unique<PmemEnv>(); }

Result<int> OpenMappedFileFd(int fd, FileId id, const std::string& path, bool writable) {
  if (fd >= 0) {
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return Status::FromErrno(errno, "duplicate the descriptor of " + path);
    return dup;
  }
  const int opened = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (opened < 0) return Status::FromErrno(errno, "open " + path + " (to pass it to peers)");
  FdCloser closer(opened);
  struct stat st;
  if (::fstat(opened, &st) != 0) return Status::FromErrno(errno, "stat " + path);
  if (IdOf(st) != id) {
    return Status(Errc::kFailedPrecondition,
                  path + " is no longer the file that was mapped (it was replaced)");
  }
  return closer.release();
}

Env* DefaultEnv() {
  static PmemEnv env;
  return &env;
}

}  // namespace rdmq::storage
