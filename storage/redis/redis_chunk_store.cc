#include "storage/redis/redis_chunk_store.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/random/random.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/coding.h"
#include "common/status_macros.h"
#include "core/index/lsh_index.h"
#include "core/text/simhash.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_chunk_format.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_index_mark.h"
#include "storage/redis/redis_near_read.h"
#include "storage/redis/redis_replies.h"

namespace dedupd {
namespace {

using redis::ChunkJournal;
using redis::Command;
using redis::Failures;
using redis::Malformed;
using redis::Micros64;
using redis::RedisChunkTextValue;
using redis::ReplyOr;
using redis::Script;
using redis::ScriptCall;
using redis::Value;

// How many holders the read script lists with a text: the owner and the
// few after it that OldestOther and the owner search read.
constexpr size_t kHoldersRead = 16;

// The read: one text's state in one step (a consistent view per text).
//   KEYS[1] the text record, KEYS[2] the holder set; ARGV[1] how many
//   holders to list
// Returns {value or false, holder count, the first ARGV[1] holders}.
constexpr absl::string_view kLuaRead = R"lua(
local v = redis.call('GET', KEYS[1])
local n = redis.call('ZCARD', KEYS[2])
local list = {}
if n > 0 then list = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1) end
return {v or false, n, list}
)lua";

// The text script: replaces one document's holders of one text,
// idempotently (a replayed journal runs it again with the same arguments).
//   KEYS[1] the text record, KEYS[2] the holder set, KEYS[3] holder times
//   ARGV[1] the record to create when the text has holders but no record
//   (index pending; '' when the call adds none); ARGV[2] the document URL;
//   ARGV[3] r, the number of chunk ids whose holders go; ARGV[4..3+r] those
//   ids; then per holder to add: chunk id, time added (i64 BE), '1' when
//   the time is carried from the document's stored chunk of the same text
//   else '0'.
// A holder's member is time + URL + NUL + chunk id (byte order is age
// order). An added holder whose chunk already holds the text (a replay)
// keeps its time; one not carried is made younger than the text's oldest
// holder of another document (the planner's rule, ExactCandidate: the
// chunk answered kNew stays the owner whatever the clocks say).
// Returns {record before or false, holder count before, oldest holder of
// another document before or false, {time kept per added holder}, 1 when
// it created the record, 1 when it deleted the text (no holder left),
// record after or false}.
constexpr absl::string_view kLuaText = R"lua(
local url = ARGV[2]
local function oldest_other()
  local start = 0
  while true do
    local ms = redis.call('ZRANGE', KEYS[2], start, start + 31)
    if #ms == 0 then return false end
    for _, m in ipairs(ms) do
      local z = string.find(m, '\0', 9, true)
      if z and string.sub(m, 9, z - 1) ~= url then return m end
    end
    start = start + 32
  end
end
local function plus_one(t)
  local b = {string.byte(t, 1, 8)}
  for i = 8, 1, -1 do
    if b[i] < 255 then b[i] = b[i] + 1; break end
    b[i] = 0
  end
  return string.char(unpack(b))
end
local old = redis.call('GET', KEYS[1])
local card = redis.call('ZCARD', KEYS[2])
local other = oldest_other()
local r = tonumber(ARGV[3])
for i = 4, 3 + r do
  local f = url .. '\0' .. ARGV[i]
  local a = redis.call('HGET', KEYS[3], f)
  if a then
    redis.call('ZREM', KEYS[2], a .. f)
    redis.call('HDEL', KEYS[3], f)
  end
end
local times = {}
local i = 4 + r
while i + 2 <= #ARGV do
  local f = url .. '\0' .. ARGV[i]
  local a = redis.call('HGET', KEYS[3], f)
  if not a then
    a = ARGV[i + 1]
    if ARGV[i + 2] == '0' then
      local o = oldest_other()
      if o and a <= string.sub(o, 1, 8) then a = plus_one(string.sub(o, 1, 8)) end
    end
    redis.call('ZADD', KEYS[2], 0, a .. f)
    redis.call('HSET', KEYS[3], f, a)
  end
  times[#times + 1] = a
  i = i + 3
end
local after = redis.call('ZCARD', KEYS[2])
local v = old
local created, deleted = 0, 0
if after == 0 then
  if old then deleted = 1 end
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
  v = false
elseif not old then
  if ARGV[1] == '' then return redis.error_reply('ERR chunk text has holders but no record') end
  v = ARGV[1]
  redis.call('SET', KEYS[1], v)
  created = 1
end
return {old or false, card, other, times, created, deleted, v or false}
)lua";

// The lease: one claim of a document at a time, across front ends.
//   KEYS[1] the lease, KEYS[2] the manifest, KEYS[3] the journal
//   ARGV[1] this claim's token, ARGV[2] the lease in ms
// Returns {0} when another claim holds it, else {1, manifest or false,
// journal or false}.
constexpr absl::string_view kLuaLease = R"lua(
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {0} end
return {1, redis.call('GET', KEYS[2]) or false, redis.call('GET', KEYS[3]) or false}
)lua";

// The journal, under the lease: KEYS[1] the lease, KEYS[2] the journal;
// ARGV[1] the token, ARGV[2] the journal. Returns 1, or 0 when the lease
// is not this claim's any more.
constexpr absl::string_view kLuaJournal = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1
)lua";

