// status_matchers.h: GoogleTest matchers for absl::Status and
// absl::StatusOr, which Abseil 20220623 does not ship.
//
// Example:
//   EXPECT_THAT(store.Open(), IsOk());
//   EXPECT_THAT(Parse("x"), StatusIs(absl::StatusCode::kInvalidArgument,
//                                    HasSubstr("expected")));
#ifndef DEDUPD_TESTS_TESTING_STATUS_MATCHERS_H_
#define DEDUPD_TESTS_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace dedupd::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = ::dedupd::testing::GetStatus(arg);
  if (!s.ok()) *result_listener << "status is " << s.ToString();
  return s.ok();
}

MATCHER_P(StatusIs, code, "has status code " + ::testing::PrintToString(code)) {
  const absl::Status& s = ::dedupd::testing::GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code;
}

MATCHER_P2(StatusIs, code, message_matcher, "has status code " + ::testing::PrintToString(code)) {
  const absl::Status& s = ::dedupd::testing::GetStatus(arg);
  *result_listener << "status is " << s.ToString();
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()), result_listener);
}

}  // namespace dedupd::testing

// Asserts that `rexpr` (an absl::StatusOr<T>) is OK and moves its value
// into `lhs`.
#define ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  ASSERT_OK_AND_ASSIGN_IMPL_(DEDUPD_TEST_CONCAT_(statusor_, __LINE__), lhs, rexpr)
#define DEDUPD_TEST_CONCAT_INNER_(a, b) a##b
#define DEDUPD_TEST_CONCAT_(a, b) DEDUPD_TEST_CONCAT_INNER_(a, b)
#define ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr)      \
  auto statusor = (rexpr);                                    \
  ASSERT_TRUE(statusor.ok()) << statusor.status().ToString(); \
  lhs = std::move(statusor).value()

#endif  // DEDUPD_TESTS_TESTING_STATUS_MATCHERS_H_
