#include "storage/redis/redis_url_store.h"

#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/coding.h"
#include "common/status_macros.h"
#include "storage/plan/url_planner.h"
#include "storage/redis/redis_status.h"
#include "storage/url_value.h"

namespace dedupd {
namespace {

using redis::Command;
using redis::Script;
using redis::ScriptCall;
using redis::StatusFromErrorReply;
using redis::Value;

// The Lua both scripts share: exact comparison of stored times and the URL
// value codec of storage/url_value.h (docs/storage_format.md, "URL
// record"), in Lua 5.1 without 64-bit integers. Times and claim id hashes
// travel and are kept as their 8 big-endian bytes and are never converted
// to Lua numbers (doubles), so every int64 is exact.
constexpr absl::string_view kLuaCommon = R"lua(
-- cmp compares two i64 big-endian two's complement strings: -1, 0, 1.
-- Byte by byte, the first one signed (string '<' would use the locale).
local function cmp(a, b)
  for i = 1, 8 do
    local x, y = string.byte(a, i), string.byte(b, i)
    if i == 1 then
      if x >= 128 then x = x - 256 end
      if y >= 128 then y = y - 256 end
    end
    if x ~= y then
      if x < y then return -1 end
      return 1
    end
  end
  return 0
end
-- decode returns the record of a URL value, or nil when the bytes are not
-- one (the caller leaves them alone; the client reports DataLoss).
local function decode(v)
  local version = string.byte(v, 1)
  if version == 1 then
    if #v ~= 9 then return nil end
    local first = string.sub(v, 2, 9)
    return {first = first, last = first, kind = 0}
  end
  if version ~= 2 or #v < 2 then return nil end
  local flags = string.byte(v, 2)
  local has_last = flags % 2 == 1
  local has_claim = math.floor(flags / 2) % 2 == 1
  local has_lease = math.floor(flags / 4) % 2 == 1
  local kind = math.floor(flags / 8)
  if flags == 0 or kind > 2 then return nil end
  local n = 10
  if has_last then n = n + 8 end
  if has_claim then n = n + 8 end
  if has_lease then n = n + 8 end
  if #v ~= n then return nil end
  local r = {first = string.sub(v, 3, 10), kind = kind}
  local p = 11
  r.last = r.first
  if has_last then r.last = string.sub(v, p, p + 7); p = p + 8 end
  if has_claim then r.claim = string.sub(v, p, p + 7); p = p + 8 end
  if has_lease then r.lease = string.sub(v, p, p + 7) end
  return r
end
-- encode writes EncodeUrlRecord's bytes: version 1 when nothing but the
-- first-seen time is set, else version 2 with only the fields present.
local function encode(first, last, kind, claim, lease)
  local flags = kind * 8
  if last ~= first then flags = flags + 1 end
  if claim then flags = flags + 2 end
  if lease then flags = flags + 4 end
  if flags == 0 then return '\1' .. first end
  local v = '\2' .. string.char(flags) .. first
  if last ~= first then v = v .. last end
  if claim then v = v .. claim end
  if lease then v = v .. lease end
  return v
end
)lua";

// The claim: PlanUrlClaim's rules (storage/plan/url_planner.h) over the
// record read, in one script so that no other client can write between
// the read and the write.
//   KEYS[1] the URL record's key
//   ARGV[1] now; ARGV[2] the claim id hash ('' for none); ARGV[3] the
//   retry cutoff: a last claim at or after it with this claim id is a
//   retry; ARGV[4] the lease end ('' for no lease); ARGV[5] the revisit
//   cutoff: a confirmed last claim at or before it is due ('' for never).
// Returns {old} when nothing is written, {old, new} when it writes; old is
// nil (false) for a new key.
constexpr absl::string_view kLuaClaim = R"lua(
local old = redis.call('GET', KEYS[1])
local now, id, retry, lease, revisit = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if id == '' then id = nil end
if lease == '' then lease = nil end
local new
if not old then
  new = encode(now, now, 0, id, lease)
else
  local r = decode(old)
  if not r then return {old} end
  if id and r.claim == id and cmp(r.last, retry) >= 0 then return {old} end
  local ended = r.lease ~= nil and cmp(r.lease, now) <= 0
  local due = r.lease == nil and revisit ~= '' and cmp(r.last, revisit) <= 0
  if not ended and not due then return {old} end
  local kind = 2
  if ended then kind = 1 end
  new = encode(r.first, now, kind, id, lease)
end
redis.call('SET', KEYS[1], new)
return {old or false, new}
)lua";

