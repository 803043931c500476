#include "storage/redis/redis_content_store.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/coding.h"
#include "common/status_macros.h"
#include "core/index/lsh_index.h"
#include "core/text/simhash.h"
#include "storage/document_key.h"
#include "storage/near_measure.h"
#include "storage/plan/content_planner.h"
#include "storage/plan/forget_planner.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_index_mark.h"
#include "storage/redis/redis_near_read.h"
#include "storage/redis/redis_replies.h"
#include "storage/redis/redis_status.h"
#include "storage/redis/redis_url_format.h"
#include "storage/url_value.h"

namespace dedupd {
namespace {

using redis::Command;
using redis::Failures;
using redis::KeyForHumans;
using redis::Malformed;
using redis::Micros64;
using redis::RedisContentValue;
using redis::ReplyOr;
using redis::Script;
using redis::ScriptCall;
using redis::StatusFromErrorReply;
using redis::Value;

// owner_of: the owner URL of a content value (redis_content_format.h), nil
// when the bytes are not one. Lua strings are 1-based: the fixed part is
// bytes 1..22, the optional claim id hash (flag 1) and signature (flag 2)
// follow, then the owner.
constexpr absl::string_view kLuaOwnerOf = R"lua(
local function owner_of(v)
  if string.byte(v, 1) ~= 1 or #v < 23 then return nil end
  local flags = string.byte(v, 2)
  local p = 23
  if flags % 2 == 1 then p = p + 8 end
  if math.floor(flags / 2) % 2 == 1 then p = p + 128 end
  if #v < p then return nil end
  return string.sub(v, p)
end
)lua";

// The read: one text's state in one step (a consistent view per text).
//   KEYS[1] the content record, KEYS[2] the alias set
//   ARGV[1] how many aliases to list; ARGV[2..] URLs to test for membership
// Returns {false} for an absent text, else {value, alias count, the first
// ARGV[1] aliases in byte order, {1 or 0 per tested URL}}.
constexpr absl::string_view kLuaRead = R"lua(
local v = redis.call('GET', KEYS[1])
if not v then return {false} end
local n = redis.call('ZCARD', KEYS[2])
local list = {}
local limit = tonumber(ARGV[1])
if n > 0 and limit > 0 then list = redis.call('ZRANGE', KEYS[2], 0, limit - 1) end
local member = {}
for i = 2, #ARGV do
  local m = 0
  if n > 0 and redis.call('ZSCORE', KEYS[2], ARGV[i]) then m = 1 end
  member[i - 1] = m
end
return {v, n, list, member}
)lua";

// The claim of one text: first writer wins, then every URL of the batch's
// docs of the text other than the owner joins the alias set (once).
//   KEYS[1] the content record, KEYS[2] the alias set, KEYS[3] alias times
//   ARGV[1] the record to create when absent ('' when the planner read it
//   present); ARGV[2] the time added (i64 BE); ARGV[3] how many aliases
//   to list; ARGV[4..] the URLs, in batch order
// Returns {old, 1, added URLs, alias count, first ARGV[3] aliases}; old is
// false when this run created the record. {false, 0}: ARGV[1] is '' and
// the record is gone (removed since the read). {old, 2}: not a content
// value (left alone).
constexpr absl::string_view kLuaClaim = R"lua(
local old = redis.call('GET', KEYS[1])
local v = old
if not old then
  if ARGV[1] == '' then return {false, 0} end
  redis.call('SET', KEYS[1], ARGV[1])
  v = ARGV[1]
end
local owner = owner_of(v)
if not owner then return {old, 2} end
local added = {}
for i = 4, #ARGV do
  local u = ARGV[i]
  if u ~= owner and redis.call('ZADD', KEYS[2], 'NX', 0, u) == 1 then
    redis.call('HSET', KEYS[3], u, ARGV[2])
    added[#added + 1] = u
  end
end
local n = redis.call('ZCARD', KEYS[2])
local list = {}
local limit = tonumber(ARGV[3])
if n > 0 and limit > 0 then list = redis.call('ZRANGE', KEYS[2], 0, limit - 1) end
return {old or false, 1, added, n, list}
)lua";

const Script& ReadScript() {
  static const Script* const kScript = new Script(std::string(kLuaRead));
  return *kScript;
}
const Script& ClaimScript() {
  static const Script* const kScript = new Script(absl::StrCat(kLuaOwnerOf, kLuaClaim));
  return *kScript;
}

// IsRetryOf: ContentPlanner's retry rule (content_planner.cc, IsRetry),
// for a text another front end recorded while this call planned.
bool IsRetryOf(const ContentDoc& doc, const ContentRecord& stored, absl::Time now) {
  return doc.claim_id_hash != 0 && stored.claim_id_hash == doc.claim_id_hash &&
         stored.owner_url == doc.identity_url && now - stored.first_seen <= doc.claim_id_retention;
}

bool UsesJaccard(const ContentDoc& doc) { return doc.min_jaccard > 0 && doc.minhash.has_value(); }

}  // namespace

// The planner's view of the cluster: every record the batch needs, read in
// a few pipelined rounds before planning (Prefetch), then served from
// memory; a read the prefetch did not foresee is one round trip of its own.
// A read that fails inside QueryNear or QueryJaccardCandidates (which
// cannot return a status) is kept and returned after planning.
class RedisContentStore::Reader final : public ContentStateReader {
 public:
  Reader(RedisContentStore* store, absl::string_view name_space, size_t max_aliases)
      : s_(store), name_space_(name_space), max_aliases_(max_aliases) {}

  // Text: what the read script answered for one text of the batch.
  struct Text {
    std::optional<RedisContentValue> value;
    uint64_t alias_count = 0;
    std::vector<std::string> aliases;  // the first max_aliases_
    absl::flat_hash_set<std::string> members;
    bool tested = false;  // members answers for every batch URL of the text
  };

  absl::Status Prefetch(absl::Span<const ContentDoc> docs, bool claim);

  // The text's state as read (null when the batch has no doc of it).
  const Text* FindText(const Sha256Digest& sha) const {
    auto it = texts_.find(DigestKey(sha));
    return it == texts_.end() ? nullptr : &it->second;
  }
  absl::Status deferred() const { return deferred_; }

  absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha) override {
    auto it = texts_.find(DigestKey(sha));
    if (it == texts_.end()) {
      DEDUPD_RETURN_IF_ERROR(ReadTexts({sha}, {{}}));
      it = texts_.find(DigestKey(sha));
    }
    if (!it->second.value.has_value()) return std::nullopt;
    ContentRecord r = it->second.value->record;
    r.alias_count = it->second.alias_count;
    return r;
  }
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha, absl::string_view url) override {
    auto it = texts_.find(DigestKey(sha));
    if (it != texts_.end() && it->second.members.contains(url)) return true;
    if (it != texts_.end() && it->second.tested) return false;
    const std::string key = redis::AliasKey(s_->prefix_, name_space_, sha);
    DEDUPD_ASSIGN_OR_RETURN(
        Value v,
        ReplyOr(s_->router().ExecuteOne(Command::ForKey(key, {"ZSCORE", key, std::string(url)})),
                key));
    return v.type != Value::Type::kNil;
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(const Sha256Digest& sha,
                                                       size_t limit) override {
    auto it = texts_.find(DigestKey(sha));
    if (it != texts_.end() && limit <= max_aliases_) {
      std::vector<std::string> out = it->second.aliases;
      if (out.size() > limit) out.resize(limit);
      return out;
    }
    const std::string key = redis::AliasKey(s_->prefix_, name_space_, sha);
    DEDUPD_ASSIGN_OR_RETURN(
        Value v, ReplyOr(s_->router().ExecuteOne(
                             Command::ForKey(key, {"ZRANGE", key, "0", absl::StrCat(limit - 1)})),
                         key));
    std::vector<std::string> out;
    for (const Value& e : v.elements) out.push_back(e.str);
    return out;
  }
  absl::StatusOr<std::optional<FetchRecord>> GetFetch(absl::string_view url) override {
    auto it = fetches_.find(url);
    if (it == fetches_.end()) {
      DEDUPD_RETURN_IF_ERROR(Run({FetchGet(std::string(url))}));
      it = fetches_.find(url);
    }
    return it->second;
  }
  absl::StatusOr<bool> HasUrl(absl::string_view url) override {
    auto it = seen_.find(url);
    if (it == seen_.end()) {
      DEDUPD_RETURN_IF_ERROR(Run({UrlExists(std::string(url))}));
      it = seen_.find(url);
    }
    return it->second;
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    auto it = buckets_.find(simhash);
    if (it == buckets_.end()) {
      Defer(FetchNear({simhash}, {}));
      it = buckets_.find(simhash);
    }
    if (it == buckets_.end()) {
      if (total != nullptr) *total = 0;
      return {};
    }
    // Kept only with its fingerprint record: one written after its bucket
    // entry (another front end between its writes) is not there yet.
    return redis::NearMatches(it->second, simhash, max_distance, limit, total,
                              [this](uint32_t id) { return Visible(id); });
  }
  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_jaccard) override {
    auto it = bands_.find(redis::SigBytes(sig));
    if (it == bands_.end()) {
      Defer(FetchNear({}, {sig}));
      it = bands_.find(redis::SigBytes(sig));
    }
    std::vector<uint32_t> out;
    if (it == bands_.end()) return out;
    for (uint32_t id : it->second) {
      if (!Visible(id)) continue;
      auto fp = fingerprints_.find(id);
      if (!fp->second->minhash.has_value()) continue;
      if (EstimateJaccard(*fp->second->minhash, sig) >= min_jaccard) out.push_back(id);
    }
    return out;
  }
  absl::StatusOr<FingerprintRecord> GetFingerprint(uint32_t doc_id) override {
    if (!fingerprints_.contains(doc_id)) {
      DEDUPD_RETURN_IF_ERROR(ReadFingerprints({doc_id}));
    }
    const std::optional<FingerprintRecord>& fp = fingerprints_[doc_id];
    if (!fp.has_value()) {
      return absl::DataLossError(
          absl::StrCat("index entry ", doc_id, " has no fingerprint record"));
    }
    return *fp;
  }
  absl::StatusOr<uint32_t> AllocateDocId() override {
    if (next_id_ >= end_id_) {
      DEDUPD_ASSIGN_OR_RETURN(next_id_, ReserveIds(1));
      end_id_ = next_id_ + 1;
    }
    return static_cast<uint32_t>(next_id_++);
  }

 private:
  redis::ClusterRouter& router() { return s_->router(); }

  // A command and what to do with its reply.
  struct Pending {
    Command command;
    std::function<absl::Status(const Value&)> take;
  };

  void Defer(absl::Status s) {
    if (deferred_.ok() && !s.ok()) deferred_ = s;
  }

  // Visible: a candidate the planner may be given: its fingerprint record
  // was read, and its text was not read absent or under another doc id. (A text recorded by
  // another front end after this call read it absent is invisible, as
  // records written after a snapshot are to the RocksDB backend: else the
  // call would name as near a text it answers as new.)
  bool Visible(uint32_t id) {
    auto it = fingerprints_.find(id);
    if (it == fingerprints_.end() || !it->second.has_value()) return false;
    auto text = texts_.find(DigestKey(it->second->sha256));
    if (text == texts_.end()) return true;
    // A fingerprint of a text Forget deleted (its record gone, or the text
    // recorded again under a new doc id) is left over: not the text.
    return text->second.value.has_value() && text->second.value->record.doc_id == id;
  }

  // Run executes `pending` in one pipelined round and hands each reply to
  // its `take`.
  absl::Status Run(std::vector<Pending> pending) {
    if (pending.empty()) return absl::OkStatus();
    std::vector<Command> commands;
    commands.reserve(pending.size());
    for (const Pending& p : pending) commands.push_back(p.command);
    std::vector<absl::StatusOr<Value>> replies = router().Execute(std::move(commands));
    Failures failures;
    for (size_t i = 0; i < pending.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), pending[i].command.key);
      absl::Status s = v.ok() ? pending[i].take(*v) : v.status();
      if (!s.ok()) failures.Add(s);
    }
    if (!failures.empty()) return failures.Status("redis content read", pending.size());
    return absl::OkStatus();
  }

  Pending FetchGet(std::string url) {
    std::string key = redis::FetchKey(s_->prefix_, name_space_, url);
    return {Command::ForKey(key, {"GET", key}), [this, url, key](const Value& v) -> absl::Status {
              if (v.type == Value::Type::kNil) {
                fetches_[url] = std::nullopt;
                return absl::OkStatus();
              }
              absl::StatusOr<FetchRecord> f = redis::DecodeFetchValue(v.str);
              if (!f.ok()) return Malformed(key, f.status().message());
              fetches_[url] = *f;
              return absl::OkStatus();
            }};
  }
  Pending UrlExists(std::string url) {
    std::string key = redis::UrlRecordKey(s_->prefix_, name_space_, url);
    return {Command::ForKey(key, {"EXISTS", key}), [this, url](const Value& v) {
              seen_[url] = v.integer > 0;
              return absl::OkStatus();
            }};
  }
  Pending FingerprintGet(uint32_t id) {
    std::string key = redis::FingerprintKey(s_->prefix_, name_space_, id);
    return {Command::ForKey(key, {"GET", key}), [this, id, key](const Value& v) -> absl::Status {
              if (v.type == Value::Type::kNil) {
                fingerprints_[id] = std::nullopt;
                return absl::OkStatus();
              }
              absl::StatusOr<FingerprintRecord> fp = redis::DecodeFingerprintValue(v.str);
              if (!fp.ok()) return Malformed(key, fp.status().message());
              fingerprints_[id] = *fp;
              return absl::OkStatus();
            }};
  }

  // ReadTexts runs the read script for each text, testing `urls[i]` for
  // membership in text i's alias set.
  absl::Status ReadTexts(const std::vector<Sha256Digest>& shas,
                         const std::vector<std::vector<std::string>>& urls);
  absl::Status ReadFingerprints(const std::vector<uint32_t>& ids) {
    std::vector<Pending> pending;
    for (uint32_t id : ids) pending.push_back(FingerprintGet(id));
    return Run(std::move(pending));
  }
  // FetchNear reads the SimHash buckets of `simhashes` and the LSH buckets
  // of `sigs`, then the fingerprint records of their candidates (SimHash
  // members within the store's distance, every LSH member).
  absl::Status FetchNear(const std::vector<uint64_t>& simhashes,
                         const std::vector<MinHashSignature>& sigs, std::vector<Pending> also = {});
  // ReserveIds allocates n doc ids (INCRBY) and returns the first.
  absl::StatusOr<uint64_t> ReserveIds(uint64_t n) {
    const std::string key = redis::DocIdCounterKey(s_->prefix_, name_space_);
    DEDUPD_ASSIGN_OR_RETURN(
        Value v,
        ReplyOr(router().ExecuteOne(Command::ForKey(key, {"INCRBY", key, absl::StrCat(n)})), key));
    if (v.type != Value::Type::kInteger || v.integer < static_cast<long long>(n)) {
      return Malformed(key, "INCRBY did not answer a counter");
    }
    if (static_cast<unsigned long long>(v.integer) > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(
          absl::StrCat("namespace \"", name_space_, "\" holds 2^32 texts, its limit"));
    }
    return static_cast<uint64_t>(v.integer) - n + 1;
  }

  RedisContentStore* const s_;
  const std::string name_space_;
  const size_t max_aliases_;
  absl::flat_hash_map<std::string, Text> texts_;  // by DigestKey
  absl::flat_hash_map<std::string, std::optional<FetchRecord>> fetches_;
  absl::flat_hash_map<std::string, bool> seen_;
  absl::flat_hash_map<uint64_t, std::vector<redis::BucketEntry>> buckets_;  // by query SimHash
  absl::flat_hash_map<std::string, std::vector<uint32_t>> bands_;           // by SigBytes
  absl::flat_hash_map<uint32_t, std::optional<FingerprintRecord>> fingerprints_;
  uint64_t next_id_ = 0, end_id_ = 0;
  absl::Status deferred_;
};

