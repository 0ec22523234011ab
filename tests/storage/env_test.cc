// Storage environments: PmemEnv on real files, MemEnv, and FaultInjectionEnv's durability model.
#include "rdmq/storage/env.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "rdmq/common/coding.h"
#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::storage;

namespace {

void CheckBasicEnv(Env* env, const std::string& dir) {
  REQUIRE_OK(env->CreateDir(dir + "/sub"));
  auto created = env->CreateMapped(dir + "/sub/a", 10000);
  REQUIRE_OK(created.status());
  auto& a = *created;
  CHECK(a->size() == 10000);
  CHECK(a->writable());
  for (size_t i = 0; i < a->size(); ++i) REQUIRE(a->data()[i] == std::byte{0});
  std::memcpy(a->data() + 100, "hello", 5);
  REQUIRE_OK(a->Persist(a->data() + 100, 5));
  REQUIRE_OK(a->Flush(a->data(), 64));
  REQUIRE_OK(a->Drain());

  CHECK(env->CreateMapped(dir + "/sub/a", 10).status().is(Errc::kAlreadyExists));
  CHECK(env->CreateMapped(dir + "/nodir/x", 10).status().is(Errc::kNotFound));
  CHECK(env->FileExists(dir + "/sub/a"));
  auto size = env->FileSize(dir + "/sub/a");
  REQUIRE_OK(size.status());
  CHECK(*size == 10000);

  // A read-only view sees the bytes; a descriptor opened for either mapping reads them too
  // (MemEnv's views keep one, PmemEnv's keep none: the path is opened and checked).
  auto ro = env->OpenMapped(dir + "/sub/a", Env::Access::kReadOnly);
  REQUIRE_OK(ro.status());
  CHECK_FALSE((*ro)->writable());
  CHECK(std::memcmp((*ro)->data() + 100, "hello", 5) == 0);
  for (const MappedFile* m : {a.get(), ro->get()}) {
    auto fd = OpenMappedFileFd(m->fd(), m->id(), dir + "/sub/a", m->writable());
    REQUIRE_OK(fd.status());
    char buf[5];
    CHECK(::pread(*fd, buf, 5, 100) == 5);
    CHECK(std::memcmp(buf, "hello", 5) == 0);
    ::close(*fd);
  }

  REQUIRE_OK(env->CreateMapped(dir + "/sub/b", 4096).status());
  auto names = env->ListDir(dir + "/sub");
  REQUIRE_OK(names.status());
  CHECK(*names == std::vector<std::string>{"a", "b"});
  REQUIRE_OK(env->RenameFile(dir + "/sub/b", dir + "/sub/c"));
  names = env->ListDir(dir + "/sub");
  CHECK(*names == std::vector<std::string>{"a", "c"});
  REQUIRE_OK(env->DeleteFile(dir + "/sub/c"));
  CHECK_FALSE(env->FileExists(dir + "/sub/c"));
  CHECK(env->DeleteFile(dir + "/sub/c").is(Errc::kNotFound));
  REQUIRE_OK(env->SyncDir(dir + "/sub"));
  auto space = env->Space(dir + "/sub");
  REQUIRE_OK(space.status());
  CHECK(space->capacity_bytes > 0);
  CHECK(space->free_bytes <= space->capacity_bytes);
  CHECK(env->ListDir(dir + "/missing").status().is(Errc::kNotFound));
}

}  // namespace

TEST_CASE("PmemEnv creates, maps, persists, lists, renames and deletes real files", "[env]") {
  test::TempDir dir("rdmq-env");
  CheckBasicEnv(DefaultEnv(), dir.str());
  // Data persisted through the mapping is in the file.
  std::string content(10000, '\0');
  FILE* f = std::fopen((dir.str() + "/sub/a").c_str(), "rb");
  REQUIRE(f != nullptr);
  REQUIRE(std::fread(content.data(), 1, content.size(), f) == content.size());
  std::fclose(f);
  CHECK(content.substr(100, 5) == "hello");
  // An ordinary file system is not persistent memory.
  auto m = DefaultEnv()->OpenMapped(dir.str() + "/sub/a", Env::Access::kReadWrite);
  REQUIRE_OK(m.status());
  CHECK_FALSE((*m)->is_pmem());
}

