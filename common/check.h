// check.h: DEDUPD_CHECK, a broken-invariant stop that stays in release
// builds (what ABSL_RAW_CHECK did, without Abseil's internal header). For
// conditions no input can cause — a failed allocation, tables that
// disagree — never for bad input, which gets an absl::Status.
//
// Example:
//   DEDUPD_CHECK(p != nullptr, "BloomFilter: out of memory");
#ifndef DEDUPD_COMMON_CHECK_H_
#define DEDUPD_COMMON_CHECK_H_

#include <cstdio>
#include <cstdlib>

// Writes "<file>:<line>: check failed: <condition>: <message>" to stderr
// and aborts when `condition` is false. Allocates nothing, so it works
// when memory is exhausted.
#define DEDUPD_CHECK(condition, message)                                                    \
  do {                                                                                      \
    if (!(condition)) {                                                                     \
      std::fprintf(stderr, "%s:%d: check failed: %s: %s\n", __FILE__, __LINE__, #condition, \
                   message);                                                                \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)

#endif  // DEDUPD_COMMON_CHECK_H_