absl::Status RedisContentStore::Reader::ReadTexts(
    const std::vector<Sha256Digest>& shas, const std::vector<std::vector<std::string>>& urls) {
  std::vector<ScriptCall> calls;
  calls.reserve(shas.size());
  for (size_t i = 0; i < shas.size(); ++i) {
    ScriptCall call;
    call.keys = {redis::ContentKey(s_->prefix_, name_space_, shas[i]),
                 redis::AliasKey(s_->prefix_, name_space_, shas[i])};
    call.args.push_back(absl::StrCat(max_aliases_));
    call.args.insert(call.args.end(), urls[i].begin(), urls[i].end());
    calls.push_back(std::move(call));
  }
  std::vector<absl::StatusOr<Value>> replies = router().EvalBatch(ReadScript(), calls);
  Failures failures;
  for (size_t i = 0; i < shas.size(); ++i) {
    const std::string& key = calls[i].keys[0];
    absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), key);
    if (!v.ok()) {
      failures.Add(v.status());
      continue;
    }
    Text& text = texts_[DigestKey(shas[i])];
    text = Text{};
    text.tested = !urls[i].empty();
    if (v->type != Value::Type::kArray || v->elements.empty()) {
      failures.Add(Malformed(key, "the read script answered no array"));
      continue;
    }
    if (v->elements[0].type == Value::Type::kNil) continue;  // absent
    if (v->elements.size() != 4 || v->elements[0].type != Value::Type::kString) {
      failures.Add(Malformed(key, "the read script answered a malformed array"));
      continue;
    }
    absl::StatusOr<RedisContentValue> value = redis::DecodeRedisContentValue(v->elements[0].str);
    if (!value.ok()) {
      failures.Add(Malformed(key, value.status().message()));
      continue;
    }
    text.value = *std::move(value);
    text.alias_count = static_cast<uint64_t>(v->elements[1].integer);
    for (const Value& a : v->elements[2].elements) text.aliases.push_back(a.str);
    const std::vector<Value>& member = v->elements[3].elements;
    for (size_t u = 0; u < member.size() && u < urls[i].size(); ++u) {
      if (member[u].integer == 1) text.members.insert(urls[i][u]);
    }
  }
  if (!failures.empty()) return failures.Status("redis content read", shas.size());
  return absl::OkStatus();
}

