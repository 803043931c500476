// sha256_test.cc: SHA-256 against the NIST vectors (FIPS 180-2 appendix B,
// and the SHA-256 examples of NIST's "Cryptographic Standards and
// Guidelines"), and the hex round trip.
#include "core/text/sha256.h"

#include <cctype>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

struct Vector {
  const char* name;
  std::string message;
  const char* digest_hex;
};

TEST(Sha256Test, NistVectors) {
  const Vector vectors[] = {
      {"empty", "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"448_bits", "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"896_bits",
       "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
      {"million_a", std::string(1000000, 'a'),
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const Vector& v : vectors) {
    SCOPED_TRACE(v.name);
    EXPECT_EQ(Sha256Hex(Sha256(v.message)), v.digest_hex);
  }
}

TEST(Sha256Test, HexRoundTrip) {
  const Sha256Digest d = Sha256("abc");
  const std::string hex = Sha256Hex(d);
  EXPECT_EQ(hex.size(), 64u);
  EXPECT_EQ(ParseSha256Hex(hex), d);
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(c));
  EXPECT_EQ(ParseSha256Hex(upper), d);
}

TEST(Sha256Test, ParseRejectsMalformed) {
  const std::string good = Sha256Hex(Sha256("x"));
  EXPECT_EQ(ParseSha256Hex(""), std::nullopt);
  EXPECT_EQ(ParseSha256Hex(good.substr(1)), std::nullopt);
  EXPECT_EQ(ParseSha256Hex(good + "0"), std::nullopt);
  std::string bad = good;
  bad[10] = 'g';
  EXPECT_EQ(ParseSha256Hex(bad), std::nullopt);
  bad[10] = ' ';
  EXPECT_EQ(ParseSha256Hex(bad), std::nullopt);
}

}  // namespace
}  // namespace dedupd
