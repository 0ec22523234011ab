// SASL mechanisms: SCRAM against RFC 7677's test vector byte for byte, both sides against each
// other (SHA-256 and SHA-512), refusals (wrong password, unknown user, tampered messages), and
// PLAIN and base64 parsing.
#include "rdmq/auth/scram.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "support/test_util.h"

using namespace rdmq;
using namespace rdmq::auth;

namespace {

ScramServer::Lookup One(const std::string& user, const ScramCredential& c) {
  return [user, c](const std::string& u) -> std::optional<ScramCredential> {
    if (u == user) return c;
    return std::nullopt;
  };
}

// A whole exchange; the server's final answer (or its error).
Result<std::string> Exchange(ScramServer& s, ScramClient& c) {
  auto first = s.Step(c.First());
  if (!first.ok()) return first.status();
  auto final_msg = c.Final(*first);
  if (!final_msg.ok()) return final_msg.status();
  return s.Step(*final_msg);
}

}  // namespace

TEST_CASE("SCRAM-SHA-256 reproduces RFC 7677's example exchange byte for byte", "[auth][scram]") {
  auto salt = Base64Decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  REQUIRE_OK(salt);
  auto cred = MakeScramCredential(ScramHash::kSha256, "pencil", 4096, *salt);
  REQUIRE_OK(cred);
  ScramServer s(ScramHash::kSha256, One("user", *cred), "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  ScramClient c(ScramHash::kSha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  const std::string client_first = c.First();
  CHECK(client_first == "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto server_first = s.Step(client_first);
  REQUIRE_OK(server_first);
  CHECK(*server_first ==
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
  auto client_final = c.Final(*server_first);
  REQUIRE_OK(client_final);
  CHECK(*client_final ==
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+"
        "Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  auto server_final = s.Step(*client_final);
  REQUIRE_OK(server_final);
  CHECK(*server_final == "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  CHECK(s.done());
  CHECK(s.user() == "user");
  CHECK_OK(c.Verify(*server_final));
  // Nothing more is accepted.
  CHECK(s.Step("anything").status().is(Errc::kFailedPrecondition));
}

TEST_CASE("SCRAM both ways with random salts and nonces, SHA-256 and SHA-512, names with , and =",
          "[auth][scram]") {
  for (ScramHash h : {ScramHash::kSha256, ScramHash::kSha512}) {
    INFO(MechanismName(h));
    auto cred = MakeScramCredential(h, "s3cret, really=yes");
    REQUIRE_OK(cred);
    CHECK(cred->salt.size() == 16);
    ScramServer s(h, One("a,b=c", *cred));
    ScramClient c(h, "a,b=c", "s3cret, really=yes");
    auto fin = Exchange(s, c);
    REQUIRE_OK(fin);
    CHECK(s.done());
    CHECK(s.user() == "a,b=c");
    CHECK_OK(c.Verify(*fin));
    CHECK(CheckPassword(h, *cred, "s3cret, really=yes"));
    CHECK_FALSE(CheckPassword(h, *cred, "s3cret, really=no"));
  }
}

TEST_CASE("a wrong password and an unknown user are refused alike", "[auth][scram]") {
  auto cred = MakeScramCredential(ScramHash::kSha256, "right");
  REQUIRE_OK(cred);
  ScramServer wrong(ScramHash::kSha256, One("alice", *cred));
  ScramClient cw(ScramHash::kSha256, "alice", "wrong");
  auto a = Exchange(wrong, cw);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().is(Errc::kPermissionDenied));
  CHECK_FALSE(wrong.done());

  ScramServer unknown(ScramHash::kSha256, One("alice", *cred));
  ScramClient cu(ScramHash::kSha256, "bob", "right");
  auto first = unknown.Step(cu.First());
  REQUIRE_OK(first);  // the same shape of answer as for a real user
  CHECK(first->find(",s=") != std::string::npos);
  CHECK(first->ends_with(",i=4096"));
  auto fin = cu.Final(*first);
  REQUIRE_OK(fin);
  auto b = unknown.Step(*fin);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().is(Errc::kPermissionDenied));
  CHECK(b.status().ToString() == a.status().ToString());
  // And the same unknown user gets the same salt every time (no tell between attempts).
  ScramServer again(ScramHash::kSha256, One("alice", *cred));
  ScramClient cu2(ScramHash::kSha256, "bob", "x");
  auto first2 = again.Step(cu2.First());
  REQUIRE_OK(first2);
  CHECK(first2->substr(first2->find(",s=")) == first->substr(first->find(",s=")));
}

TEST_CASE("malformed and tampered SCRAM messages are refused, and end the exchange", "[auth][scram]") {
  auto cred = MakeScramCredential(ScramHash::kSha256, "pw");
  REQUIRE_OK(cred);
  struct Case {
    std::string first;
    Errc errc;
  };
  const std::vector<Case> firsts = {
      {"", Errc::kInvalidArgument},
      {"x,,n=alice,r=abc", Errc::kInvalidArgument},
      {"p=tls-unique,,n=alice,r=abc", Errc::kInvalidArgument},
      {"n,,r=abc,n=alice", Errc::kInvalidArgument},
      {"n,,n=alice", Errc::kInvalidArgument},
      {"n,,n=al=ice,r=abc", Errc::kInvalidArgument},
      {"n,,n=,r=abc", Errc::kInvalidArgument},
      {"n,,n=alice,r=a,c", Errc::kInvalidArgument},
      {"n,,n=alice,r=abc,m=ext", Errc::kInvalidArgument},
      {"n,,n=alice,r=abc,tokenauth=true", Errc::kInvalidArgument},
      {"n,a=bob,n=alice,r=abc", Errc::kPermissionDenied},
      {"n,,n=alice,r=abc,", Errc::kInvalidArgument},
  };
  for (const auto& k : firsts) {
    INFO(k.first);
    ScramServer s(ScramHash::kSha256, One("alice", *cred));
    auto r = s.Step(k.first);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().is(k.errc));
    CHECK(s.Step("n,,n=alice,r=abc").status().is(Errc::kFailedPrecondition));
  }
  // Tampered client-final messages: each one refused.
  auto tamper = [&](auto change) {
    ScramServer s(ScramHash::kSha256, One("alice", *cred));
    ScramClient c(ScramHash::kSha256, "alice", "pw");
    auto first = s.Step(c.First());
    REQUIRE_OK(first);
    auto fin = c.Final(*first);
    REQUIRE_OK(fin);
    std::string m = *fin;
    change(m);
    auto r = s.Step(m);
    CHECK_FALSE(r.ok());
    CHECK_FALSE(s.done());
  };
  tamper([](std::string& m) { m[m.size() - 5] = m[m.size() - 5] == 'A' ? 'B' : 'A'; });  // the proof
  tamper([](std::string& m) { m.replace(0, 6, "c=eSws"); });                             // channel binding
  tamper([](std::string& m) { m.insert(m.find(",p="), "x"); });                          // the nonce
  tamper([](std::string& m) { m.insert(m.find(",r=") + 3, "x"); });                      // a prefix to it
  tamper([](std::string& m) { m = m.substr(0, m.find(",p=")); });                        // no proof
  tamper([](std::string& m) { m += "=="; });                                             // proof length
  // A client refuses a server whose answers are malformed, or whose signature is wrong.
  ScramClient c(ScramHash::kSha256, "alice", "pw", "abc");
  (void)c.First();
  CHECK(c.Final("r=xyz,s=AAAA,i=4096").status().is(Errc::kInvalidArgument));  // not our nonce
  CHECK(c.Final("r=abcd,s=AAAA,i=1").status().is(Errc::kInvalidArgument));    // too few iterations
  CHECK(c.Final("r=abcd,s=,i=4096").status().is(Errc::kInvalidArgument));
  REQUIRE_OK(c.Final("r=abcd,s=AAAA,i=4096"));
  CHECK(c.Verify("v=AAAA").is(Errc::kPermissionDenied));
  CHECK(c.Verify("e=invalid-proof").is(Errc::kPermissionDenied));
  CHECK(c.Verify("q").is(Errc::kInvalidArgument));
}

TEST_CASE("credentials: iterations bounded", "[auth][scram]") {
  CHECK(MakeScramCredential(ScramHash::kSha256, "pw", 4095).status().is(Errc::kInvalidArgument));
  CHECK(MakeScramCredential(ScramHash::kSha256, "pw", kMaxScramIterations + 1)
            .status()
            .is(Errc::kInvalidArgument));
  ScramCredential bad;
  CHECK_FALSE(CheckPassword(ScramHash::kSha256, bad, "pw"));
}

TEST_CASE("SASL PLAIN messages", "[auth][plain]") {
  using namespace std::string_literals;
  auto p = ParsePlain("\0alice\0pw"s);
  REQUIRE_OK(p);
  CHECK(p->user == "alice");
  CHECK(p->password == "pw");
  REQUIRE_OK(ParsePlain("alice\0alice\0pw"s));
  CHECK(ParsePlain("bob\0alice\0pw"s).status().is(Errc::kPermissionDenied));
  for (const std::string& bad : {""s, "alice"s, "\0alice"s, "\0\0pw"s, "\0alice\0"s, "\0a\0b\0c"s}) {
    CHECK(ParsePlain(bad).status().is(Errc::kInvalidArgument));
  }
}

TEST_CASE("base64 round trips and refuses what is not base64", "[auth]") {
  for (std::string raw : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                          std::string("foob"), std::string("\0\xff\x10", 3)}) {
    auto back = Base64Decode(Base64Encode(raw));
    REQUIRE_OK(back);
    CHECK(*back == raw);
  }
  CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  for (const char* bad : {"Zm9", "Zm9v!mFy", "Z=9v", "Zm9vYmF=Zm9v", "ZZm=", "Zh=="}) {
    CHECK(Base64Decode(bad).status().is(Errc::kInvalidArgument));
  }
}
