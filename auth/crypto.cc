#include "crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>

namespace rdmq::auth::internal {
namespace {

const EVP_MD* Md(ScramHash h) { return h == ScramHash::kSha256 ? EVP_sha256() : EVP_sha512(); }

const unsigned char* Bytes(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

size_t DigestSize(ScramHash h) { return static_cast<size_t>(EVP_MD_get_size(Md(h))); }

std::string Hash(ScramHash h, std::string_view data) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), reinterpret_cast<unsigned char*>(out.data()), &n, Md(h),
                 nullptr) != 1) {
    std::abort();  // only on allocation failure inside OpenSSL
  }
  out.resize(n);
  return out;
}

std::string Hmac(ScramHash h, std::string_view key, std::string_view data) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int n = 0;
  if (HMAC(Md(h), key.data(), static_cast<int>(key.size()), Bytes(data), data.size(),
           reinterpret_cast<unsigned char*>(out.data()), &n) == nullptr) {
    std::abort();
  }
  out.resize(n);
  return out;
}

std::string Pbkdf2(ScramHash h, std::string_view password, std::string_view salt, uint32_t iterations) {
  std::string out(DigestSize(h), '\0');
  if (PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), Bytes(salt),
                        static_cast<int>(salt.size()), static_cast<int>(iterations), Md(h),
                        static_cast<int>(out.size()), reinterpret_cast<unsigned char*>(out.data())) != 1) {
    std::abort();
  }
  return out;
}

std::string RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) std::abort();
  return out;
}

bool SameBytes(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace rdmq::auth::internal
