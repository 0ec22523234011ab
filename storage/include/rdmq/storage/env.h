// The storage environment: the only way the storage engine touches files. It creates, lists,
// renames and deletes files, maps whole files into memory (MAP_SHARED) and makes ranges of a
// mapping durable.
//
// Backends:
//   * PmemEnv (NewPmemEnv(), DefaultEnv()): real files mapped with libpmem's pmem_map_file. Each
//     writable mapping decides once whether it is persistent memory (pmem_is_pmem, i.e. a DAX
//     mapping): then Persist = pmem_persist (cache-line flush + fence), otherwise pmem_msync.
//     A mapping keeps no file descriptor (a partition would otherwise hold one per segment
//     for nothing): a fabric that passes files to peers opens one with OpenMappedFileFd.
//   * MemEnv: files are memfds held by the Env, so views have real file descriptors and read-only
//     views are enforced by the MMU; nothing touches the disk; Persist does nothing. An optional
//     capacity makes it a small "device" for full-disk tests.
//   * FaultInjectionEnv: a MemEnv that keeps, per file, the durable image next to the live one
//     and simulates power loss. See below for the durability model.
//
// Ownership and lifetime: an Env outlives every MappedFile it returned and every log opened on it.
// A MappedFile unmaps (and closes its descriptor, if it has one) on destruction; pointers into it
// die with it.
// Threading: Env methods are thread-safe. A MappedFile's accessors are immutable; Flush, Drain
// and Persist may be called from any thread.
// Errors: OS failures come back as errno-based Status with the path in the context (ENOSPC and
// EFBIG map to Errc::kNoSpace, ENOENT to kNotFound, EEXIST to kAlreadyExists);
// StorageErrc::kPowerLoss from a FaultInjectionEnv past its simulated power failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rdmq/common/mutex.h"
#include "rdmq/common/status.h"
#include "rdmq/common/thread_annotations.h"
#include "rdmq/storage/errors.h"

namespace rdmq::storage {

// How a log makes committed bytes durable.
enum class PersistMode : uint8_t {
  kPmem = 1,   // real persistent memory (DAX): cache-line flushes; refuses non-DAX mappings
  kMsync = 2,  // page cache + msync (pmem_msync): durable on an ordinary file
  kNone = 3,   // visibility only: MAP_SHARED bytes survive a process crash, not a power loss
};
std::string_view PersistModeName(PersistMode m) noexcept;
// "pmem", "msync", "none".
Result<PersistMode> ParsePersistMode(std::string_view name);

// Which file a mapping was made from (st_dev, st_ino), to tell it from one that replaced it.
struct FileId {
  uint64_t dev = 0;
  uint64_t ino = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

// A whole file mapped MAP_SHARED at file offset 0.
class MappedFile {
 public:
  virtual ~MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::byte* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  // The descriptor the mapping was made from (owned by this object), or -1 where the Env keeps
  // none (PmemEnv: a file mapping needs no descriptor once made).
  int fd() const noexcept { return fd_; }
  // The file the mapping was made from (zero where fd() names it: MemEnv).
  FileId id() const noexcept { return id_; }
  // File offset of data()[0]; whole files are mapped, so always 0.
  uint64_t file_offset() const noexcept { return 0; }
  bool writable() const noexcept { return writable_; }
  // True when flushing CPU caches makes stores durable (DAX / persistent memory).
  bool is_pmem() const noexcept { return is_pmem_; }
  const std::string& path() const noexcept { return path_; }

  // Starts making [addr, addr + len) durable: pmem: flush the cache lines (no fence);
  // otherwise msync the pages (already durable on return).
  virtual Status Flush(const void* addr, size_t len) = 0;
  // Waits for earlier Flush calls to reach the media (pmem: a store fence).
  virtual Status Drain() = 0;
  // Flush + Drain.
  virtual Status Persist(const void* addr, size_t len) = 0;

 protected:
  MappedFile() = default;
  MappedFile(std::string path, int fd, std::byte* data, size_t size, bool writable, bool is_pmem,
             FileId id = {})
      : data_(data),
        size_(size),
        fd_(fd),
        id_(id),
        writable_(writable),
        is_pmem_(is_pmem),
        path_(std::move(path)) {}
  std::byte* data_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
  FileId id_;
  bool writable_ = false;
  bool is_pmem_ = false;
  std::string path_;
};

struct SpaceInfo {
  uint64_t capacity_bytes = 0;  // size of the device
  uint64_t free_bytes = 0;      // what an unprivileged writer may still allocate
};

class Env {
 public:
  enum class Access { kReadOnly, kReadWrite };

  virtual ~Env() = default;

