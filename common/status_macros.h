// status_macros.h: early-return helpers for absl::Status, which Abseil
// 20220623 (Debian 12) does not ship yet.
//
// Example:
//   absl::StatusOr<int> Parse(absl::string_view s);
//   absl::Status Use(absl::string_view s) {
//     DEDUPD_ASSIGN_OR_RETURN(int n, Parse(s));
//     DEDUPD_RETURN_IF_ERROR(Check(n));
//     return absl::OkStatus();
//   }
#ifndef DEDUPD_COMMON_STATUS_MACROS_H_
#define DEDUPD_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// Evaluates `expr` (an absl::Status); returns it from the enclosing function
// when it is not OK.
#define DEDUPD_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::absl::Status dedupd_status_ = (expr);          \
    if (!dedupd_status_.ok()) return dedupd_status_; \
  } while (0)

#define DEDUPD_STATUS_CONCAT_INNER_(a, b) a##b
#define DEDUPD_STATUS_CONCAT_(a, b) DEDUPD_STATUS_CONCAT_INNER_(a, b)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status,
// otherwise moves the value into `lhs` (a declaration or an lvalue).
#define DEDUPD_ASSIGN_OR_RETURN(lhs, rexpr) \
  DEDUPD_ASSIGN_OR_RETURN_IMPL_(DEDUPD_STATUS_CONCAT_(dedupd_statusor_, __LINE__), lhs, rexpr)

#define DEDUPD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                  \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // DEDUPD_COMMON_STATUS_MACROS_H_