// The commit: KEYS[1] the lease, KEYS[2] the manifest, KEYS[3] the
// journal; ARGV[1] the token, ARGV[2] the manifest ('' deletes it),
// ARGV[3] '1' to release the lease too. Returns 1, or 0 (nothing written)
// when the lease is not this claim's any more.
constexpr absl::string_view kLuaCommit = R"lua(
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[2]) else redis.call('SET', KEYS[2], ARGV[2]) end
redis.call('DEL', KEYS[3])
if ARGV[3] == '1' then redis.call('DEL', KEYS[1]) end
return 1
)lua";

// The release of a lease without a commit (a claim that changes nothing).
constexpr absl::string_view kLuaRelease = R"lua(
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
)lua";

const Script& ScriptOf(absl::string_view source) {
  // One Script (and SHA-1) per source, built once.
  static absl::Mutex mu;
  static auto* const scripts = new std::map<std::string, std::unique_ptr<Script>, std::less<>>;
  absl::MutexLock lock(&mu);
  auto it = scripts->find(source);
  if (it == scripts->end()) {
    it = scripts->emplace(std::string(source), std::make_unique<Script>(std::string(source))).first;
  }
  return *it->second;
}

std::string ShaKey(const Sha256Digest& sha) {
  return std::string(reinterpret_cast<const char*>(sha.data()), sha.size());
}

// Int returns an integer reply's value (0 for anything else).
long long Int(const Value& v) { return v.type == Value::Type::kInteger ? v.integer : 0; }

}  // namespace

// The planner's view of the cluster: each text read once by the read
// script (so holder count, owner and first holders agree), buckets and
// candidates read in pipelined rounds; reads inside QueryNear and
// QueryJaccardCandidates (which cannot return a status) keep their first
// error for after planning.
class RedisChunkStore::Reader final : public ChunkStateReader {
 public:
  Reader(RedisChunkStore* store, absl::string_view name_space)
      : s_(store), name_space_(name_space) {}

  struct Text {
    std::optional<RedisChunkTextValue> value;
    uint64_t holders = 0;
    std::vector<ChunkHolder> first;  // the first kHoldersRead, oldest first
  };

  absl::Status deferred() const { return deferred_; }

  const Text* FindText(const Sha256Digest& sha) const {
    auto it = texts_.find(ShaKey(sha));
    return it == texts_.end() ? nullptr : &it->second;
  }