absl::Status RedisContentStore::Reader::FetchNear(const std::vector<uint64_t>& simhashes,
                                                  const std::vector<MinHashSignature>& sigs,
                                                  std::vector<Pending> also) {
  const int k = s_->max_near_distance_;
  const int blocks = k + 1;
  absl::flat_hash_set<std::string> asked;
  std::vector<Pending> pending = std::move(also);
  for (uint64_t simhash : simhashes) {
    if (buckets_.contains(simhash)) continue;
    buckets_[simhash];  // the query's entry, filled below
    for (int b = 0; b < blocks; ++b) {
      std::string key = redis::SimHashBucketKey(s_->prefix_, name_space_, blocks, b, simhash);
      if (!asked.insert(key).second) continue;
      pending.push_back(
          {Command::ForKey(key, {"SMEMBERS", key}), [this, simhash, key](const Value& v) {
             return redis::TakeSimHashBucket(key, v, &buckets_[simhash]);
           }});
    }
  }
  for (const MinHashSignature& sig : sigs) {
    const std::string sig_key = redis::SigBytes(sig);
    if (bands_.contains(sig_key)) continue;
    bands_[sig_key];
    for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
      std::string key = redis::LshBucketKey(s_->prefix_, name_space_, band, sig);
      pending.push_back(
          {Command::ForKey(key, {"SMEMBERS", key}), [this, sig_key, key](const Value& v) {
             return redis::TakeLshBucket(key, v, "doc id", &bands_[sig_key]);
           }});
    }
  }
  DEDUPD_RETURN_IF_ERROR(Run(std::move(pending)));
  // A query's buckets overlap (a hash within k of the query may sit in
  // several of them): each candidate once.
  std::vector<uint32_t> ids = redis::NearCandidateIds(simhashes, sigs, k, &buckets_, &bands_);
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [this](uint32_t id) { return fingerprints_.contains(id); }),
            ids.end());
  DEDUPD_RETURN_IF_ERROR(ReadFingerprints(ids));
  // The candidates' content records (their owners), one read script each:
  // the planner resolves every listed match to its owner.
  std::vector<Sha256Digest> shas;
  absl::flat_hash_set<std::string> wanted;
  for (uint32_t id : ids) {
    const std::optional<FingerprintRecord>& fp = fingerprints_[id];
    if (!fp.has_value()) continue;
    const std::string key = DigestKey(fp->sha256);
    if (texts_.contains(key) || !wanted.insert(key).second) continue;
    shas.push_back(fp->sha256);
  }
  if (shas.empty()) return absl::OkStatus();
  return ReadTexts(shas, std::vector<std::vector<std::string>>(shas.size()));
}

absl::Status RedisContentStore::Reader::Prefetch(absl::Span<const ContentDoc> docs, bool claim) {
  // Round 1: each distinct text's record, alias count and list, and
  // whether the batch's URLs are its aliases.
  std::vector<Sha256Digest> shas;
  std::vector<std::vector<std::string>> urls;
  absl::flat_hash_map<std::string, size_t> text_of;
  for (const ContentDoc& d : docs) {
    auto [it, inserted] = text_of.try_emplace(DigestKey(d.sha256), shas.size());
    if (inserted) {
      shas.push_back(d.sha256);
      urls.emplace_back();
    }
    std::vector<std::string>& u = urls[it->second];
    for (const std::string* url : {&d.identity_url, &d.fetched_url}) {
      if (std::find(u.begin(), u.end(), *url) == u.end()) u.push_back(*url);
    }
  }
  DEDUPD_RETURN_IF_ERROR(ReadTexts(shas, urls));

  // Round 2: fetch records, seen URLs (claim), the near buckets of the
  // docs whose text is new, and their doc ids.
  std::vector<Pending> pending;
  absl::flat_hash_set<std::string> fetched, urls_asked;
  std::vector<uint64_t> simhashes;
  std::vector<MinHashSignature> sigs;
  size_t absent = 0;
  for (const Sha256Digest& sha : shas) {
    if (!texts_[DigestKey(sha)].value.has_value()) ++absent;
  }
  for (const ContentDoc& d : docs) {
    if (fetched.insert(d.fetched_url).second) pending.push_back(FetchGet(d.fetched_url));
    if (claim) {
      for (const std::string* url : {&d.identity_url, &d.fetched_url}) {
        if (!IsDocumentIdKey(*url) && urls_asked.insert(*url).second) {
          pending.push_back(UrlExists(*url));
        }
      }
    }
    if (texts_[DigestKey(d.sha256)].value.has_value()) continue;
    simhashes.push_back(d.simhash);
    if (UsesJaccard(d)) sigs.push_back(*d.minhash);
  }
  if (claim && absent > 0) {
    const std::string key = redis::DocIdCounterKey(s_->prefix_, name_space_);
    pending.push_back(
        {Command::ForKey(key, {"INCRBY", key, absl::StrCat(absent)}),
         [this, absent, key](const Value& v) -> absl::Status {
           if (v.type != Value::Type::kInteger || v.integer < static_cast<long long>(absent)) {
             return Malformed(key, "INCRBY did not answer a counter");
           }
           if (static_cast<unsigned long long>(v.integer) > std::numeric_limits<uint32_t>::max()) {
             return absl::ResourceExhaustedError(
                 absl::StrCat("namespace \"", name_space_, "\" holds 2^32 texts, its limit"));
           }
           end_id_ = static_cast<uint64_t>(v.integer) + 1;
           next_id_ = end_id_ - absent;
           return absl::OkStatus();
         }});
  }
  // Rounds 3 and 4 (FetchNear): the candidates' fingerprints and owners.
  return FetchNear(simhashes, sigs, std::move(pending));
}

std::unique_ptr<RedisContentStore> RedisContentStore::Open(RedisUrlStore* urls) {
  return std::unique_ptr<RedisContentStore>(new RedisContentStore(urls));
}

RedisContentStore::RedisContentStore(RedisUrlStore* urls)
    : urls_(urls),
      prefix_(urls->key_prefix()),
      max_near_distance_(urls->meta().simhash_max_distance) {}

redis::ClusterRouter& RedisContentStore::router() { return urls_->router(); }

absl::Status RedisContentStore::CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                             const ContentLimits& limits, absl::Time now,
                                             std::vector<ContentOutcome>* outcomes) {
  outcomes->clear();
  if (docs.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckContentDocs(docs, max_near_distance()));
  Reader reader(this, docs[0].name_space, limits.max_aliases);
  DEDUPD_RETURN_IF_ERROR(reader.Prefetch(docs, claim));
  ContentPlan plan;
  DEDUPD_RETURN_IF_ERROR(PlanContentBatch(docs, claim, limits, now, &reader, &plan));
  DEDUPD_RETURN_IF_ERROR(reader.deferred());
  if (claim) {
    DEDUPD_RETURN_IF_ERROR(
        Write(docs, limits, absl::FromUnixMicros(absl::ToUnixMicros(now)), reader, &plan));
  }
  *outcomes = std::move(plan.outcomes);
  return absl::OkStatus();
}