  // Creates `dir` and missing parents; OK if it exists.
  virtual Status CreateDir(const std::string& dir) = 0;
  // Names (not paths) of the regular files directly in `dir`, sorted.
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  // Atomically renames `from` to `to`, replacing `to`.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes creations, renames and deletions of entries in `dir` durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Result<SpaceInfo> Space(const std::string& dir) = 0;
  // Creates `path`, which must not exist, with exactly `size` bytes allocated on the device
  // (posix_fallocate) and reading as zeros, makes the allocation durable (fsync), and maps it
  // read-write. On failure no file is left behind.
  virtual Result<std::unique_ptr<MappedFile>> CreateMapped(const std::string& path, size_t size) = 0;
  // CreateMapped for work off the data path: the same file, allocated `step` bytes at a time with
  // a yield between, so that no other thread waits long for the CPU (on tmpfs allocating is
  // zeroing: 64 MiB at once keeps a CPU in the kernel for 18-26 ms). By default all at once.
  virtual Result<std::unique_ptr<MappedFile>> CreateMappedGradually(const std::string& path, size_t size,
                                                                    size_t step) {
    (void)step;
    return CreateMapped(path, size);
  }
  // Maps an existing file. kReadOnly mappings are PROT_READ: nothing can change the file
  // through them. A zero-length file gives a mapping with data() == nullptr.
  virtual Result<std::unique_ptr<MappedFile>> OpenMapped(const std::string& path, Access access) = 0;
};

// A new descriptor (the caller closes it) for the file a mapping was made from, for a fabric
// that passes files to peers: a duplicate of `fd` when the mapping has one, else `path` opened
// anew (read-write or read-only as `writable` says) and checked to be the file `id` names
// (Errc::kNotFound when it was deleted, kFailedPrecondition when another file took its name).
Result<int> OpenMappedFileFd(int fd, FileId id, const std::string& path, bool writable);

// The process-wide PmemEnv.
Env* DefaultEnv();
std::unique_ptr<Env> NewPmemEnv();

// Files in memory (memfds). Directories exist implicitly once created with CreateDir.
class MemEnv : public Env {
 public:
  // capacity_bytes: total file bytes this "device" holds (0 = 1 TiB).
  explicit MemEnv(uint64_t capacity_bytes = 0);
  ~MemEnv() override;

  Status CreateDir(const std::string& dir) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  bool FileExists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status SyncDir(const std::string& dir) override;
  Result<SpaceInfo> Space(const std::string& dir) override;
  Result<std::unique_ptr<MappedFile>> CreateMapped(const std::string& path, size_t size) override;
  Result<std::unique_ptr<MappedFile>> OpenMapped(const std::string& path, Access access) override;

  // Replaces the whole content of an existing file, or creates it (tests and fuzzers use this to
  // plant arbitrary bytes). The new size must fit the capacity.
  Status WriteFile(const std::string& path, std::string_view content);
  // The whole content of a file.
  Result<std::string> ReadFile(const std::string& path);

  // One file: a memfd and a read-write mapping of it that the Env keeps.
  struct File;

 protected:
  // Hooks for FaultInjectionEnv. A durability-tracking env keeps a durable image per file and
  // reports its mappings as persistent memory (it emulates a pmem device).
  virtual bool TracksDurability() const { return false; }
  virtual Status OnPersist(File& f, size_t offset, size_t len) REQUIRES(mu_);
  virtual Status OnSyncDir(const std::string& dir) REQUIRES(mu_);

  static Result<std::shared_ptr<File>> NewFile(size_t size);
  static std::string Parent(const std::string& path);

  // Guards the namespace and every File's durable image.
  Mutex mu_;
  const uint64_t capacity_;
  uint64_t used_ GUARDED_BY(mu_) = 0;
  std::set<std::string> dirs_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<File>> files_ GUARDED_BY(mu_);  // the live namespace

 private:
  friend class MemMappedFile;
  Status Persist(File& f, size_t offset, size_t len) EXCLUDES(mu_);
};

// A MemEnv whose durable state is tracked separately from its live state, for crash tests.
//
// Durability model:
//   * File contents: a byte becomes durable when a Persist (or Flush) over it returns OK, in
//     8-byte words: every aligned word overlapping the range is copied from the live image to the
//     durable image. Nothing else ever becomes durable on its own, except as power loss decides.
//   * Names: CreateMapped, RenameFile and DeleteFile change the live namespace; SyncDir(dir)
//     makes the live state of every entry in `dir` durable. A file created but whose directory
//     was not synced vanishes at power loss; a deletion not synced is undone; so is a rename.
//     CreateMapped itself reports the allocation as durable (like fsync of the new file), but
//     the name needs SyncDir, as on ext4/xfs.
//   * Power failure: SetPersistBudget(n) lets n more durability events (each Persist, Flush or
//     SyncDir) succeed; every later one fails with StorageErrc::kPowerLoss and makes nothing
//     durable, as if the power had gone at that instant (the process keeps running on its live
//     memory). SimulatePowerLoss() then rebuilds the live state from the durable one: the durable
//     namespace comes back, and in each file every 8-byte word that differs between live and
//     durable image (written but not persisted) becomes, by `mode`: the durable word (dropped),
//     the live word (kept: it reached the media by cache eviction), or either at random per word
//     (torn). Afterwards live == durable and the budget is unlimited again.
// Close every log and mapping of this Env before SimulatePowerLoss().
class FaultInjectionEnv : public MemEnv {
 public:
  enum class LossMode { kDropUnpersisted, kKeepUnpersisted, kTearWords };

  explicit FaultInjectionEnv(uint64_t capacity_bytes = 0) : MemEnv(capacity_bytes) {}

  // -1: unlimited (the default). Also clears an earlier failure without any loss: continuing
  // after a failure without SimulatePowerLoss() models a process crash (the page cache, i.e. the
  // live images, survives; durability events that failed simply did not happen).
  void SetPersistBudget(int64_t events);
  // True once the budget ran out (a durability event failed).
  bool PowerFailed();
  // Durability events that succeeded so far.
  uint64_t persist_events();
  // Returns the number of words that were written but not persisted (dropped or kept).
  Result<uint64_t> SimulatePowerLoss(std::mt19937_64& rng, LossMode mode);

 protected:
  bool TracksDurability() const override { return true; }
  Status OnPersist(File& f, size_t offset, size_t len) REQUIRES(mu_) override;
  Status OnSyncDir(const std::string& dir) REQUIRES(mu_) override;

 private:
  Status Spend(std::string_view what) REQUIRES(mu_);
  int64_t budget_ GUARDED_BY(mu_) = -1;
  bool failed_ GUARDED_BY(mu_) = false;
  uint64_t events_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::shared_ptr<File>> durable_names_ GUARDED_BY(mu_);
};

}  // namespace rdmq::storage
