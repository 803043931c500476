// InfoField over INFO reply texts, without a cluster.
#include "storage/redis/redis_replies.h"

#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace dedupd::redis {
namespace {

TEST(InfoFieldTest, Table) {
  const std::string info =
      "# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\n"
      "used_memory_rss:abc\r\nmaxmemory:0\r\nnegative:-1\r\nempty:\r\nlast:7";
  struct Case {
    std::string field;
    std::optional<uint64_t> want;
  };
  const std::vector<Case> cases = {
      {"used_memory", 1048576},
      {"maxmemory", 0},
      {"last", 7},  // no CRLF after the last line
      {"used_memory_human", std::nullopt},
      {"used_memory_rss", std::nullopt},
      {"negative", std::nullopt},
      {"empty", std::nullopt},
      {"used", std::nullopt},  // a prefix of a field is not the field
      {"absent", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(InfoField(info, c.field), c.want) << c.field;
  EXPECT_EQ(InfoField("", "used_memory"), std::nullopt);
}

}  // namespace
}  // namespace dedupd::redis