  // ReadTexts runs the read script for each text not read yet, in one round.
  absl::Status ReadTexts(const std::vector<Sha256Digest>& shas) {
    std::vector<Sha256Digest> todo;
    for (const Sha256Digest& sha : shas) {
      if (!texts_.contains(ShaKey(sha))) todo.push_back(sha);
    }
    std::sort(todo.begin(), todo.end());
    todo.erase(std::unique(todo.begin(), todo.end()), todo.end());
    if (todo.empty()) return absl::OkStatus();
    std::vector<ScriptCall> calls;
    for (const Sha256Digest& sha : todo) {
      calls.push_back({{redis::ChunkTextKey(s_->prefix_, name_space_, sha),
                        redis::ChunkHoldersKey(s_->prefix_, name_space_, sha)},
                       {absl::StrCat(kHoldersRead)}});
    }
    std::vector<absl::StatusOr<Value>> replies = s_->router().EvalBatch(ScriptOf(kLuaRead), calls);
    Failures failures;
    for (size_t i = 0; i < todo.size(); ++i) {
      const std::string& key = calls[i].keys[0];
      absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), key);
      if (!v.ok()) {
        failures.Add(v.status());
        continue;
      }
      absl::Status s = TakeText(key, todo[i], *v);
      if (!s.ok()) failures.Add(s);
    }
    if (!failures.empty()) return failures.Status("redis chunk text read", todo.size());
    return absl::OkStatus();
  }

  // Prefetch reads, in a few pipelined rounds, what planning `doc` will
  // ask for: its texts and its stored chunks' texts, then the near
  // queries' buckets of the chunks the planner searches near (those whose
  // text no other document holds), their ids and texts. A query it did not
  // foresee is read when asked.
  absl::Status Prefetch(const ChunkDocument& doc, const std::optional<ChunkManifest>& stored) {
    DEDUPD_RETURN_IF_ERROR(ReadTexts(ChunkLockShas(doc, stored)));
    absl::flat_hash_map<std::string, uint64_t> own;
    if (stored.has_value()) {
      for (const StoredChunk& c : stored->chunks) ++own[ShaKey(c.sha256)];
    }
    std::vector<uint64_t> simhashes;
    std::vector<MinHashSignature> sigs;
    for (const ChunkInput& c : doc.chunks) {
      if (c.max_distance < 0) continue;
      const std::string key = ShaKey(c.sha256);
      const Text& t = texts_[key];
      if (t.value.has_value() && t.holders > own[key]) continue;  // an exact duplicate
      simhashes.push_back(c.simhash);
      if (c.min_jaccard > 0 && c.minhash.has_value()) sigs.push_back(*c.minhash);
    }
    return FetchNear(simhashes, sigs);
  }

  absl::StatusOr<std::optional<ChunkManifest>> GetManifest(absl::string_view) override {
    return absl::InternalError("the Redis chunk store passes the manifest it read");
  }

  absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha) override {
    DEDUPD_RETURN_IF_ERROR(ReadTexts({sha}));
    const Text& t = texts_[ShaKey(sha)];
    if (!t.value.has_value()) return std::nullopt;
    ChunkTextRecord r;
    r.text_id = t.value->text_id;
    r.simhash = t.value->simhash;
    r.holders = t.holders;
    r.owner = t.first.front();
    r.minhash = t.value->minhash;
    r.shingles = t.value->shingles;
    return r;
  }

  absl::StatusOr<std::vector<ChunkHolder>> ListHolders(const Sha256Digest& sha,
                                                       size_t limit) override {
    DEDUPD_RETURN_IF_ERROR(ReadTexts({sha}));
    const Text& t = texts_[ShaKey(sha)];
    // The owner is first in the set but not a "holder record".
    std::vector<ChunkHolder> out;
    if (t.holders <= 1 || limit == 0) return out;
    if (limit + 1 <= t.first.size() || t.first.size() == t.holders) {
      for (size_t i = 1; i < t.first.size() && out.size() < limit; ++i) out.push_back(t.first[i]);
      return out;
    }
    // Beyond what the read listed: may see holders changed since, which
    // the planner tolerates as it does any read after the text's.
    const std::string key = redis::ChunkHoldersKey(s_->prefix_, name_space_, sha);
    DEDUPD_ASSIGN_OR_RETURN(Value v, ReplyOr(s_->router().ExecuteOne(Command::ForKey(
                                                 key, {"ZRANGE", key, "1", absl::StrCat(limit)})),
                                             key));
    for (const Value& m : v.elements) {
      absl::StatusOr<ChunkHolder> h = redis::DecodeChunkHolderMember(m.str);
      if (!h.ok()) return Malformed(key, h.status().message());
      out.push_back(*std::move(h));
    }
    return out;
  }

  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    if (!buckets_.contains(simhash)) Defer(FetchNear({simhash}, {}));
    return redis::NearMatches(buckets_[simhash], simhash, max_distance, limit, total,
                              [this](uint32_t id) { return Visible(id); });
  }

  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_estimate) override {
    std::vector<uint32_t> out;
    if (!bands_.contains(redis::SigBytes(sig))) Defer(FetchNear({}, {sig}));
    for (uint32_t id : bands_[redis::SigBytes(sig)]) {
      if (!Visible(id)) continue;
      const Text& t = texts_[ids_[id].value()];
      if (!t.value->minhash.has_value()) continue;
      if (EstimateJaccard(sig, *t.value->minhash) < min_estimate) continue;
      out.push_back(id);
    }
    return out;
  }

  absl::StatusOr<FingerprintRecord> GetTextFingerprint(uint32_t text_id) override {
    if (!Visible(text_id)) {
      return absl::DataLossError(absl::StrCat("chunk text id ", text_id, " has no text record"));
    }
    const std::string& sha = ids_[text_id].value();
    const Text& t = texts_[sha];
    FingerprintRecord fp;
    fp.simhash = t.value->simhash;
    std::copy(sha.begin(), sha.end(), fp.sha256.begin());
    fp.minhash = t.value->minhash;
    fp.shingles = t.value->shingles;
    return fp;
  }

  absl::StatusOr<uint32_t> AllocateTextId() override {
    const std::string key = redis::ChunkTextIdCounterKey(s_->prefix_, name_space_);
    DEDUPD_ASSIGN_OR_RETURN(
        Value v, ReplyOr(s_->router().ExecuteOne(Command::ForKey(key, {"INCR", key})), key));
    if (v.type != Value::Type::kInteger || v.integer < 1) {
      return Malformed(key, "INCR did not answer a counter");
    }
    if (static_cast<unsigned long long>(v.integer) > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("namespace \"", name_space_, "\" holds 2^32 chunk texts, its limit"));
    }
    return static_cast<uint32_t>(v.integer);
  }

 private:
  void Defer(absl::Status s) {
    if (deferred_.ok() && !s.ok()) deferred_ = s;
  }

  absl::Status TakeText(const std::string& key, const Sha256Digest& sha, const Value& v) {
    if (v.type != Value::Type::kArray || v.elements.size() != 3) {
      return Malformed(key, "the read script answered an unexpected reply");
    }
    Text t;
    t.holders = static_cast<uint64_t>(Int(v.elements[1]));
    for (const Value& m : v.elements[2].elements) {
      absl::StatusOr<ChunkHolder> h = redis::DecodeChunkHolderMember(m.str);
      if (!h.ok()) return Malformed(key, h.status().message());
      t.first.push_back(*std::move(h));
    }
    if (v.elements[0].type != Value::Type::kNil) {
      absl::StatusOr<RedisChunkTextValue> value =
          redis::DecodeRedisChunkTextValue(v.elements[0].str);
      if (!value.ok()) return Malformed(key, value.status().message());
      t.value = *std::move(value);
    }
    if (t.value.has_value() != (t.holders > 0)) {
      return Malformed(key, "a chunk text record and its holder set disagree");
    }
    texts_[ShaKey(sha)] = std::move(t);
    return absl::OkStatus();
  }

  // Visible: an index entry the planner may be given: its id maps to a
  // text whose record was read with that id. (An entry whose text was
  // deleted, or recorded after this call read it, is left out.)
  bool Visible(uint32_t id) {
    auto it = ids_.find(id);
    if (it == ids_.end() || !it->second.has_value()) return false;
    auto t = texts_.find(*it->second);
    return t != texts_.end() && t->second.value.has_value() && t->second.value->text_id == id;
  }

  // FetchNear reads the chunk SimHash buckets of `simhashes` and LSH
  // buckets of `sigs` (one round), the text ids' SHA-256s (one round) and
  // their texts (one round).
  absl::Status FetchNear(const std::vector<uint64_t>& simhashes,
                         const std::vector<MinHashSignature>& sigs) {
    const int blocks = s_->max_near_distance_ + 1;
    std::vector<Command> commands;
    std::vector<std::function<absl::Status(const Value&)>> takes;
    for (uint64_t simhash : simhashes) {
      if (buckets_.contains(simhash)) continue;  // read already (or twice in the call)
      buckets_[simhash];
      for (int b = 0; b < blocks; ++b) {
        std::string key =
            redis::ChunkSimHashBucketKey(s_->prefix_, name_space_, blocks, b, simhash);
        commands.push_back(Command::ForKey(key, {"SMEMBERS", key}));
        takes.push_back([this, simhash, key](const Value& v) {
          return redis::TakeSimHashBucket(key, v, &buckets_[simhash]);
        });
      }
    }
    for (const MinHashSignature& sig : sigs) {
      const std::string sk = redis::SigBytes(sig);
      if (bands_.contains(sk)) continue;
      bands_[sk];
      for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
        std::string key = redis::ChunkLshBucketKey(s_->prefix_, name_space_, band, sig);
        commands.push_back(Command::ForKey(key, {"SMEMBERS", key}));
        takes.push_back([this, sk, key](const Value& v) {
          return redis::TakeLshBucket(key, v, "text id", &bands_[sk]);
        });
      }
    }
    DEDUPD_RETURN_IF_ERROR(Run(std::move(commands), std::move(takes)));
    const std::vector<uint32_t> ids =
        redis::NearCandidateIds(simhashes, sigs, s_->max_near_distance_, &buckets_, &bands_);
    commands.clear();
    takes.clear();
    for (uint32_t id : ids) {
      if (ids_.contains(id)) continue;
      std::string key = redis::ChunkTextIdKey(s_->prefix_, name_space_, id);
      commands.push_back(Command::ForKey(key, {"GET", key}));
      takes.push_back([this, id, key](const Value& v) -> absl::Status {
        if (v.type == Value::Type::kNil) {
          ids_[id] = std::nullopt;
          return absl::OkStatus();
        }
        if (v.str.size() != 32) return Malformed(key, "not a 32-byte SHA-256");
        ids_[id] = v.str;
        return absl::OkStatus();
      });
    }
    DEDUPD_RETURN_IF_ERROR(Run(std::move(commands), std::move(takes)));
    std::vector<Sha256Digest> shas;
    for (uint32_t id : ids) {
      const std::optional<std::string>& sha = ids_[id];
      if (!sha.has_value()) continue;
      Sha256Digest d{};
      std::copy(sha->begin(), sha->end(), d.begin());
      shas.push_back(d);
    }
    return ReadTexts(shas);
  }

  absl::Status Run(std::vector<Command> commands,
                   std::vector<std::function<absl::Status(const Value&)>> takes) {
    if (commands.empty()) return absl::OkStatus();
    std::vector<std::string> keys;
    for (const Command& c : commands) keys.push_back(c.key);
    std::vector<absl::StatusOr<Value>> replies = s_->router().Execute(std::move(commands));
    Failures failures;
    for (size_t i = 0; i < replies.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), keys[i]);
      absl::Status s = v.ok() ? takes[i](*v) : v.status();
      if (!s.ok()) failures.Add(s);
    }
    if (!failures.empty()) return failures.Status("redis chunk read", replies.size());
    return absl::OkStatus();
  }

  RedisChunkStore* const s_;
  const std::string name_space_;
  absl::flat_hash_map<std::string, Text> texts_;  // by ShaKey
  absl::flat_hash_map<uint64_t, std::vector<redis::BucketEntry>> buckets_;
  absl::flat_hash_map<std::string, std::vector<uint32_t>> bands_;  // by SigBytes
  absl::flat_hash_map<uint32_t, std::optional<std::string>> ids_;  // id -> ShaKey
  absl::Status deferred_;
};