// The confirmation: PlanUrlComplete's rules.
//   KEYS[1] the URL record's key; ARGV[1] the claim id hash ('' for any).
// Returns as the claim script.
constexpr absl::string_view kLuaComplete = R"lua(
local old = redis.call('GET', KEYS[1])
if not old then return {false} end
local id = ARGV[1]
if id == '' then id = nil end
local r = decode(old)
if not r then return {old} end
if id and r.claim ~= id then return {old} end
if not r.lease then return {old} end
local new = encode(r.first, r.last, r.kind, r.claim, nil)
redis.call('SET', KEYS[1], new)
return {old, new}
)lua";

// The format-1 to format-2 upgrade: the meta is rewritten only if it is
// still the format-1 value read. KEYS[1] the meta key; ARGV[1] the value
// read, ARGV[2] the new one. Returns 1 when it wrote, else 0.
const Script& UpgradeMetaScript() {
  static const Script* const kScript = new Script(R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
)lua");
  return *kScript;
}

const Script& ClaimScript() {
  static const Script* const kScript = new Script(absl::StrCat(kLuaCommon, kLuaClaim));
  return *kScript;
}

const Script& CompleteScript() {
  static const Script* const kScript = new Script(absl::StrCat(kLuaCommon, kLuaComplete));
  return *kScript;
}

std::string Micros64(absl::Time t) {
  std::string out;
  PutFixed64BE(&out, static_cast<uint64_t>(absl::ToUnixMicros(t)));
  return out;
}

std::string ClaimIdArg(uint64_t claim_id_hash) {
  std::string out;
  if (claim_id_hash != 0) PutFixed64BE(&out, claim_id_hash);
  return out;
}

std::string KeyForHumans(absl::string_view key) {
  if (key.size() > 200) return absl::StrCat(absl::CHexEscape(key.substr(0, 200)), "...");
  return absl::CHexEscape(key);
}

// NamingNode returns `s` with its message naming the Redis node it is
// about: the router's failures already do ("redis node 127.0.0.1:7001:
// ..."), as does a slot without an owner ("redis slot 12 has no owner
// ..."); a node's error reply (LOADING, READONLY ...) gets its node, as
// the current slot map names it, in front.
absl::Status NamingNode(const absl::Status& s, absl::string_view node) {
  if (absl::StartsWith(s.message(), "redis node ") ||
      absl::StartsWith(s.message(), "redis slot ")) {
    return s;
  }
  return absl::Status(
      s.code(), absl::StrCat("redis node ", node.empty() ? "(none)" : node, ": ", s.message()));
}

// ScriptOutcome: what a claim or confirmation script read and wrote.
struct ScriptOutcome {
  std::optional<UrlRecord> old;
  std::optional<std::string> written;  // the value written, if any
};

// ParseOutcome reads a script's reply {old} or {old, new}.
absl::StatusOr<ScriptOutcome> ParseOutcome(absl::string_view key, const Value& reply) {
  const std::string what = absl::StrCat("key \"", KeyForHumans(key), "\"");
  if (reply.is_error()) return StatusFromErrorReply(what, reply);
  if (reply.type != Value::Type::kArray || reply.elements.empty() || reply.elements.size() > 2 ||
      (reply.elements[0].type != Value::Type::kNil &&
       reply.elements[0].type != Value::Type::kString) ||
      (reply.elements.size() == 2 && reply.elements[1].type != Value::Type::kString)) {
    std::ostringstream printed;
    printed << reply;
    return absl::InternalError(absl::StrCat(what, ": unexpected script reply ", printed.str()));
  }
  ScriptOutcome out;
  if (reply.elements[0].type == Value::Type::kString) {
    absl::StatusOr<UrlRecord> old = DecodeUrlRecord(reply.elements[0].str);
    if (!old.ok()) {
      return absl::DataLossError(absl::StrCat(what, ": ", old.status().message()));
    }
    out.old = *std::move(old);
  }
  if (reply.elements.size() == 2) out.written = reply.elements[1].str;
  return out;
}

