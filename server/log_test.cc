#include "server/log.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace dedupd {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

TEST(LogRateLimiterTest, AllowsUpToTheLimitPerSecondThenReportsTheSuppressed) {
  LogRateLimiter limiter(3);
  uint64_t suppressed = 99;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(limiter.Allow("m", kT0 + absl::Milliseconds(10 * i), &suppressed)) << i;
    EXPECT_EQ(suppressed, 0u);
  }
  // The rest of the second: refused, counted, *suppressed left alone.
  suppressed = 99;
  for (int i = 0; i < 7; ++i) {
    EXPECT_FALSE(limiter.Allow("m", kT0 + absl::Milliseconds(100 + i), &suppressed));
  }
  EXPECT_EQ(suppressed, 99u);
  EXPECT_FALSE(limiter.Allow("m", kT0 + absl::Milliseconds(999), &suppressed));
  // The next second's first line says how many were dropped, once.
  ASSERT_TRUE(limiter.Allow("m", kT0 + absl::Milliseconds(1000), &suppressed));
  EXPECT_EQ(suppressed, 8u);
  ASSERT_TRUE(limiter.Allow("m", kT0 + absl::Milliseconds(1001), &suppressed));
  EXPECT_EQ(suppressed, 0u);
}

TEST(LogRateLimiterTest, KeysAreLimitedApart) {
  LogRateLimiter limiter(1);
  uint64_t suppressed = 0;
  EXPECT_TRUE(limiter.Allow("a", kT0, &suppressed));
  EXPECT_FALSE(limiter.Allow("a", kT0, &suppressed));
  EXPECT_TRUE(limiter.Allow("b", kT0, &suppressed));
  EXPECT_FALSE(limiter.Allow("b", kT0, &suppressed));
}

TEST(LogRateLimiterTest, AFloodStaysBounded) {
  // 100,000 attempts over 10 seconds: at most 5 lines per second get out.
  LogRateLimiter limiter(5);
  uint64_t suppressed = 0, reported = 0;
  int allowed = 0;
  for (int i = 0; i < 100'000; ++i) {
    if (limiter.Allow("m", kT0 + absl::Microseconds(100 * i), &suppressed)) {
      ++allowed;
      reported += suppressed;
    }
  }
  EXPECT_LE(allowed, 50);
  EXPECT_GE(allowed, 45);
  // Every refused attempt is reported by a later line, except those of
  // the last window.
  EXPECT_GE(reported + 10'000, static_cast<uint64_t>(100'000 - allowed));
  EXPECT_LE(reported, static_cast<uint64_t>(100'000 - allowed));
}

TEST(LogRateLimiterTest, AClockGoingBackwardsStartsANewWindow) {
  LogRateLimiter limiter(1);
  uint64_t suppressed = 0;
  EXPECT_TRUE(limiter.Allow("m", kT0, &suppressed));
  EXPECT_FALSE(limiter.Allow("m", kT0, &suppressed));
  EXPECT_TRUE(limiter.Allow("m", kT0 - absl::Seconds(5), &suppressed));
  EXPECT_EQ(suppressed, 1u);
}

TEST(ParseLogLevelTest, Table) {
  const struct {
    const char* text;
    bool ok;
    LogLevel level;
  } kCases[] = {
      {"info", true, LogLevel::kInfo},       {"INFO", true, LogLevel::kInfo},
      {"warning", true, LogLevel::kWarning}, {"Error", true, LogLevel::kError},
      {"warn", false, LogLevel::kInfo},      {"", false, LogLevel::kInfo},
      {"debug", false, LogLevel::kInfo},
  };
  for (const auto& c : kCases) {
    LogLevel level = LogLevel::kInfo;
    EXPECT_EQ(ParseLogLevel(c.text, &level), c.ok) << c.text;
    if (c.ok) {
      EXPECT_EQ(level, c.level) << c.text;
    }
  }
}

}  // namespace
}  // namespace dedupd