// What one text script saw and did.
struct RedisChunkStore::Applied {
  Sha256Digest sha{};
  std::optional<RedisChunkTextValue> before;
  uint64_t holders_before = 0;
  std::optional<ChunkHolder> other_before;               // oldest holder of another document
  std::vector<std::pair<std::string, absl::Time>> kept;  // chunk id -> time added
  bool created = false;
  bool deleted = false;
  std::optional<RedisChunkTextValue> after;
};

std::unique_ptr<RedisChunkStore> RedisChunkStore::Open(RedisUrlStore* urls,
                                                       RedisChunkStoreOptions options) {
  return std::unique_ptr<RedisChunkStore>(new RedisChunkStore(urls, options));
}

RedisChunkStore::RedisChunkStore(RedisUrlStore* urls, RedisChunkStoreOptions options)
    : urls_(urls),
      prefix_(urls->key_prefix()),
      max_near_distance_(urls->meta().simhash_max_distance),
      options_(options) {}

redis::ClusterRouter& RedisChunkStore::router() { return urls_->router(); }

absl::Status RedisChunkStore::CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                          ChunkAnswer* answer) {
  DEDUPD_RETURN_IF_ERROR(CheckChunkDocument(doc, max_near_distance()));
  const absl::Time t = absl::FromUnixMicros(absl::ToUnixMicros(now));
  if (claim) return Claim(doc, t, answer);
  // A peek: the manifest, and whether a claim of the document is under way
  // (its texts may hold holders its manifest does not list yet).
  const std::string mkey = redis::ChunkManifestKey(prefix_, doc.name_space, doc.document_url);
  const std::string jkey = redis::ChunkJournalKey(prefix_, doc.name_space, doc.document_url);
  std::vector<absl::StatusOr<Value>> replies = router().Execute(
      {Command::ForKey(mkey, {"GET", mkey}), Command::ForKey(jkey, {"EXISTS", jkey})});
  DEDUPD_ASSIGN_OR_RETURN(Value m, ReplyOr(std::move(replies[0]), mkey));
  DEDUPD_ASSIGN_OR_RETURN(Value j, ReplyOr(std::move(replies[1]), jkey));
  if (Int(j) > 0) {
    return absl::UnavailableError(absl::StrCat("a claim of document ", doc.document_url,
                                               " is under way (or stopped mid-way); retry"));
  }
  std::optional<ChunkManifest> stored;
  if (m.type != Value::Type::kNil) {
    absl::StatusOr<ChunkManifest> decoded = redis::DecodeRedisChunkManifest(m.str);
    if (!decoded.ok()) return Malformed(mkey, decoded.status().message());
    stored = *std::move(decoded);
  }
  Reader reader(this, doc.name_space);
  DEDUPD_RETURN_IF_ERROR(reader.Prefetch(doc, stored));
  ChunkPlan plan;
  DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, /*claim=*/false, t, stored, &reader, &plan));
  DEDUPD_RETURN_IF_ERROR(reader.deferred());
  *answer = std::move(plan.answer);
  return absl::OkStatus();
}