// CheckAgreement returns Internal unless the script wrote exactly what the
// planner decided (`plan_write`).
absl::Status CheckAgreement(absl::string_view key, const std::optional<UrlRecord>& plan_write,
                            const std::optional<std::string>& written) {
  const std::optional<std::string> want =
      plan_write.has_value() ? std::optional<std::string>(EncodeUrlRecord(*plan_write))
                             : std::nullopt;
  if (want == written) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "key \"", KeyForHumans(key), "\": the Lua script wrote ",
      written.has_value() ? absl::StrCat("\"", absl::CHexEscape(*written), "\"") : "nothing",
      " where the URL planner writes ",
      want.has_value() ? absl::StrCat("\"", absl::CHexEscape(*want), "\"") : "nothing"));
}

// Failures collects the items of a batch that failed, for one status.
class Failures {
 public:
  void Add(const absl::Status& s) {
    ++count_;
    if (worst_.ok() || (worst_.code() == absl::StatusCode::kUnavailable &&
                        s.code() != absl::StatusCode::kUnavailable)) {
      worst_ = s;  // a non-transient failure is what the caller must see
    }
    if (messages_.size() < 3) messages_.insert(std::string(s.message()));
  }
  bool empty() const { return count_ == 0; }
  // Status: the worst failure's code; the message counts the failed items
  // ("keys", "nodes") and quotes up to three distinct messages (each names
  // its node).
  absl::Status Status(absl::string_view what, size_t total,
                      absl::string_view items = "keys") const {
    return absl::Status(worst_.code(), absl::StrCat(what, ": ", count_, " of ", total, " ", items,
                                                    " failed: ", absl::StrJoin(messages_, "; ")));
  }

 private:
  size_t count_ = 0;
  absl::Status worst_;
  std::set<std::string> messages_;
};

// DistinctKeys: a batch's keys, each at its first position (one script
// run each); a repeat is answered from what its first position left.
struct DistinctKeys {
  explicit DistinctKeys(absl::Span<const std::string> keys) : call_of(keys.size()) {
    absl::flat_hash_map<absl::string_view, size_t> call_of_key;
    call_of_key.reserve(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      auto [it, inserted] = call_of_key.try_emplace(keys[i], first_pos.size());
      call_of[i] = it->second;
      if (inserted) first_pos.push_back(i);
    }
  }
  std::vector<size_t> call_of;    // position -> script run
  std::vector<size_t> first_pos;  // script run -> position
};

