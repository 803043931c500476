#include "storage/redis/redis_index_mark.h"

#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "common/coding.h"

namespace dedupd::redis {
namespace {

// Lua strings are 1-based: the flags are byte 2, the id bytes 3..6.
constexpr absl::string_view kLuaMark = R"lua(
local v = redis.call('GET', KEYS[1])
if not v or #v < 6 or string.byte(v, 1) ~= 1 or string.sub(v, 3, 6) ~= ARGV[1] then
  return 0
end
local flags = string.byte(v, 2)
if math.floor(flags / 4) % 2 == 0 then return 0 end
redis.call('SET', KEYS[1], string.sub(v, 1, 1) .. string.char(flags - 4) .. string.sub(v, 3))
return 1
)lua";

}  // namespace

const Script& IndexMarkScript() {
  static const Script* const kScript = new Script(std::string(kLuaMark));
  return *kScript;
}

ScriptCall IndexMarkCall(std::string record_key, uint32_t id) {
  std::string id_be32;
  PutFixed32BE(&id_be32, id);
  return ScriptCall{{std::move(record_key)}, {std::move(id_be32)}};
}

}  // namespace dedupd::redis