namespace {

// TextArgs: the text script's ARGV for one text (see kLuaText).
std::vector<std::string> TextArgs(const std::string& create, const std::string& document_url,
                                  const std::vector<std::string>& removed,
                                  const std::vector<std::pair<StoredChunk, bool>>& added) {
  std::vector<std::string> args = {create, document_url, absl::StrCat(removed.size())};
  args.insert(args.end(), removed.begin(), removed.end());
  for (const auto& [c, carried] : added) {
    args.push_back(c.chunk_id);
    args.push_back(Micros64(c.added));
    args.push_back(carried ? "1" : "0");
  }
  return args;
}

}  // namespace

absl::Status RedisChunkStore::Apply(const std::string& ns, const ChunkJournal& journal,
                                    std::vector<Applied>* applied,
                                    std::optional<ChunkManifest>* manifest,
                                    std::vector<int>* written_slots) {
  applied->clear();
  std::vector<ScriptCall> calls;
  for (const auto& [sha, args] : journal.texts) {
    calls.push_back(
        {{redis::ChunkTextKey(prefix_, ns, sha), redis::ChunkHoldersKey(prefix_, ns, sha),
          redis::ChunkHolderTimesKey(prefix_, ns, sha)},
         args});
    written_slots->push_back(redis::KeySlot(calls.back().keys[0]));
  }
  std::vector<absl::StatusOr<Value>> replies = router().EvalBatch(ScriptOf(kLuaText), calls);
  Failures failures;
  for (size_t i = 0; i < calls.size(); ++i) {
    const std::string& key = calls[i].keys[0];
    absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), key);
    if (!v.ok()) {
      failures.Add(v.status());
      continue;
    }
    if (v->type != Value::Type::kArray || v->elements.size() != 7) {
      failures.Add(Malformed(key, "the text script answered an unexpected reply"));
      continue;
    }
    const std::vector<Value>& e = v->elements;
    Applied a;
    a.sha = journal.texts[i].first;
    absl::Status s;
    auto decode = [&](const Value& x, std::optional<RedisChunkTextValue>* out) {
      if (x.type == Value::Type::kNil) return;
      absl::StatusOr<RedisChunkTextValue> d = redis::DecodeRedisChunkTextValue(x.str);
      if (!d.ok()) {
        s = Malformed(key, d.status().message());
        return;
      }
      *out = *std::move(d);
    };
    decode(e[0], &a.before);
    decode(e[6], &a.after);
    a.holders_before = static_cast<uint64_t>(Int(e[1]));
    if (e[2].type != Value::Type::kNil) {
      absl::StatusOr<ChunkHolder> h = redis::DecodeChunkHolderMember(e[2].str);
      if (h.ok()) {
        a.other_before = *std::move(h);
      } else {
        s = Malformed(key, h.status().message());
      }
    }
    const std::vector<std::string>& args = journal.texts[i].second;
    size_t r = 0;
    (void)absl::SimpleAtoi(args[2], &r);
    const size_t first_add = 3 + r;
    for (size_t k = 0; k < e[3].elements.size(); ++k) {
      const std::string& time = e[3].elements[k].str;
      if (time.size() != 8 || first_add + 3 * k >= args.size()) {
        s = Malformed(key, "the text script answered a bad time");
        break;
      }
      a.kept.emplace_back(args[first_add + 3 * k],
                          absl::FromUnixMicros(static_cast<int64_t>(DecodeFixed64BE(time.data()))));
    }
    a.created = Int(e[4]) == 1;
    a.deleted = Int(e[5]) == 1;
    if (!s.ok()) {
      failures.Add(s);
      continue;
    }
    applied->push_back(std::move(a));
  }
  if (!failures.empty()) return failures.Status("redis chunk text scripts", calls.size());

  // The other slots, idempotent: index every text left index pending
  // (created now, or by a claim that stopped before indexing it), unindex
  // the deleted ones.
  const int blocks = max_near_distance_ + 1;
  std::vector<Command> writes;
  std::vector<ScriptCall> marks;
  for (const Applied& a : *applied) {
    if (a.deleted && a.before.has_value()) {
      const RedisChunkTextValue& old = *a.before;
      for (int b = 0; b < blocks; ++b) {
        std::string key = redis::ChunkSimHashBucketKey(prefix_, ns, blocks, b, old.simhash);
        writes.push_back(Command::ForKey(
            key, {"SREM", key, redis::SimHashBucketMember(old.text_id, old.simhash)}));
      }
      if (old.minhash.has_value()) {
        for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
          std::string key = redis::ChunkLshBucketKey(prefix_, ns, band, *old.minhash);
          writes.push_back(Command::ForKey(key, {"SREM", key, absl::StrCat(old.text_id)}));
        }
      }
      std::string key = redis::ChunkTextIdKey(prefix_, ns, old.text_id);
      writes.push_back(Command::ForKey(key, {"DEL", key}));
    }
    if (a.after.has_value() && a.after->index_pending) {
      const RedisChunkTextValue& v = *a.after;
      std::string idkey = redis::ChunkTextIdKey(prefix_, ns, v.text_id);
      writes.push_back(Command::ForKey(idkey, {"SET", idkey, ShaKey(a.sha)}));
      for (int b = 0; b < blocks; ++b) {
        std::string key = redis::ChunkSimHashBucketKey(prefix_, ns, blocks, b, v.simhash);
        writes.push_back(
            Command::ForKey(key, {"SADD", key, redis::SimHashBucketMember(v.text_id, v.simhash)}));
      }
      if (v.minhash.has_value()) {
        for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
          std::string key = redis::ChunkLshBucketKey(prefix_, ns, band, *v.minhash);
          writes.push_back(Command::ForKey(key, {"SADD", key, absl::StrCat(v.text_id)}));
        }
      }
      marks.push_back(redis::IndexMarkCall(redis::ChunkTextKey(prefix_, ns, a.sha), v.text_id));
    }
  }
  if (!writes.empty()) {
    std::vector<std::string> keys;
    for (const Command& w : writes) {
      keys.push_back(w.key);
      written_slots->push_back(w.RoutingSlot());
    }
    std::vector<absl::StatusOr<Value>> done = router().Execute(std::move(writes));
    Failures wf;
    for (size_t i = 0; i < done.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(done[i]), keys[i]);
      if (!v.ok()) wf.Add(v.status());
    }
    if (!wf.empty()) return wf.Status("redis chunk index writes", done.size());
  }
  if (!marks.empty()) {
    std::vector<absl::StatusOr<Value>> done = router().EvalBatch(redis::IndexMarkScript(), marks);
    Failures mf;
    for (size_t i = 0; i < done.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(done[i]), marks[i].keys[0]);
      if (!v.ok()) mf.Add(v.status());
    }
    if (!mf.empty()) return mf.Status("redis chunk index marks", done.size());
  }

  // The manifest with the times the scripts kept (a replayed or raced add
  // keeps the time its holder has).
  *manifest = journal.manifest;
  if (manifest->has_value()) {
    absl::flat_hash_map<std::string, absl::Time> kept;
    for (const Applied& a : *applied) {
      for (const auto& [id, time] : a.kept) kept[id] = time;
    }
    for (StoredChunk& c : (*manifest)->chunks) {
      auto it = kept.find(c.chunk_id);
      if (it != kept.end()) c.added = it->second;
    }
  }
  return absl::OkStatus();
}

