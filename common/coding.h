// coding.h: fixed-width integers in byte strings, in a byte order chosen by
// the format and independent of the host's (Boost.Endian underneath). Big
// endian where the bytes are compared as keys (byte order == numeric
// order: docs/storage_format.md); little endian in the files whose formats
// say so (the URL filter file, the Bloom snapshots and claim log).
//
// Example:
//   std::string key;
//   PutFixed64BE(&key, 42);                     // 00 00 00 00 00 00 00 2a
//   uint64_t v = DecodeFixed64BE(key.data());   // 42
//   char header[8];
//   EncodeFixed32LE(header, 7);                 // 07 00 00 00
//
// The decoders read from any alignment. REQUIRES: the pointer has as many
// readable (writable, for Encode*) bytes as the integer is wide.
#ifndef DEDUPD_COMMON_CODING_H_
#define DEDUPD_COMMON_CODING_H_

#include <cstdint>
#include <string>

#include "boost/endian/conversion.hpp"

namespace dedupd {

inline void EncodeFixed32BE(char* p, uint32_t v) {
  boost::endian::store_big_u32(reinterpret_cast<unsigned char*>(p), v);
}
inline void EncodeFixed64BE(char* p, uint64_t v) {
  boost::endian::store_big_u64(reinterpret_cast<unsigned char*>(p), v);
}
inline void EncodeFixed32LE(char* p, uint32_t v) {
  boost::endian::store_little_u32(reinterpret_cast<unsigned char*>(p), v);
}
inline void EncodeFixed64LE(char* p, uint64_t v) {
  boost::endian::store_little_u64(reinterpret_cast<unsigned char*>(p), v);
}

inline uint16_t DecodeFixed16BE(const char* p) {
  return boost::endian::load_big_u16(reinterpret_cast<const unsigned char*>(p));
}
inline uint32_t DecodeFixed32BE(const char* p) {
  return boost::endian::load_big_u32(reinterpret_cast<const unsigned char*>(p));
}
inline uint64_t DecodeFixed64BE(const char* p) {
  return boost::endian::load_big_u64(reinterpret_cast<const unsigned char*>(p));
}
inline uint32_t DecodeFixed32LE(const char* p) {
  return boost::endian::load_little_u32(reinterpret_cast<const unsigned char*>(p));
}
inline uint64_t DecodeFixed64LE(const char* p) {
  return boost::endian::load_little_u64(reinterpret_cast<const unsigned char*>(p));
}

// Put* append the integer to `out`.
inline void PutFixed16BE(std::string* out, uint16_t v) {
  unsigned char b[2];
  boost::endian::store_big_u16(b, v);
  out->append(reinterpret_cast<const char*>(b), sizeof(b));
}
inline void PutFixed32BE(std::string* out, uint32_t v) {
  char b[4];
  EncodeFixed32BE(b, v);
  out->append(b, sizeof(b));
}
inline void PutFixed64BE(std::string* out, uint64_t v) {
  char b[8];
  EncodeFixed64BE(b, v);
  out->append(b, sizeof(b));
}
inline void PutFixed32LE(std::string* out, uint32_t v) {
  char b[4];
  EncodeFixed32LE(b, v);
  out->append(b, sizeof(b));
}
inline void PutFixed64LE(std::string* out, uint64_t v) {
  char b[8];
  EncodeFixed64LE(b, v);
  out->append(b, sizeof(b));
}

}  // namespace dedupd

#endif  // DEDUPD_COMMON_CODING_H_