namespace {

// AnswerAsClaimedElsewhere rewrites the plan's answers for a text it
// planned to record but that another front end recorded first (`stored`,
// as the claim script saw it, with `alias_count` and the first `aliases`
// after this call's additions): each doc of the text is its exact
// duplicate (or the retry of its claim, as the planner would have said),
// and near matches of the text name its real owner.
void AnswerAsClaimedElsewhere(absl::Span<const ContentDoc> docs, const Sha256Digest& sha,
                              const ContentRecord& stored, uint64_t alias_count,
                              const std::vector<std::string>& aliases, absl::Time now,
                              ContentPlan* plan) {
  bool retried = false;
  for (size_t i = 0; i < docs.size(); ++i) {
    ContentOutcome& out = plan->outcomes[i];
    if (docs[i].sha256 == sha) {
      ContentOutcome fixed;
      fixed.verdict = ContentVerdict::kExactDuplicate;
      fixed.owner_url = stored.owner_url;
      fixed.first_seen = stored.first_seen;
      fixed.aliases = aliases;
      fixed.alias_count = alias_count;
      fixed.recrawl = out.recrawl;
      if (!retried && IsRetryOf(docs[i], stored, now)) {
        fixed.verdict = ContentVerdict::kNew;
        fixed.retry = true;
        retried = true;
      }
      out = std::move(fixed);
      continue;
    }
    for (NearMatch& m : out.near_matches) {
      if (m.sha256 == sha) m.owner_url = stored.owner_url;
    }
    if (out.verdict == ContentVerdict::kNearDuplicate && !out.near_matches.empty() &&
        out.near_matches[0].sha256 == sha) {
      out.owner_url = stored.owner_url;
      out.first_seen = stored.first_seen;
    }
  }
}

}  // namespace