TEST_CASE("PmemEnv mappings keep no descriptor, and one opened for a replaced file is refused", "[env]") {
  test::TempDir dir("rdmq-env");
  Env* env = DefaultEnv();
  const std::string path = dir.str() + "/a";
  auto a = env->CreateMapped(path, 8192);
  REQUIRE_OK(a.status());
  CHECK((*a)->fd() == -1);
  auto ro = env->OpenMapped(path, Env::Access::kReadOnly);
  REQUIRE_OK(ro.status());
  CHECK((*ro)->fd() == -1);
  CHECK((*ro)->id() == (*a)->id());

  // The descriptor's access follows what was asked for.
  auto rfd = OpenMappedFileFd(-1, (*a)->id(), path, false);
  REQUIRE_OK(rfd.status());
  CHECK((::fcntl(*rfd, F_GETFL) & O_ACCMODE) == O_RDONLY);
  CHECK(::write(*rfd, "x", 1) == -1);
  ::close(*rfd);

  // Another file under the name: refused, and the mapping still holds the old bytes.
  std::memcpy((*a)->data(), "old", 3);
  auto other = env->CreateMapped(dir.str() + "/b", 8192);
  REQUIRE_OK(other.status());
  CHECK((*other)->id() != (*a)->id());
  REQUIRE_OK(env->RenameFile(dir.str() + "/b", path));
  auto replaced = OpenMappedFileFd(-1, (*a)->id(), path, true);
  CHECK(replaced.status().is(Errc::kFailedPrecondition));
  CHECK(std::memcmp((*a)->data(), "old", 3) == 0);

  // No file under the name: not found.
  REQUIRE_OK(env->DeleteFile(path));
  CHECK(OpenMappedFileFd(-1, (*a)->id(), path, true).status().is(Errc::kNotFound));
}