absl::Status CheckInput(absl::string_view name_space, absl::Span<const std::string> keys) {
  if (absl::Status s = CheckNamespace(name_space); !s.ok()) return s;
  return CheckUrlKeys(keys);
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisUrlStore>> RedisUrlStore::Open(RedisUrlStoreOptions options) {
  if (absl::Status s = redis::CheckKeyPrefix(options.key_prefix); !s.ok()) return s;
  if (options.min_replicas_acked < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_replicas_acked: is ", options.min_replicas_acked, "; must be >= 0"));
  }
  if (options.min_replicas_acked > 0 &&
      (options.replica_ack_timeout < absl::Milliseconds(1) ||
       options.replica_ack_timeout >= options.router.command_timeout)) {
    // WAIT 0 blocks for ever; a WAIT longer than the socket timeout would
    // be cut off as a broken connection.
    return absl::InvalidArgumentError(
        absl::StrCat("replica_ack_timeout: is ", absl::FormatDuration(options.replica_ack_timeout),
                     "; must be at least 1ms and below the router's command_timeout (",
                     absl::FormatDuration(options.router.command_timeout), ")"));
  }
  absl::StatusOr<std::unique_ptr<redis::ClusterRouter>> router =
      redis::ClusterRouter::Connect(options.router);
  if (!router.ok()) return router.status();

  // The meta record: SET NX writes it on an empty cluster (exactly one of
  // several front ends opening at once wins); otherwise check it.
  const std::string meta_key = redis::MetaKey(options.key_prefix);
  const std::string what = absl::StrCat("redis meta record \"", meta_key, "\"");
  redis::RedisMeta wanted = options.meta;
  wanted.created = absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
  absl::StatusOr<Value> set = (*router)->ExecuteOne(
      Command::ForKey(meta_key, {"SET", meta_key, redis::EncodeRedisMeta(wanted), "NX"}));
  if (!set.ok()) return set.status();
  if (set->is_error()) return StatusFromErrorReply(what, *set);
  if (set->type != Value::Type::kStatus) {  // nil: it was there
    absl::StatusOr<Value> got = (*router)->ExecuteOne(Command::ForKey(meta_key, {"GET", meta_key}));
    if (!got.ok()) return got.status();
    if (got->is_error()) return StatusFromErrorReply(what, *got);
    if (got->type != Value::Type::kString) {
      return absl::UnavailableError(
          absl::StrCat(what, ": vanished between SET NX and GET (dropped meanwhile?); retry"));
    }
    absl::StatusOr<redis::RedisMeta> stored = redis::DecodeRedisMeta(got->str);
    absl::Status s = stored.ok() ? redis::CheckRedisMeta(*stored, wanted) : stored.status();
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
    if (stored->format_version == redis::kRedisFormatVersionUrlsOnly) {
      // Format 1 held URL records only, which format 2 keeps byte for byte:
      // the upgrade is the meta's rewrite, compare-and-set so that of
      // several front ends upgrading at once one writes and the others
      // find it done (their new meta has the same versions).
      absl::StatusOr<Value> swapped = (*router)->Eval(UpgradeMetaScript(), {meta_key},
                                                      {got->str, redis::EncodeRedisMeta(wanted)});
      if (!swapped.ok()) return swapped.status();
      if (swapped->is_error()) return StatusFromErrorReply(what, *swapped);
      if (swapped->type != Value::Type::kInteger || swapped->integer != 1) {
        absl::StatusOr<Value> again =
            (*router)->ExecuteOne(Command::ForKey(meta_key, {"GET", meta_key}));
        if (!again.ok()) return again.status();
        absl::StatusOr<redis::RedisMeta> now = again->type == Value::Type::kString
                                                   ? redis::DecodeRedisMeta(again->str)
                                                   : absl::UnavailableError("vanished; retry");
        s = now.ok() ? redis::CheckRedisMeta(*now, wanted) : now.status();
        if (s.ok() && now->format_version != redis::kRedisFormatVersion) {
          s = absl::UnavailableError("the format upgrade raced another writer; retry");
        }
        if (!s.ok()) return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
      }
    }
  }
  return std::unique_ptr<RedisUrlStore>(new RedisUrlStore(std::move(options), *std::move(router)));
}

RedisUrlStore::RedisUrlStore(RedisUrlStoreOptions options,
                             std::unique_ptr<redis::ClusterRouter> router)
    : options_(std::move(options)), router_(std::move(router)) {}

absl::Status RedisUrlStore::Claim(const UrlClaimOptions& options,
                                  absl::Span<const std::string> keys, absl::Time now,
                                  std::vector<UrlClaim>* results) {
  results->assign(keys.size(), UrlClaim{});
  if (absl::Status s = CheckInput(options.name_space, keys); !s.ok()) return s;
  const absl::Time now_us = absl::FromUnixMicros(absl::ToUnixMicros(now));
  // The planner's time tests as cutoffs on the stored (whole-microsecond)
  // last claim: a retry when now - last <= retention, i.e. last >= now -
  // floor(retention); due when now - last >= revisit, i.e. last <= now -
  // ceil(revisit). absl::Time saturates, so infinite durations need no case.
  const std::string now_arg = Micros64(now_us);
  const std::string id_arg = ClaimIdArg(options.claim_id_hash);
  const std::string retry_arg =
      Micros64(now_us - absl::Floor(options.claim_id_retention, absl::Microseconds(1)));
  const std::string lease_arg =
      options.lease > absl::ZeroDuration() ? Micros64(now_us + options.lease) : std::string();

  const DistinctKeys distinct(keys);
  std::vector<ScriptCall> calls;
  calls.reserve(distinct.first_pos.size());
  for (size_t i : distinct.first_pos) {
    const absl::Duration revisit = RevisitAfter(options, i);
    std::string revisit_arg;
    if (revisit != absl::InfiniteDuration()) {
      revisit_arg = Micros64(now_us - absl::Ceil(revisit, absl::Microseconds(1)));
    }
    calls.push_back(
        ScriptCall{{redis::UrlRecordKey(options_.key_prefix, options.name_space, keys[i])},
                   {now_arg, id_arg, retry_arg, lease_arg, std::move(revisit_arg)}});
  }
  std::vector<std::optional<UrlRecord>> after;
  std::vector<absl::Status> failed;
  absl::Status s = RunRecordScripts(
      ClaimScript(), "redis claim", calls,
      [&](size_t c, const std::optional<UrlRecord>& old) {
        const size_t i = distinct.first_pos[c];
        UrlPlan plan = PlanUrlClaim(old, options, RevisitAfter(options, i), now);
        (*results)[i] = plan.answer;
        return plan.write;
      },
      &after, &failed);
  if (!s.ok()) return s;
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t c = distinct.call_of[i];
    if (!failed[c].ok()) {
      // Also a repeat of a failed key: its answer would come from the
      // record the first position left, which is unknown.
      (*results)[i] = UrlClaim{};
      (*results)[i].status = failed[c];
    } else if (distinct.first_pos[c] != i) {
      (*results)[i] = SeenAnswer(*after[c]);
    }
  }
  return absl::OkStatus();
}

