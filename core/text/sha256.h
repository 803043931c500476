// sha256.h: SHA-256 (FIPS 180-4) through OpenSSL's EVP interface, and its
// lowercase hex form. The content layer keys exact duplicates by the
// SHA-256 of the normalized text.
//
// Example:
//   Sha256Digest d = Sha256("abc");
//   std::string hex = Sha256Hex(d);
//   // hex == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
//   std::optional<Sha256Digest> back = ParseSha256Hex(hex);  // *back == d
#ifndef DEDUPD_CORE_TEXT_SHA256_H_
#define DEDUPD_CORE_TEXT_SHA256_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace dedupd {

using Sha256Digest = std::array<uint8_t, 32>;

// Sha256 returns the SHA-256 digest of `data`. Thread-safe. OpenSSL picks
// the fastest implementation the CPU has at run time (SHA-NI, AVX2, ...).
// Aborts only if OpenSSL cannot compute a digest at all (a broken install).
Sha256Digest Sha256(absl::string_view data);

// Sha256Hex returns the 64 lowercase hex characters of `digest`.
std::string Sha256Hex(const Sha256Digest& digest);

// ParseSha256Hex parses exactly 64 hex characters (either case) into a
// digest; returns nullopt for any other length or a non-hex character.
std::optional<Sha256Digest> ParseSha256Hex(absl::string_view hex);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SHA256_H_