absl::Status RedisContentStore::Write(absl::Span<const ContentDoc> docs,
                                      const ContentLimits& limits, absl::Time t,
                                      const Reader& reader, ContentPlan* plan) {
  const ContentMutations& m = plan->mutations;
  const std::string& ns = docs[0].name_space;
  const std::map<std::string, uint64_t> reconnects = urls_->Reconnects();
  std::vector<int> written_slots;

  // Step 1: one claim script per text the plan records or adds aliases to.
  struct TextClaim {
    Sha256Digest sha{};
    bool create = false;  // the planner read it absent and records it
    std::string value;    // the record to create
    uint32_t doc_id = 0;
    uint64_t simhash = 0;
    std::optional<MinHashSignature> minhash;
    absl::flat_hash_set<std::string> planned_aliases;
    std::vector<std::string> urls;
  };
  std::vector<TextClaim> claims;
  absl::flat_hash_map<std::string, size_t> claim_of;
  auto claim_for = [&](const Sha256Digest& sha) -> TextClaim& {
    auto [it, inserted] = claim_of.try_emplace(DigestKey(sha), claims.size());
    if (inserted) {
      claims.emplace_back();
      claims.back().sha = sha;
    }
    return claims[it->second];
  };
  absl::flat_hash_map<uint32_t, const FingerprintRecord*> planned_fp;
  for (const auto& [id, fp] : m.fingerprints) planned_fp[id] = &fp;
  for (const auto& [sha, record] : m.contents) {
    TextClaim& c = claim_for(sha);
    const Reader::Text* read = reader.FindText(sha);
    c.create = read == nullptr || !read->value.has_value();
    if (!c.create) continue;
    RedisContentValue v;
    v.record = record;
    v.record.alias_count = 0;  // the alias set's ZCARD
    auto fp = planned_fp.find(record.doc_id);
    if (fp == planned_fp.end()) {
      return absl::InternalError(absl::StrCat("the content planner recorded text ", Sha256Hex(sha),
                                              " without its fingerprint"));
    }
    v.minhash = fp->second->minhash;
    v.index_pending = true;
    c.value = redis::EncodeRedisContentValue(v);
    c.doc_id = record.doc_id;
    c.simhash = record.simhash;
    c.minhash = v.minhash;
  }
  for (const ContentMutations::Alias& a : m.aliases)
    claim_for(a.sha256).planned_aliases.insert(a.url);
  for (const ContentDoc& d : docs) {
    auto it = claim_of.find(DigestKey(d.sha256));
    if (it == claim_of.end()) continue;
    std::vector<std::string>& urls = claims[it->second].urls;
    for (const std::string* url : {&d.identity_url, &d.fetched_url}) {
      if (std::find(urls.begin(), urls.end(), *url) == urls.end()) urls.push_back(*url);
    }
  }
  std::vector<ScriptCall> calls;
  calls.reserve(claims.size());
  const std::string time_arg = Micros64(t);
  for (const TextClaim& c : claims) {
    ScriptCall call;
    call.keys = {redis::ContentKey(prefix_, ns, c.sha), redis::AliasKey(prefix_, ns, c.sha),
                 redis::AliasTimeKey(prefix_, ns, c.sha)};
    call.args = {c.value, time_arg, absl::StrCat(limits.max_aliases)};
    call.args.insert(call.args.end(), c.urls.begin(), c.urls.end());
    calls.push_back(std::move(call));
  }

  // The texts whose fingerprint record and bucket entries step 2 writes:
  // those this call created, and those still marked pending (a writer
  // stopped between its steps: this call finishes its work).
  struct ToIndex {
    Sha256Digest sha{};
    uint32_t doc_id = 0;
    FingerprintRecord fp;
  };
  std::vector<ToIndex> to_index;
  absl::flat_hash_set<std::string> indexed;
  auto index = [&](const Sha256Digest& sha, uint32_t doc_id, uint64_t simhash,
                   const std::optional<MinHashSignature>& minhash) {
    if (!indexed.insert(DigestKey(sha)).second) return;
    to_index.push_back({sha, doc_id, FingerprintRecord{simhash, sha, minhash}});
  };

  // The reverse hints Forget finds a URL's texts by (empty namespace
  // only: a named namespace is never forgotten URL by URL), written before
  // the scripts that may name the URL, so that no text names a URL without
  // its hint; a hint whose script then did not name the URL is harmless
  // (Forget checks each text).
  if (ns.empty() && !claims.empty()) {
    std::vector<Command> hints;
    for (const TextClaim& c : claims) {
      for (const std::string& url : c.urls) {
        std::string key = redis::UrlTextsKey(prefix_, ns, url);
        std::vector<std::string> argv = {"SADD", key, DigestKey(c.sha)};
        hints.push_back(Command::ForKey(std::move(key), std::move(argv)));
      }
    }
    std::vector<std::string> keys;
    keys.reserve(hints.size());
    for (const Command& h : hints) {
      keys.push_back(h.key);
      written_slots.push_back(h.RoutingSlot());
    }
    std::vector<absl::StatusOr<Value>> done = router().Execute(std::move(hints));
    Failures hint_failures;
    for (size_t i = 0; i < done.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(done[i]), keys[i]);
      if (!v.ok()) hint_failures.Add(v.status());
    }
    if (!hint_failures.empty()) {
      return hint_failures.Status("redis content URL hints (nothing claimed yet)", done.size());
    }
  }
  if (before_claim_scripts_) before_claim_scripts_();
  std::vector<absl::StatusOr<Value>> replies = calls.empty()
                                                   ? std::vector<absl::StatusOr<Value>>()
                                                   : router().EvalBatch(ClaimScript(), calls);
  Failures failures;
  for (size_t i = 0; i < claims.size(); ++i) {
    const TextClaim& c = claims[i];
    const std::string& key = calls[i].keys[0];
    absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), key);
    if (!v.ok()) {
      failures.Add(v.status());
      continue;
    }
    const std::vector<Value>& e = v->elements;
    if (v->type != Value::Type::kArray || e.size() < 2 || e[1].type != Value::Type::kInteger) {
      failures.Add(Malformed(key, "the claim script answered a malformed array"));
      continue;
    }
    if (e[1].integer == 0) {
      failures.Add(absl::UnavailableError(absl::StrCat(
          "key \"", KeyForHumans(key), "\": the text was removed after this call read it; retry")));
      continue;
    }
    if (e[1].integer != 1 || e.size() != 5) {
      failures.Add(Malformed(key, "not a content value (left alone)"));
      continue;
    }
    std::vector<std::string> aliases;
    for (const Value& a : e[4].elements) aliases.push_back(a.str);
    const uint64_t alias_count = static_cast<uint64_t>(e[3].integer);
    // The script adds a URL when it is no alias yet; the planner when it
    // was none at the read: when both saw the text alike (absent, or
    // recorded), what the script added the planner planned (fewer when
    // another front end added some meanwhile). A text this call lost to
    // another front end gets the URL it planned as the owner as an alias.
    const bool lost = c.create && e[0].type != Value::Type::kNil;
    for (const Value& a : lost ? std::vector<Value>() : e[2].elements) {
      if (!c.planned_aliases.contains(a.str)) {
        failures.Add(absl::InternalError(
            absl::StrCat("key \"", KeyForHumans(key), "\": the claim script added alias \"",
                         absl::CHexEscape(a.str), "\", which the content planner did not")));
      }
    }
    if (!e[2].elements.empty() || e[0].type == Value::Type::kNil) {
      written_slots.push_back(redis::KeySlot(key));
    }
    if (e[0].type == Value::Type::kNil) {  // this call created the record
      index(c.sha, c.doc_id, c.simhash, c.minhash);
      continue;
    }
    absl::StatusOr<RedisContentValue> stored = redis::DecodeRedisContentValue(e[0].str);
    if (!stored.ok()) {
      failures.Add(Malformed(key, stored.status().message()));
      continue;
    }
    if (c.create) {
      // Another front end recorded the text between the read and the
      // script: answer the duplicate the script saw, never a second NEW.
      AnswerAsClaimedElsewhere(docs, c.sha, stored->record, alias_count, aliases, t, plan);
    } else {
      const Reader::Text* read = reader.FindText(c.sha);
      if (read == nullptr || stored->record.doc_id != read->value->record.doc_id ||
          stored->record.owner_url != read->value->record.owner_url) {
        failures.Add(absl::UnavailableError(absl::StrCat(
            "key \"", KeyForHumans(key), "\": the text changed after this call read it; retry")));
        continue;
      }
    }
    if (stored->index_pending) {
      index(c.sha, stored->record.doc_id, stored->record.simhash, stored->minhash);
    }
  }
  if (!failures.empty()) return failures.Status("redis content claim", claims.size());
  for (const ContentDoc& d : docs) {
    const Reader::Text* read = reader.FindText(d.sha256);
    if (read == nullptr || !read->value.has_value() || !read->value->index_pending) continue;
    if (claim_of.contains(DigestKey(d.sha256))) continue;  // the script's view decided
    index(d.sha256, read->value->record.doc_id, read->value->record.simhash, read->value->minhash);
  }

  // Step 2: the records in other slots, each write idempotent: fingerprint
  // records and bucket entries, fetch records, seen URLs (SET NX: a URL a
  // URL claim recorded first keeps its record).
  std::vector<Command> writes;
  const int blocks = max_near_distance_ + 1;
  for (const ToIndex& x : to_index) {
    const std::string fp_key = redis::FingerprintKey(prefix_, ns, x.doc_id);
    writes.push_back(Command::ForKey(fp_key, {"SET", fp_key, redis::EncodeFingerprintValue(x.fp)}));
    const std::string member = redis::SimHashBucketMember(x.doc_id, x.fp.simhash);
    for (int b = 0; b < blocks; ++b) {
      std::string key = redis::SimHashBucketKey(prefix_, ns, blocks, b, x.fp.simhash);
      std::vector<std::string> argv = {"SADD", key, member};
      writes.push_back(Command::ForKey(std::move(key), std::move(argv)));
    }
    if (x.fp.minhash.has_value()) {
      const std::string id = absl::StrCat(x.doc_id);
      for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
        std::string key = redis::LshBucketKey(prefix_, ns, band, *x.fp.minhash);
        std::vector<std::string> argv = {"SADD", key, id};
        writes.push_back(Command::ForKey(std::move(key), std::move(argv)));
      }
    }
  }
  for (const auto& [url, fetch] : m.fetches) {
    std::string key = redis::FetchKey(prefix_, ns, url);
    std::vector<std::string> argv = {"SET", key, redis::EncodeFetchValue(fetch)};
    writes.push_back(Command::ForKey(std::move(key), std::move(argv)));
  }
  for (const auto& [url, seen] : m.urls) {
    std::string key = redis::UrlRecordKey(prefix_, ns, url);
    std::vector<std::string> argv = {"SET", key, EncodeUrlValue(seen), "NX"};
    writes.push_back(Command::ForKey(std::move(key), std::move(argv)));
  }
  if (!writes.empty()) {
    for (const Command& w : writes) written_slots.push_back(w.RoutingSlot());
    std::vector<std::string> keys;
    keys.reserve(writes.size());
    for (const Command& w : writes) keys.push_back(w.key);
    std::vector<absl::StatusOr<Value>> done = router().Execute(std::move(writes));
    for (size_t i = 0; i < done.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(done[i]), keys[i]);
      if (!v.ok()) failures.Add(v.status());
    }
    if (!failures.empty()) {
      return failures.Status(
          "redis content writes (the texts are claimed: a retry answers them as the first "
          "time with the same claim id, and writes these records again)",
          done.size());
    }
  }

  // Step 3: the texts indexed are no longer pending.
  if (!to_index.empty()) {
    std::vector<ScriptCall> marks;
    marks.reserve(to_index.size());
    for (const ToIndex& x : to_index) {
      marks.push_back(redis::IndexMarkCall(redis::ContentKey(prefix_, ns, x.sha), x.doc_id));
      written_slots.push_back(redis::KeySlot(marks.back().keys[0]));
    }
    std::vector<absl::StatusOr<Value>> marked = router().EvalBatch(redis::IndexMarkScript(), marks);
    for (size_t i = 0; i < marked.size(); ++i) {
      absl::StatusOr<Value> v = ReplyOr(std::move(marked[i]), marks[i].keys[0]);
      if (!v.ok()) failures.Add(v.status());
    }
    if (!failures.empty()) return failures.Status("redis content index marks", marks.size());
  }
  return urls_->WaitForReplicas(written_slots, reconnects);
}

