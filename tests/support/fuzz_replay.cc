// Driver for fuzz targets in non-fuzzing builds: replays every file under the directories or
// files given on the command line, then a deterministic stream of random and mutated inputs,
// through LLVMFuzzerTestOneInput. It proves in every build (and under the sanitizers) that the
// decoders survive their seed corpus and arbitrary bytes; the libFuzzer build explores further.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

std::vector<uint8_t> ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::vector<uint8_t>> seeds;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) seeds.push_back(ReadFile(e.path()));
      }
    } else if (std::filesystem::is_regular_file(p)) {
      seeds.push_back(ReadFile(p));
    } else {
      std::fprintf(stderr, "fuzz-replay: %s is not a file or directory\n", argv[i]);
      return 2;
    }
  }
  for (const auto& s : seeds) LLVMFuzzerTestOneInput(s.data(), s.size());

  const char* iters_env = std::getenv("RDMQ_FUZZ_REPLAY_ITERATIONS");
  const long iterations = iters_env ? std::strtol(iters_env, nullptr, 10) : 20000;
  std::mt19937_64 rng(0x5eed);
  std::vector<uint8_t> buf;
  for (long i = 0; i < iterations; ++i) {
    if (!seeds.empty() && (i % 2 == 0)) {
      // Mutate a seed: flip, overwrite or truncate a few bytes.
      buf = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits && !buf.empty(); ++e) {
        const size_t at = rng() % buf.size();
        switch (rng() % 4) {
          case 0:
            buf[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
            break;
          case 1:
            buf[at] = static_cast<uint8_t>(rng());
            break;
          case 2:
            buf.resize(at);
            break;
          default:
            buf.insert(buf.begin() + static_cast<long>(at), static_cast<uint8_t>(rng()));
            break;
        }
      }
    } else {
      buf.resize(rng() % 512);
      for (auto& b : buf) b = static_cast<uint8_t>(rng());
    }
    LLVMFuzzerTestOneInput(buf.data(), buf.size());
  }
  std::printf("fuzz-replay: %zu seed inputs and %ld generated inputs, no crash\n", seeds.size(), iterations);
  return 0;
}