absl::Status RedisUrlStore::LookupRecords(absl::string_view name_space,
                                          absl::Span<const std::string> keys,
                                          std::vector<std::optional<UrlRecord>>* records) {
  std::vector<absl::Status> statuses;
  DEDUPD_RETURN_IF_ERROR(LookupRecordsPerKey(name_space, keys, records, &statuses));
  Failures failures;
  for (const absl::Status& s : statuses) {
    if (!s.ok()) failures.Add(s);
  }
  if (!failures.empty()) return failures.Status("redis lookup", keys.size());
  return absl::OkStatus();
}

absl::Status RedisUrlStore::LookupRecordsPerKey(absl::string_view name_space,
                                                absl::Span<const std::string> keys,
                                                std::vector<std::optional<UrlRecord>>* records,
                                                std::vector<absl::Status>* statuses) {
  records->assign(keys.size(), std::nullopt);
  statuses->assign(keys.size(), absl::OkStatus());
  if (absl::Status s = CheckInput(name_space, keys); !s.ok()) return s;
  std::vector<Command> gets;
  gets.reserve(keys.size());
  for (const std::string& url : keys) {
    std::string key = redis::UrlRecordKey(options_.key_prefix, name_space, url);
    std::vector<std::string> argv = {"GET", key};
    gets.push_back(Command::ForKey(std::move(key), std::move(argv)));
  }
  std::vector<absl::StatusOr<Value>> replies = router_->Execute(std::move(gets));
  Failures failures;  // not transient: the call fails
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string key = redis::UrlRecordKey(options_.key_prefix, name_space, keys[i]);
    absl::Status failure;
    if (!replies[i].ok()) {
      failure = replies[i].status();
    } else if (replies[i]->type == Value::Type::kNil) {
      continue;
    } else if (replies[i]->type != Value::Type::kString) {
      failure =
          replies[i]->is_error()
              ? StatusFromErrorReply(KeyForHumans(key), *replies[i])
              : absl::InternalError(absl::StrCat(KeyForHumans(key), ": GET answered not a string"));
    } else {
      absl::StatusOr<UrlRecord> r = DecodeUrlRecord(replies[i]->str);
      if (r.ok()) {
        (*records)[i] = *std::move(r);
        continue;
      }
      failure = absl::DataLossError(
          absl::StrCat("key \"", KeyForHumans(key), "\": ", r.status().message()));
    }
    if (absl::IsUnavailable(failure)) {
      (*statuses)[i] = NamingNode(failure, router_->SlotOwner(redis::KeySlot(key)));
    } else {
      failures.Add(failure);
    }
  }
  if (!failures.empty()) return failures.Status("redis lookup", keys.size());
  return absl::OkStatus();
}

absl::Status RedisUrlStore::Complete(absl::string_view name_space, uint64_t claim_id_hash,
                                     absl::Span<const std::string> keys,
                                     std::vector<UrlCompletion>* results) {
  std::vector<absl::Status> statuses;
  DEDUPD_RETURN_IF_ERROR(CompletePerKey(name_space, claim_id_hash, keys, results, &statuses));
  Failures failures;
  for (const absl::Status& s : statuses) {
    if (!s.ok()) failures.Add(s);
  }
  if (!failures.empty()) {
    return failures.Status(
        "redis complete (the other keys are confirmed: confirming them again is harmless)",
        keys.size());
  }
  return absl::OkStatus();
}