absl::Status RedisContentStore::LookupFetches(absl::string_view name_space,
                                              absl::Span<const std::string> urls,
                                              std::vector<std::optional<FetchRecord>>* fetches) {
  fetches->assign(urls.size(), std::nullopt);
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(name_space));
  if (urls.empty()) return absl::OkStatus();
  std::vector<Command> gets;
  gets.reserve(urls.size());
  for (const std::string& url : urls) {
    std::string key = redis::FetchKey(prefix_, name_space, url);
    std::vector<std::string> argv = {"GET", key};
    gets.push_back(Command::ForKey(std::move(key), std::move(argv)));
  }
  std::vector<absl::StatusOr<Value>> replies = router().Execute(gets);
  Failures failures;
  for (size_t i = 0; i < urls.size(); ++i) {
    absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), gets[i].key);
    if (!v.ok()) {
      failures.Add(v.status());
      continue;
    }
    if (v->type == Value::Type::kNil) continue;
    absl::StatusOr<FetchRecord> f = redis::DecodeFetchValue(v->str);
    if (!f.ok()) {
      failures.Add(Malformed(gets[i].key, f.status().message()));
      continue;
    }
    (*fetches)[i] = *std::move(f);
  }
  if (!failures.empty()) return failures.Status("redis fetch lookup", urls.size());
  return absl::OkStatus();
}

namespace {

// The forget read: a text's record, alias count and every alias with its
// time. KEYS: content record, alias set, alias times. Returns {false} for
// an absent text, else {value, alias count, {url, time, url, time, ...}}.
constexpr absl::string_view kLuaForgetRead = R"lua(
local v = redis.call('GET', KEYS[1])
if not v then return {false} end
return {v, redis.call('ZCARD', KEYS[2]), redis.call('HGETALL', KEYS[3])}
)lua";

// The forget write: applies PlanTextForget's decision if the text is still
// what the plan read (same value, same alias count), else changes nothing.
//   KEYS: content record, alias set, alias times
//   ARGV[1] the value read; ARGV[2] the alias count read; ARGV[3] the
//   action ('drop', 'promote', 'delete'); ARGV[4] the forgotten URL;
//   ARGV[5] '1' to remove the URL's own alias; ARGV[6] the new value and
//   ARGV[7] the new owner (promote)
// Returns 1 when applied, 0 when the text changed since the read.
constexpr absl::string_view kLuaForgetWrite = R"lua(
local v = redis.call('GET', KEYS[1])
if v ~= ARGV[1] or redis.call('ZCARD', KEYS[2]) ~= tonumber(ARGV[2]) then return 0 end
if ARGV[5] == '1' then
  redis.call('ZREM', KEYS[2], ARGV[4])
  redis.call('HDEL', KEYS[3], ARGV[4])
end
if ARGV[3] == 'promote' then
  redis.call('SET', KEYS[1], ARGV[6])
  redis.call('ZREM', KEYS[2], ARGV[7])
  redis.call('HDEL', KEYS[3], ARGV[7])
elseif ARGV[3] == 'delete' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
return 1
)lua";

const Script& ForgetReadScript() {
  static const Script* const kScript = new Script(std::string(kLuaForgetRead));
  return *kScript;
}
const Script& ForgetWriteScript() {
  static const Script* const kScript = new Script(std::string(kLuaForgetWrite));
  return *kScript;
}

// How many times Forget reads a text again after a concurrent change.
constexpr int kForgetAttempts = 5;

}  // namespace