absl::Status RedisChunkStore::Claim(const ChunkDocument& doc, absl::Time t, ChunkAnswer* answer) {
  const std::string& ns = doc.name_space;
  const std::string lkey = redis::ChunkLeaseKey(prefix_, ns, doc.document_url);
  const std::string mkey = redis::ChunkManifestKey(prefix_, ns, doc.document_url);
  const std::string jkey = redis::ChunkJournalKey(prefix_, ns, doc.document_url);
  const std::map<std::string, uint64_t> reconnects = urls_->Reconnects();
  std::vector<int> written_slots;

  // Step 1: the lease, with the manifest and any journal left behind.
  std::string token;
  {
    absl::BitGen rng;
    token = absl::StrCat(absl::Hex(absl::Uniform<uint64_t>(rng)),
                         absl::Hex(absl::Uniform<uint64_t>(rng)));
  }
  const absl::Time started = absl::Now();
  const absl::Time give_up = started + options_.lease_wait;
  Value leased;
  absl::Duration backoff = absl::Milliseconds(1);
  while (true) {
    DEDUPD_ASSIGN_OR_RETURN(
        leased,
        ReplyOr(router().Eval(ScriptOf(kLuaLease), {lkey, mkey, jkey},
                              {token, absl::StrCat(absl::ToInt64Milliseconds(options_.lease))}),
                lkey));
    if (leased.type != Value::Type::kArray || leased.elements.empty()) {
      return Malformed(lkey, "the lease script answered an unexpected reply");
    }
    if (Int(leased.elements[0]) == 1) break;
    if (absl::Now() > give_up) {
      return absl::UnavailableError(
          absl::StrCat("document ", doc.document_url, " is being claimed by another front end for ",
                       absl::FormatDuration(options_.lease_wait), "; retry"));
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(50));
  }
  if (leased.elements.size() != 3)
    return Malformed(lkey, "the lease script answered a short reply");
  auto release = [&]() {
    absl::StatusOr<Value> r = router().Eval(ScriptOf(kLuaRelease), {lkey}, {token});
    // why: a lease that cannot be released expires after options_.lease.
    r.status().IgnoreError();
  };
  std::optional<ChunkManifest> stored;
  if (leased.elements[1].type != Value::Type::kNil) {
    absl::StatusOr<ChunkManifest> m = redis::DecodeRedisChunkManifest(leased.elements[1].str);
    if (!m.ok()) {
      release();
      return Malformed(mkey, m.status().message());
    }
    stored = *std::move(m);
  }
  // A journal: its claim stopped between its steps. Replay it (the text
  // scripts are idempotent) and commit its manifest, keeping the lease.
  if (leased.elements[2].type != Value::Type::kNil) {
    absl::StatusOr<ChunkJournal> j = redis::DecodeChunkJournal(leased.elements[2].str);
    if (!j.ok()) {
      release();
      return Malformed(jkey, j.status().message());
    }
    std::vector<Applied> applied;
    std::optional<ChunkManifest> replayed;
    absl::Status s = Apply(ns, *j, &applied, &replayed, &written_slots);
    if (!s.ok()) {
      release();
      return s;
    }
    absl::StatusOr<Value> c = ReplyOr(
        router().Eval(
            ScriptOf(kLuaCommit), {lkey, mkey, jkey},
            {token,
             replayed.has_value() ? redis::EncodeRedisChunkManifest(*replayed) : std::string(),
             "0"}),
        lkey);
    if (!c.ok()) {
      release();  // the journal stays if the commit did not run
      return c.status();
    }
    if (Int(*c) != 1) return absl::UnavailableError("the document's lease ran out; retry");
    written_slots.push_back(redis::KeySlot(mkey));
    stored = std::move(replayed);
  }

  // Step 2: read and plan.
  Reader reader(this, ns);
  ChunkPlan plan;
  absl::Status s = reader.Prefetch(doc, stored);
  if (s.ok()) s = PlanChunkDocument(doc, /*claim=*/true, t, stored, &reader, &plan);
  if (s.ok()) s = reader.deferred();
  if (!s.ok()) {
    release();
    return s;
  }
  const ChunkMutations& mut = plan.mutations;
  if (!mut.manifest.has_value() && !mut.delete_manifest) {
    // The same chunks again: nothing changes.
    release();
    *answer = std::move(plan.answer);
    return urls_->WaitForReplicas(written_slots, reconnects);
  }

  // Step 3: the journal. Per text: this document's holders that go (by
  // chunk id) and come (with their times), and the record to create.
  ChunkJournal journal;
  if (mut.manifest.has_value()) journal.manifest = mut.manifest;
  const ChunkManifest no_chunks;
  const ChunkManifest& before = stored.has_value() ? *stored : no_chunks;
  const ChunkManifest& after = mut.manifest.has_value() ? *mut.manifest : no_chunks;
  std::map<Sha256Digest,
           std::pair<std::vector<std::string>, std::vector<std::pair<StoredChunk, bool>>>>
      per_text;
  auto same = [](const StoredChunk& a, const StoredChunk& b) {
    return a.chunk_id == b.chunk_id && a.sha256 == b.sha256 && a.added == b.added;
  };
  for (const StoredChunk& o : before.chunks) {
    bool kept = false;
    for (const StoredChunk& n : after.chunks) kept = kept || same(o, n);
    if (!kept) per_text[o.sha256].first.push_back(o.chunk_id);
  }
  for (const StoredChunk& n : after.chunks) {
    bool kept = false, carried = false;
    for (const StoredChunk& o : before.chunks) {
      kept = kept || same(o, n);
      carried = carried || (o.sha256 == n.sha256 && o.added == n.added);
    }
    if (!kept) per_text[n.sha256].second.emplace_back(n, carried);
  }
  for (const auto& [sha, change] : per_text) {
    std::string create;
    if (!change.second.empty()) {
      // The record to create when the script finds the text without one:
      // the planner's new record, or the one it read (if another front end
      // deleted the text meanwhile), marked index pending either way.
      std::optional<RedisChunkTextValue> value;
      const Reader::Text* seen = reader.FindText(sha);
      if (seen != nullptr && seen->value.has_value()) value = seen->value;
      for (const auto& [put_sha, record] : mut.texts_put) {
        if (put_sha == sha && !value.has_value()) {
          value = RedisChunkTextValue{record.text_id, record.simhash, record.minhash,
                                      record.shingles, false};
        }
      }
      if (!value.has_value()) {
        release();
        return absl::InternalError(absl::StrCat("the chunk plan adds holders to text ",
                                                Sha256Hex(sha), " without its record"));
      }
      value->index_pending = true;
      create = redis::EncodeRedisChunkTextValue(*value);
    }
    journal.texts.emplace_back(sha,
                               TextArgs(create, doc.document_url, change.first, change.second));
  }
  absl::StatusOr<Value> jw = ReplyOr(router().Eval(ScriptOf(kLuaJournal), {lkey, jkey},
                                                   {token, redis::EncodeChunkJournal(journal)}),
                                     jkey);
  if (!jw.ok()) {
    release();  // a journal written or not: the next claim replays it or has none
    return jw.status();
  }
  if (Int(*jw) != 1) return absl::UnavailableError("the document's lease ran out; retry");
  written_slots.push_back(redis::KeySlot(jkey));
  // (A hook's error stands for a front end dying here: lease and journal
  // stay.)
  if (before_text_scripts_) DEDUPD_RETURN_IF_ERROR(before_text_scripts_());

  // Steps 4 and 5: the text scripts, then the index; the commit.
  std::vector<Applied> applied;
  std::optional<ChunkManifest> final_manifest;
  if (absl::Status applied_status = Apply(ns, journal, &applied, &final_manifest, &written_slots);
      !applied_status.ok()) {
    // The journal stays: releasing the lease lets the retry replay it at
    // once instead of after the lease (only a dead front end costs that).
    release();
    return applied_status;
  }
  absl::StatusOr<Value> c = ReplyOr(
      router().Eval(ScriptOf(kLuaCommit), {lkey, mkey, jkey},
                    {token,
                     final_manifest.has_value() ? redis::EncodeRedisChunkManifest(*final_manifest)
                                                : std::string(),
                     "1"}),
      lkey);
  if (!c.ok()) {
    release();  // the journal stays if the commit did not run
    return c.status();
  }
  if (Int(*c) != 1) return absl::UnavailableError("the document's lease ran out; retry");

  // Texts the planner saw without another document's holder but whose
  // script found one (another front end recorded them first): their
  // chunks are that holder's exact duplicates, unless older (a chunk that
  // kept its age); near answers naming such a chunk name that holder.
  absl::flat_hash_map<Sha256Digest, uint64_t> own_old;
  for (const StoredChunk& o : before.chunks) ++own_old[o.sha256];
  absl::flat_hash_map<std::string, std::pair<ChunkHolder, uint64_t>> renamed;  // by chunk id
  for (const Applied& a : applied) {
    if (!a.other_before.has_value()) continue;
    const Reader::Text* seen = reader.FindText(a.sha);
    const uint64_t own = own_old[a.sha];
    if (seen != nullptr && seen->value.has_value() && seen->holders > own) continue;
    for (size_t i = 0; i < doc.chunks.size(); ++i) {
      if (doc.chunks[i].sha256 != a.sha) continue;
      const absl::Time added = final_manifest.has_value() && i < final_manifest->chunks.size()
                                   ? final_manifest->chunks[i].added
                                   : t;
      if (!(a.other_before->added < added)) continue;
      ChunkOutcome& out = plan.answer.outcomes[i];
      out = ChunkOutcome{};
      out.verdict = ChunkVerdict::kExactDuplicate;
      out.duplicate_document_url = a.other_before->document_url;
      out.duplicate_chunk_id = a.other_before->chunk_id;
      out.duplicate_simhash = doc.chunks[i].simhash;
      out.first_seen = a.other_before->added;
      out.other_holders = a.holders_before > own ? a.holders_before - own : 0;
      renamed[doc.chunks[i].chunk_id] = {*a.other_before, 0};
    }
  }
  for (ChunkOutcome& out : plan.answer.outcomes) {
    if (out.verdict != ChunkVerdict::kNearDuplicate ||
        out.duplicate_document_url != doc.document_url) {
      continue;
    }
    auto it = renamed.find(out.duplicate_chunk_id);
    if (it == renamed.end()) continue;
    out.duplicate_document_url = it->second.first.document_url;
    out.duplicate_chunk_id = it->second.first.chunk_id;
    out.first_seen = it->second.first.added;
  }
  *answer = std::move(plan.answer);
  written_slots.push_back(redis::KeySlot(mkey));
  return urls_->WaitForReplicas(written_slots, reconnects);
}

}  // namespace dedupd