absl::Status RedisUrlStore::CompletePerKey(absl::string_view name_space, uint64_t claim_id_hash,
                                           absl::Span<const std::string> keys,
                                           std::vector<UrlCompletion>* results,
                                           std::vector<absl::Status>* statuses) {
  results->assign(keys.size(), UrlCompletion::kNotClaimed);
  statuses->assign(keys.size(), absl::OkStatus());
  if (absl::Status s = CheckInput(name_space, keys); !s.ok()) return s;
  const std::string id_arg = ClaimIdArg(claim_id_hash);
  const DistinctKeys distinct(keys);
  std::vector<ScriptCall> calls;
  calls.reserve(distinct.first_pos.size());
  for (size_t i : distinct.first_pos) {
    calls.push_back(
        ScriptCall{{redis::UrlRecordKey(options_.key_prefix, name_space, keys[i])}, {id_arg}});
  }
  std::vector<std::optional<UrlRecord>> after;
  std::vector<absl::Status> failed;
  absl::Status s = RunRecordScripts(
      CompleteScript(), "redis complete", calls,
      [&](size_t c, const std::optional<UrlRecord>& old) {
        UrlCompletePlan plan = PlanUrlComplete(old, claim_id_hash);
        (*results)[distinct.first_pos[c]] = plan.outcome;
        return plan.write;
      },
      &after, &failed);
  if (!s.ok()) return s;
  // A repeat is confirmed again over what its first position left.
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t c = distinct.call_of[i];
    if (!failed[c].ok()) {
      (*statuses)[i] = failed[c];
      continue;
    }
    if (distinct.first_pos[c] == i) continue;
    UrlCompletePlan plan = PlanUrlComplete(after[c], claim_id_hash);
    (*results)[i] = plan.outcome;
    if (plan.write.has_value()) after[c] = plan.write;
  }
  return absl::OkStatus();
}

absl::Status RedisUrlStore::RunRecordScripts(
    const redis::Script& script, absl::string_view what, const std::vector<ScriptCall>& calls,
    absl::FunctionRef<std::optional<UrlRecord>(size_t, const std::optional<UrlRecord>&)> plan,
    std::vector<std::optional<UrlRecord>>* after, std::vector<absl::Status>* failed) {
  after->assign(calls.size(), std::nullopt);
  failed->assign(calls.size(), absl::OkStatus());
  const std::map<std::string, uint64_t> reconnects = Reconnects();
  std::vector<absl::StatusOr<Value>> replies = router_->EvalBatch(script, calls);
  std::vector<size_t> written;  // calls whose script wrote
  Failures failures;            // not transient: the call fails
  for (size_t c = 0; c < calls.size(); ++c) {
    const std::string& key = calls[c].keys[0];
    absl::StatusOr<ScriptOutcome> outcome =
        replies[c].ok() ? ParseOutcome(key, *replies[c]) : replies[c].status();
    if (!outcome.ok()) {
      if (absl::IsUnavailable(outcome.status())) {
        // This key's node only (down, its connection broke, LOADING ...):
        // the other nodes' keys are answered.
        (*failed)[c] = NamingNode(outcome.status(), router_->SlotOwner(redis::KeySlot(key)));
      } else {
        failures.Add(outcome.status());
      }
      continue;
    }
    std::optional<UrlRecord> write = plan(c, outcome->old);
    if (absl::Status s = CheckAgreement(key, write, outcome->written); !s.ok()) {
      failures.Add(s);
      continue;
    }
    if (outcome->written.has_value()) written.push_back(c);
    (*after)[c] = write.has_value() ? std::move(write) : outcome->old;
  }
  if (!failures.empty()) return failures.Status(what, calls.size());
  std::vector<int> slots;
  slots.reserve(written.size());
  for (size_t c : written) slots.push_back(redis::KeySlot(calls[c].keys[0]));
  std::vector<absl::Status> unacknowledged;
  DEDUPD_RETURN_IF_ERROR(WaitForReplicas(slots, reconnects, &unacknowledged));
  for (size_t w = 0; w < written.size(); ++w) {
    if (unacknowledged[w].ok()) continue;
    // Written, but not durable as asked: not answered. A retry with the
    // same claim id is answered as this claim was.
    (*failed)[written[w]] = unacknowledged[w];
    (*after)[written[w]].reset();
  }
  return absl::OkStatus();
}