absl::StatusOr<ForgetResult> RedisContentStore::Forget(const std::string& normalized_url,
                                                       absl::Time /*now*/) {
  const std::string& url = normalized_url;
  if (url.empty()) return absl::InvalidArgumentError("forget: the URL is empty");
  const std::string ns;  // Forget is of the empty namespace (ContentStore)
  const std::map<std::string, uint64_t> reconnects = urls_->Reconnects();
  std::vector<int> written_slots;
  ForgetResult result;

  // The texts that may name the URL, in SHA-256 order (the order every
  // backend reports promotions in).
  const std::string hint_key = redis::UrlTextsKey(prefix_, ns, url);
  absl::StatusOr<Value> hinted =
      ReplyOr(router().ExecuteOne(Command::ForKey(hint_key, {"SMEMBERS", hint_key})), hint_key);
  if (!hinted.ok()) return hinted.status();
  std::vector<Sha256Digest> pending;
  for (const Value& m : hinted->elements) {
    if (m.str.size() != 32) return Malformed(hint_key, "a member is not a SHA-256");
    Sha256Digest sha{};
    std::copy(m.str.begin(), m.str.end(), sha.begin());
    pending.push_back(sha);
  }
  std::sort(pending.begin(), pending.end());

  // Each text: read, plan, write if unchanged since the read; again for
  // the texts that changed meanwhile.
  struct Deleted {
    Sha256Digest sha{};
    RedisContentValue value;
  };
  std::vector<Deleted> deleted;
  std::map<Sha256Digest, TextForgetPlan> plans;
  for (int attempt = 0; !pending.empty(); ++attempt) {
    if (attempt == kForgetAttempts) {
      return absl::UnavailableError(absl::StrCat(
          "forget \"", KeyForHumans(url), "\": ", pending.size(),
          " text(s) kept changing under concurrent claims; retry (what was forgotten stays so)"));
    }
    std::vector<ScriptCall> reads;
    for (const Sha256Digest& sha : pending) {
      reads.push_back(
          ScriptCall{{redis::ContentKey(prefix_, ns, sha), redis::AliasKey(prefix_, ns, sha),
                      redis::AliasTimeKey(prefix_, ns, sha)},
                     {}});
    }
    std::vector<absl::StatusOr<Value>> read = router().EvalBatch(ForgetReadScript(), reads);
    std::vector<ScriptCall> writes;
    std::vector<size_t> write_of;  // write -> index in pending
    std::vector<RedisContentValue> values(pending.size());
    Failures failures;
    for (size_t i = 0; i < pending.size(); ++i) {
      const std::string& key = reads[i].keys[0];
      absl::StatusOr<Value> v = ReplyOr(std::move(read[i]), key);
      if (!v.ok()) {
        failures.Add(v.status());
        continue;
      }
      if (v->elements.empty() || v->elements[0].type == Value::Type::kNil) continue;  // gone
      if (v->elements.size() != 3) {
        failures.Add(Malformed(key, "the forget read answered a malformed array"));
        continue;
      }
      absl::StatusOr<RedisContentValue> value = redis::DecodeRedisContentValue(v->elements[0].str);
      if (!value.ok()) {
        failures.Add(Malformed(key, value.status().message()));
        continue;
      }
      const std::vector<Value>& times = v->elements[2].elements;
      const uint64_t alias_count = static_cast<uint64_t>(v->elements[1].integer);
      if (times.size() != 2 * alias_count) {
        failures.Add(Malformed(key, "the alias set and the alias times disagree"));
        continue;
      }
      std::vector<AliasRecord> aliases;
      for (size_t a = 0; a + 1 < times.size(); a += 2) {
        if (times[a + 1].str.size() != 8) {
          failures.Add(Malformed(key, "an alias time is not 8 bytes"));
          break;
        }
        aliases.push_back({times[a].str, absl::FromUnixMicros(static_cast<int64_t>(
                                             DecodeFixed64BE(times[a + 1].str.data())))});
      }
      ContentRecord record = value->record;
      record.alias_count = alias_count;
      TextForgetPlan plan = PlanTextForget(url, record, aliases);
      if (plan.action == TextForgetPlan::Action::kNone && !plan.remove_url_alias) continue;
      std::string action = "drop";
      std::string new_value;
      if (plan.action == TextForgetPlan::Action::kPromoteAlias) {
        action = "promote";
        RedisContentValue promoted = *value;
        promoted.record = plan.record;
        promoted.record.alias_count = 0;
        new_value = redis::EncodeRedisContentValue(promoted);
      } else if (plan.action == TextForgetPlan::Action::kDeleteText) {
        action = "delete";
      }
      writes.push_back(ScriptCall{reads[i].keys,
                                  {v->elements[0].str, absl::StrCat(alias_count), action, url,
                                   plan.remove_url_alias ? "1" : "0", new_value, plan.new_owner}});
      write_of.push_back(i);
      values[i] = *std::move(value);
      plans[pending[i]] = std::move(plan);
    }
    if (!failures.empty()) return failures.Status("redis forget read", pending.size());
    std::vector<absl::StatusOr<Value>> wrote =
        writes.empty() ? std::vector<absl::StatusOr<Value>>()
                       : router().EvalBatch(ForgetWriteScript(), writes);
    std::vector<Sha256Digest> again;
    for (size_t w = 0; w < writes.size(); ++w) {
      const Sha256Digest& sha = pending[write_of[w]];
      absl::StatusOr<Value> v = ReplyOr(std::move(wrote[w]), writes[w].keys[0]);
      if (!v.ok()) {
        failures.Add(v.status());
        continue;
      }
      if (v->integer != 1) {
        plans.erase(sha);
        again.push_back(sha);
        continue;
      }
      written_slots.push_back(redis::KeySlot(writes[w].keys[0]));
      plans[sha].Count(sha, &result);
      if (plans[sha].action == TextForgetPlan::Action::kDeleteText) {
        deleted.push_back({sha, values[write_of[w]]});
      }
    }
    if (!failures.empty()) return failures.Status("redis forget", writes.size());
    pending = std::move(again);
  }
  // Promotions were counted per attempt: back into SHA-256 order.
  std::sort(result.contents_promoted.begin(), result.contents_promoted.end(),
            [](const auto& a, const auto& b) { return a.sha256 < b.sha256; });

  // The deleted texts' index entries and fingerprint records (other slots;
  // a crash before this leaves entries whose text is gone, which queries
  // skip: RedisContentStore::Reader::Visible), then the URL's own records.
  std::vector<Command> dels;
  const int blocks = max_near_distance_ + 1;
  for (const Deleted& d : deleted) {
    const ContentRecord& r = d.value.record;
    const std::string member = redis::SimHashBucketMember(r.doc_id, r.simhash);
    for (int b = 0; b < blocks; ++b) {
      std::string key = redis::SimHashBucketKey(prefix_, ns, blocks, b, r.simhash);
      std::vector<std::string> argv = {"SREM", key, member};
      dels.push_back(Command::ForKey(std::move(key), std::move(argv)));
    }
    if (d.value.minhash.has_value()) {
      for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
        std::string key = redis::LshBucketKey(prefix_, ns, band, *d.value.minhash);
        std::vector<std::string> argv = {"SREM", key, absl::StrCat(r.doc_id)};
        dels.push_back(Command::ForKey(std::move(key), std::move(argv)));
      }
    }
    std::string fp_key = redis::FingerprintKey(prefix_, ns, r.doc_id);
    std::vector<std::string> argv = {"DEL", fp_key};
    dels.push_back(Command::ForKey(std::move(fp_key), std::move(argv)));
  }
  const size_t url_del = dels.size();
  for (std::string key :
       {redis::UrlRecordKey(prefix_, ns, url), redis::FetchKey(prefix_, ns, url), hint_key}) {
    std::vector<std::string> argv = {"DEL", key};
    dels.push_back(Command::ForKey(std::move(key), std::move(argv)));
  }
  std::vector<std::string> keys;
  keys.reserve(dels.size());
  for (const Command& d : dels) {
    keys.push_back(d.key);
    written_slots.push_back(d.RoutingSlot());
  }
  std::vector<absl::StatusOr<Value>> done = router().Execute(std::move(dels));
  Failures failures;
  for (size_t i = 0; i < done.size(); ++i) {
    absl::StatusOr<Value> v = ReplyOr(std::move(done[i]), keys[i]);
    if (!v.ok()) {
      failures.Add(v.status());
      continue;
    }
    if (i == url_del) result.url_found = v->integer > 0;
    if (i == url_del + 1) result.fetch_removed = v->integer > 0;
  }
  if (!failures.empty()) {
    return failures.Status("redis forget (the texts are forgotten: retry for the rest)",
                           done.size());
  }
  DEDUPD_RETURN_IF_ERROR(urls_->WaitForReplicas(written_slots, reconnects));
  return result;
}

}  // namespace dedupd