TEST_CASE("PmemEnv reports a full disk as kNoSpace and leaves no file behind", "[env]") {
  test::TempDir dir("rdmq-env");
  // RLIMIT_FSIZE makes posix_fallocate fail with EFBIG like a full device; run it in a child so
  // the limit and the ignored SIGXFSZ do not leak into other tests.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{1 << 20, 1 << 20};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    auto m = DefaultEnv()->CreateMapped(dir.str() + "/big", 4 << 20);
    const bool ok = !m.ok() && m.status().is(Errc::kNoSpace) &&
                    !DefaultEnv()->FileExists(dir.str() + "/big") &&
                    m.status().ToString().find(dir.str() + "/big") != std::string::npos;
    std::_Exit(ok ? 0 : 1);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  CHECK(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("MemEnv behaves like a file system in memory and enforces read-only views", "[env]") {
  MemEnv env;
  CheckBasicEnv(&env, "/mem");
  auto ro = env.OpenMapped("/mem/sub/a", Env::Access::kReadOnly);
  REQUIRE_OK(ro.status());
  // The view is PROT_READ: a write would fault. Check the protection without faulting.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGSEGV, SIG_DFL);       // Catch2's handler would report instead of dying
    (*ro)->data()[0] = std::byte{1};  // must SIGSEGV
    std::_Exit(0);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  CHECK(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGSEGV);
}

TEST_CASE("MemEnv with a capacity runs out of space like a small device", "[env]") {
  MemEnv env(64 << 10);
  REQUIRE_OK(env.CreateDir("/d"));
  REQUIRE_OK(env.CreateMapped("/d/a", 40 << 10).status());
  auto s = env.CreateMapped("/d/b", 40 << 10).status();
  CHECK(s.is(Errc::kNoSpace));
  CHECK(s.ToString().find("/d/b") != std::string::npos);
  CHECK_FALSE(env.FileExists("/d/b"));
  auto space = env.Space("/d");
  CHECK(space->free_bytes == 24 << 10);
  REQUIRE_OK(env.DeleteFile("/d/a"));
  REQUIRE_OK(env.CreateMapped("/d/b", 40 << 10).status());
}

TEST_CASE("FaultInjectionEnv keeps persisted words and drops, keeps or tears the rest", "[env]") {
  using LM = FaultInjectionEnv::LossMode;
  std::mt19937_64 rng(test::TestSeed());
  for (LM mode : {LM::kDropUnpersisted, LM::kKeepUnpersisted, LM::kTearWords}) {
    FaultInjectionEnv env;
    REQUIRE_OK(env.CreateDir("/d"));
    {
      auto m = env.CreateMapped("/d/f", 4096);
      REQUIRE_OK(m.status());
      CHECK((*m)->is_pmem());
      std::memset((*m)->data(), 0x11, 4096);
      REQUIRE_OK((*m)->Persist((*m)->data() + 100, 20));  // words 96..120 become durable
      REQUIRE_OK(env.SyncDir("/d"));
    }
    auto lost = env.SimulatePowerLoss(rng, mode);
    REQUIRE_OK(lost.status());
    CHECK(*lost == 4096 / 8 - 3);
    auto content = env.ReadFile("/d/f");
    REQUIRE_OK(content.status());
    for (size_t w = 0; w < 4096; w += 8) {
      const bool persisted = w >= 96 && w < 120;
      const char c = (*content)[w];
      for (size_t i = 1; i < 8; ++i) REQUIRE((*content)[w + i] == c);  // words never tear inside
      if (persisted || mode == LM::kKeepUnpersisted) {
        CHECK(c == 0x11);
      } else if (mode == LM::kDropUnpersisted) {
        CHECK(c == 0);
      } else {
        CHECK((c == 0 || c == 0x11));
      }
    }
  }
}

TEST_CASE("FaultInjectionEnv: names are durable only after SyncDir", "[env]") {
  std::mt19937_64 rng(test::TestSeed());
  FaultInjectionEnv env;
  REQUIRE_OK(env.CreateDir("/d"));
  REQUIRE_OK(env.CreateMapped("/d/kept", 64).status());
  REQUIRE_OK(env.CreateMapped("/d/renamed", 64).status());
  REQUIRE_OK(env.CreateMapped("/d/deleted", 64).status());
  REQUIRE_OK(env.SyncDir("/d"));
  REQUIRE_OK(env.CreateMapped("/d/unsynced", 64).status());
  REQUIRE_OK(env.RenameFile("/d/renamed", "/d/new-name"));
  REQUIRE_OK(env.DeleteFile("/d/deleted"));
  REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kKeepUnpersisted).status());
  auto names = env.ListDir("/d");
  REQUIRE_OK(names.status());
  CHECK(*names == std::vector<std::string>{"deleted", "kept", "renamed"});

  REQUIRE_OK(env.RenameFile("/d/renamed", "/d/new-name"));
  REQUIRE_OK(env.SyncDir("/d"));
  REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kKeepUnpersisted).status());
  names = env.ListDir("/d");
  CHECK(*names == std::vector<std::string>{"deleted", "kept", "new-name"});
}

TEST_CASE("FaultInjectionEnv: after the persist budget runs out nothing more becomes durable", "[env]") {
  std::mt19937_64 rng(test::TestSeed());
  FaultInjectionEnv env;
  REQUIRE_OK(env.CreateDir("/d"));
  {
    auto m = env.CreateMapped("/d/f", 64);
    REQUIRE_OK(m.status());
    REQUIRE_OK(env.SyncDir("/d"));
    env.SetPersistBudget(1);
    (*m)->data()[0] = std::byte{1};
    REQUIRE_OK((*m)->Persist((*m)->data(), 1));
    (*m)->data()[8] = std::byte{2};
    const Status s = (*m)->Persist((*m)->data() + 8, 1);
    CHECK(s.is(StorageErrc::kPowerLoss));
    CHECK(env.PowerFailed());
    CHECK(env.SyncDir("/d").is(StorageErrc::kPowerLoss));
  }
  REQUIRE_OK(env.SimulatePowerLoss(rng, FaultInjectionEnv::LossMode::kDropUnpersisted).status());
  auto c = env.ReadFile("/d/f");
  CHECK((*c)[0] == 1);
  CHECK((*c)[8] == 0);
  CHECK_FALSE(env.PowerFailed());
}

TEST_CASE("persistence modes parse and print", "[env]") {
  for (auto m : {PersistMode::kPmem, PersistMode::kMsync, PersistMode::kNone}) {
    auto p = ParsePersistMode(PersistModeName(m));
    REQUIRE_OK(p.status());
    CHECK(*p == m);
  }
  CHECK(ParsePersistMode("fsync").status().is(StorageErrc::kInvalidOptions));
}