std::map<std::string, uint64_t> RedisUrlStore::Reconnects() const {
  std::map<std::string, uint64_t> out;
  if (options_.min_replicas_acked <= 0) return out;
  for (const redis::NodeStats& node : router_->Stats()) out[node.node] = node.reconnects;
  return out;
}

absl::Status RedisUrlStore::WaitForReplicas(const std::vector<int>& slots,
                                            const std::map<std::string, uint64_t>& reconnects) {
  std::vector<absl::Status> unacknowledged;
  DEDUPD_RETURN_IF_ERROR(WaitForReplicas(slots, reconnects, &unacknowledged));
  // The first node that did not vouch for its writes fails the call (the
  // content store answers per call).
  for (const absl::Status& s : unacknowledged) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RedisUrlStore::WaitForReplicas(const std::vector<int>& slots,
                                            const std::map<std::string, uint64_t>& reconnects,
                                            std::vector<absl::Status>* unacknowledged) {
  unacknowledged->assign(slots.size(), absl::OkStatus());
  if (options_.min_replicas_acked <= 0 || slots.empty()) return absl::OkStatus();
  // One WAIT per node written to. WAIT counts the replicas that have this
  // connection's writes so far; the router keeps one connection per node,
  // so it covers this batch's scripts (and whatever preceded them).
  std::vector<std::string> node_of(slots.size());
  std::map<std::string, int> slot_of_node;
  for (size_t k = 0; k < slots.size(); ++k) {
    node_of[k] = router_->SlotOwner(slots[k]);
    slot_of_node.try_emplace(node_of[k], slots[k]);
  }
  std::vector<Command> waits;
  std::vector<std::string> nodes;
  const std::string timeout_ms =
      absl::StrCat(absl::ToInt64Milliseconds(options_.replica_ack_timeout));
  for (const auto& [node, slot] : slot_of_node) {
    nodes.push_back(node);
    waits.push_back(
        Command::ForSlot(slot, {"WAIT", absl::StrCat(options_.min_replicas_acked), timeout_ms}));
  }
  std::vector<absl::StatusOr<Value>> replies = router_->Execute(std::move(waits));
  // Per node: why its writes are not vouched for (OK: they are).
  std::map<std::string, absl::Status> short_nodes;
  Failures failures;  // not transient: the call fails
  for (size_t n = 0; n < replies.size(); ++n) {
    absl::Status failure;
    if (!replies[n].ok()) {
      failure = NamingNode(replies[n].status(), nodes[n]);
    } else if (replies[n]->is_error()) {
      failure = StatusFromErrorReply(absl::StrCat("redis node ", nodes[n], ": WAIT"), *replies[n]);
    } else if (replies[n]->type != Value::Type::kInteger ||
               replies[n]->integer < options_.min_replicas_acked) {
      failure = absl::UnavailableError(absl::StrCat(
          "redis node ", nodes[n], ": ", replies[n]->integer, " replica(s) acknowledged within ",
          timeout_ms, " ms, fewer than min_replicas_acked ", options_.min_replicas_acked,
          " (the write is on the master and may be lost if it fails over; retry with the same "
          "claim id)"));
    }
    if (failure.ok()) continue;
    if (absl::IsUnavailable(failure)) {
      short_nodes[nodes[n]] = failure;
    } else {
      failures.Add(failure);
    }
  }
  if (!failures.empty()) {
    return failures.Status(
        "redis WAIT for replicas (the records are written: a retry with the "
        "same claim id is answered as the first time)",
        replies.size(), "nodes");
  }
  // A WAIT on a connection opened after the scripts ran counts none of
  // their writes (it returns at once): it vouches for nothing.
  std::map<std::string, uint64_t> now_reconnects = Reconnects();
  for (const std::string& node : nodes) {
    // A node first connected during the call had 0 reconnects before it.
    auto before = reconnects.find(node);
    if ((before == reconnects.end() ? 0 : before->second) != now_reconnects[node]) {
      short_nodes.try_emplace(
          node, absl::UnavailableError(absl::StrCat(
                    "redis node ", node,
                    ": the connection was reopened during the call, so WAIT cannot vouch for "
                    "its writes (retry with the same claim id)")));
    }
  }
  for (size_t k = 0; k < slots.size(); ++k) {
    auto it = short_nodes.find(node_of[k]);
    if (it != short_nodes.end()) (*unacknowledged)[k] = it->second;
  }
  return absl::OkStatus();
}

}  // namespace dedupd
