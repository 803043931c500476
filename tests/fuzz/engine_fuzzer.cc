// engine_fuzzer.cc: libFuzzer target for the request handlers: Engine
// (server/engine.h), which the gRPC adapter (server/service.cc) hands every
// Dedup RPC's request proto, fed arbitrary serialized requests.
//
// Input: the first byte picks the RPC (modulo 4: CheckUrl, CheckContent,
// CheckChunks, DedupResults); the rest is parsed with ParseFromArray into
// that RPC's request (input that does not parse is skipped, as gRPC would
// reject it before the handler). Each request runs twice, so the second
// run meets what the first recorded (SEEN and duplicate answers).
//
// Stores:
//  - CheckUrl runs against a fresh in-memory URL store (cheap: the exact
//    claim checks below hold and the input alone decides the outcome) and
//    then against the process's RocksDB store;
//  - CheckContent and CheckChunks run against one RocksDB store per
//    process, in a new temporary directory removed at exit (tuned small:
//    8 MiB block cache, 4 MiB memtables). It is the production backend, and
//    much faster per input than fresh in-memory content and chunk stores,
//    whose empty near-duplicate index builds a bucket directory of several
//    MiB per store (two 20 s runs from the seeds, -seed=1, back to back on
//    2 cores at load average 22: 47 inputs/s with fresh in-memory stores,
//    562/s with this layout). State then builds
//    up across inputs, so only checks that hold for any prior state are
//    made, and a failure may need the inputs before it;
//  - DedupResults needs no store.
// DEDUPD_ENGINE_FUZZ_MEMORY=1 runs every RPC on fresh in-memory stores
// instead (each input on its own: use it to tell whether a failure depends
// on earlier inputs).
//
// Checks, each run:
//  - no crash (ASan/UBSan catch memory bugs and UB);
//  - the status is one of the documented codes. The stores here do not
//    fail (in memory, or RocksDB in a healthy temporary directory), so a
//    store code (Unavailable, DataLoss, ...) is reported too: the status
//    must be OK or InvalidArgument with a message, and
//    InvalidArgument exactly for the documented whole-request errors (no
//    items, more than max_batch_items, a bad namespace; for CheckChunks
//    also a missing or bad document_url or document_id, or both, or a
//    distance above the index limit; DedupResults
//    names a bad setting or limit: bad hits are rejected one by one);
//  - on OK, one result per item in request order: either a verdict
//    (NEW/SEEN, NEW/EXACT/NEAR duplicate) without an error, or INVALID with
//    a non-empty error; CheckUrl's normalized_url is the normalizer's
//    output for that item; DedupResults' kept, dropped, not_examined and
//    rejected indices split the hits exactly, at most top_k (when set) are
//    kept, a duplicate names a kept hit, and a rejected hit has a reason
//    and a message;
//  - the response serializes and parses back to itself (a proto3 string
//    field holding invalid UTF-8 would make clients reject the answer);
//  - claim semantics of CheckUrl: with a claim, each distinct normalized
//    URL is NEW at most once in the first run and, without a claim id,
//    never in the second (with one, the second run is its retry and is
//    answered the same); on the fresh store exactly once; with a peek on
//    the fresh store, every valid item is NEW in both runs. A bad
//    namespace, claim id or lease fails the request;
//  - claim semantics of CheckContent and CheckChunks: with a claim and a
//    claim id the second run is the first's retry (the same items NEW; the
//    same replaced_chunks and removed_chunk_ids); without one, no item is
//    NEW in the second run and it removes no chunk. A bad namespace or
//    claim id fails the request.
// Any violation aborts with the RPC name.
//
// Seeds (corpus/engine): written by tests/fuzz/make_engine_seeds.sh from
// protobuf text format with protoc --encode; see that script.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz engine_fuzzer
//   build-fuzz/tests/fuzz/engine_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/engine   (one command line)
#include <stdlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/text/simhash.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
#include "google/protobuf/stubs/logging.h"
#include "server/engine.h"
#include "storage/document_key.h"
#include "storage/memory/memory_chunk_store.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace {

namespace v1 = ::dedupd::v1;

// Small limits, so that fuzz inputs of a few KiB reach them.
constexpr size_t kMaxBatchItems = 64;
constexpr size_t kMaxTextBytes = 2048;
constexpr int kIndexDistance = 3;  // the stores' near-duplicate index limit

[[noreturn]] void Fail(const char* rpc, const std::string& what) {
  std::fprintf(stderr, "engine_fuzzer: %s: %s\n", rpc, what.c_str());
  std::abort();
}

dedupd::EngineOptions Options() {
  dedupd::EngineOptions o;
  o.max_batch_items = kMaxBatchItems;
  o.max_text_bytes = kMaxTextBytes;
  // A fixed clock that moves: runs are reproducible and times differ.
  auto now = std::make_shared<absl::Time>(absl::FromUnixSeconds(1700000000));
  o.clock = [now] { return *now += absl::Milliseconds(1); };
  return o;
}

const dedupd::UrlNormalizer& Normalizer() {
  static const dedupd::UrlNormalizer* const n = new dedupd::UrlNormalizer();
  return *n;
}

const dedupd::SimHasher& Hasher() {
  static const dedupd::SimHasher* const h = new dedupd::SimHasher();
  return *h;
}

bool MemoryOnly() {
  static const bool memory = [] {
    const char* env = std::getenv("DEDUPD_ENGINE_FUZZ_MEMORY");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return memory;
}

// The per-process RocksDB store.
struct RocksDbFixture {
  std::string dir;
  std::unique_ptr<dedupd::RocksDbStore> store;
  std::unique_ptr<dedupd::Engine> engine;
};

RocksDbFixture* RocksDb() {
  static RocksDbFixture* const fixture = [] {
    std::error_code ec;
    std::string templ =
        (std::filesystem::temp_directory_path(ec) / "dedupd_engine_fuzz_XXXXXX").string();
    if (ec || mkdtemp(templ.data()) == nullptr) Fail("setup", "mkdtemp failed");
    auto* f = new RocksDbFixture;
    f->dir = templ;
    dedupd::RocksDbStoreOptions options;
    options.path = f->dir + "/db";
    options.normalizer_version = dedupd::UrlNormalizer::kVersion;
    options.block_cache_bytes = size_t{8} << 20;
    options.write_buffer_bytes = size_t{4} << 20;
    options.simhash_max_distance = kIndexDistance;
    absl::StatusOr<std::unique_ptr<dedupd::RocksDbStore>> store =
        dedupd::RocksDbStore::Open(options);
    if (!store.ok()) Fail("setup", store.status().ToString());
    f->store = *std::move(store);
    f->engine = std::make_unique<dedupd::Engine>(&Normalizer(), f->store.get(), &Hasher(),
                                                 f->store.get(), f->store.get(), Options());
    std::atexit([] {
      RocksDbFixture* f = RocksDb();
      f->engine.reset();
      f->store.reset();
      std::error_code ec;
      std::filesystem::remove_all(f->dir, ec);
    });
    return f;
  }();
  return fixture;
}

// Fresh in-memory stores and an engine over them. Only the stores the RPC
// uses are built, with the fewest index tables that answer kIndexDistance
// exactly (kIndexDistance + 1 blocks: 4 tables, not the default's 10),
// because an empty index's bucket directory dominates the time per input.
struct MemoryFixture {
  explicit MemoryFixture(int rpc) {
    dedupd::ContentStore* contents = nullptr;
    dedupd::ChunkStore* chunks = nullptr;
    if (rpc == 1) {
      content_store =
          std::make_unique<dedupd::MemoryContentStore>(&urls, kIndexDistance, kIndexDistance + 1);
      contents = content_store.get();
    } else if (rpc == 2) {
      chunk_store = std::make_unique<dedupd::MemoryChunkStore>(kIndexDistance, kIndexDistance + 1);
      chunks = chunk_store.get();
    }
    engine = std::make_unique<dedupd::Engine>(&Normalizer(), &urls, &Hasher(), contents, chunks,
                                              Options());
  }
  dedupd::MemoryUrlStore urls;
  std::unique_ptr<dedupd::MemoryContentStore> content_store;
  std::unique_ptr<dedupd::MemoryChunkStore> chunk_store;
  std::unique_ptr<dedupd::Engine> engine;
};

// OK, or InvalidArgument with a message exactly when `whole_request_bad`.
void CheckStatus(const char* rpc, const absl::Status& s, bool whole_request_bad) {
  if (s.ok()) {
    if (whole_request_bad) Fail(rpc, "a bad request was answered");
    return;
  }
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    Fail(rpc, "undocumented error: " + s.ToString());
  }
  if (s.message().empty()) Fail(rpc, "error without a message");
  if (!whole_request_bad) Fail(rpc, "a good request failed: " + s.ToString());
}

template <typename Response>
void CheckReparses(const char* rpc, const Response& response) {
  std::string bytes;
  if (!response.SerializeToString(&bytes)) Fail(rpc, "response does not serialize");
  Response back;
  if (!back.ParseFromString(bytes)) {
    Fail(rpc, "response does not parse back (invalid UTF-8 in a string field?)");
  }
  std::string again;
  if (!back.SerializeToString(&again) || again != bytes) {
    Fail(rpc, "response does not round trip");
  }
}

bool BatchSizeBad(int n) { return n == 0 || static_cast<size_t>(n) > kMaxBatchItems; }

// The request-wide fields every check call shares: a bad one fails the
// request.
bool NamespaceOrClaimIdBad(const std::string& name_space, const std::string& claim_id) {
  return !dedupd::CheckNamespace(name_space).ok() || claim_id.size() > dedupd::kMaxClaimIdBytes;
}

// A CheckUrl request the engine must refuse as a whole: a bad batch size,
// namespace, claim id or lease.
bool UrlRequestBad(const v1::CheckUrlRequest& r) {
  return BatchSizeBad(r.items_size()) || !dedupd::CheckNamespace(r.namespace_()).ok() ||
         r.claim_id().size() > dedupd::kMaxClaimIdBytes ||
         (r.has_lease_seconds() &&
          (r.lease_seconds() < 1 || r.lease_seconds() > dedupd::Engine::kMaxLeaseSeconds));
}

// ---- CheckUrl ----

// Returns the normalized URLs answered NEW.
std::vector<std::string> RunCheckUrl(const dedupd::Engine& engine,
                                     const v1::CheckUrlRequest& request) {
  const char* rpc = "CheckUrl";
  v1::CheckUrlResponse response;
  const absl::Status s = engine.CheckUrl(request, &response);
  CheckStatus(rpc, s, UrlRequestBad(request));
  if (!s.ok()) return {};
  if (response.results_size() != request.items_size()) Fail(rpc, "result count");
  std::vector<std::string> fresh;
  for (int i = 0; i < request.items_size(); ++i) {
    const v1::UrlResult& r = response.results(i);
    const absl::StatusOr<std::string> want =
        Normalizer().Normalize(request.items(i).url(), request.items(i).base_url());
    switch (r.verdict()) {
      case v1::URL_VERDICT_INVALID:
        if (r.error().empty()) Fail(rpc, absl::StrCat("item ", i, ": INVALID without error"));
        if (want.ok()) Fail(rpc, absl::StrCat("item ", i, ": INVALID but normalizes"));
        break;
      case v1::URL_VERDICT_NEW:
      case v1::URL_VERDICT_SEEN:
        if (!r.error().empty()) Fail(rpc, absl::StrCat("item ", i, ": error on a verdict"));
        if (!want.ok() || r.normalized_url() != *want) {
          Fail(rpc, absl::StrCat("item ", i, ": normalized_url differs"));
        }
        if (r.verdict() == v1::URL_VERDICT_NEW) {
          fresh.push_back(r.normalized_url());
        } else if (!r.has_first_seen_time()) {
          Fail(rpc, absl::StrCat("item ", i, ": SEEN without first_seen_time"));
        }
        break;
      default:
        Fail(rpc, absl::StrCat("item ", i, ": verdict ", r.verdict()));
    }
  }
  CheckReparses(rpc, response);
  return fresh;
}

void CheckUrl(const dedupd::Engine& engine, const v1::CheckUrlRequest& request, bool fresh_stores) {
  const char* rpc = "CheckUrl";
  const bool peek = request.mode() == v1::CLAIM_MODE_PEEK;
  std::set<std::string> valid;
  for (const v1::UrlItem& item : request.items()) {
    absl::StatusOr<std::string> n = Normalizer().Normalize(item.url(), item.base_url());
    if (n.ok()) valid.insert(*n);
  }
  // The second run is a retry when the request has a claim id: answered
  // as the first run was; without one, nothing is NEW twice.
  std::vector<std::string> first_fresh;
  for (int run = 0; run < 2; ++run) {
    const std::vector<std::string> fresh = RunCheckUrl(engine, request);
    if (UrlRequestBad(request)) return;
    const std::set<std::string> distinct(fresh.begin(), fresh.end());
    if (peek) {
      if (fresh_stores && distinct != valid) Fail(rpc, "peek: not every valid URL is NEW");
      continue;
    }
    if (distinct.size() != fresh.size()) Fail(rpc, "claim: a URL is NEW twice");
    if (run == 0) first_fresh = fresh;
    if (run == 1 && request.claim_id().empty() && !fresh.empty()) {
      Fail(rpc, "claim: NEW again in the second run");
    }
    if (run == 1 && !request.claim_id().empty() && fresh != first_fresh) {
      Fail(rpc, "claim: a retry with the claim id is answered otherwise");
    }
    if (run == 0 && fresh_stores && distinct != valid) {
      Fail(rpc, "claim: not every valid URL is NEW once");
    }
  }
}

// ---- CheckContent ----

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void CheckContent(const dedupd::Engine& engine, const v1::CheckContentRequest& request) {
  const char* rpc = "CheckContent";
  const bool claim = request.mode() != v1::CLAIM_MODE_PEEK;
  std::vector<int> first_new;  // the items the first run answered NEW
  for (int run = 0; run < 2; ++run) {
    v1::CheckContentResponse response;
    const absl::Status s = engine.CheckContent(request, &response);
    CheckStatus(rpc, s,
                BatchSizeBad(request.items_size()) ||
                    NamespaceOrClaimIdBad(request.namespace_(), request.claim_id()));
    if (!s.ok()) return;
    if (response.results_size() != request.items_size()) Fail(rpc, "result count");
    std::vector<int> fresh;
    for (int i = 0; i < response.results_size(); ++i) {
      if (response.results(i).verdict() == v1::CONTENT_VERDICT_NEW) fresh.push_back(i);
    }
    if (run == 0) first_new = fresh;
    if (claim && run == 1 && request.claim_id().empty() && !fresh.empty()) {
      Fail(rpc, "claim: NEW again in the second run");
    }
    if (claim && run == 1 && !request.claim_id().empty() && fresh != first_new) {
      Fail(rpc, "claim: a retry with the claim id is answered otherwise");
    }
    for (int i = 0; i < response.results_size(); ++i) {
      const v1::ContentResult& r = response.results(i);
      switch (r.verdict()) {
        case v1::CONTENT_VERDICT_INVALID:
          if (r.error().empty()) Fail(rpc, absl::StrCat("item ", i, ": INVALID without error"));
          break;
        case v1::CONTENT_VERDICT_NEW:
        case v1::CONTENT_VERDICT_EXACT_DUPLICATE:
        case v1::CONTENT_VERDICT_NEAR_DUPLICATE:
          if (!r.error().empty()) Fail(rpc, absl::StrCat("item ", i, ": error on a verdict"));
          if (!IsHex64(r.content_hash())) Fail(rpc, absl::StrCat("item ", i, ": content_hash"));
          // A document is named by a URL or by an id, and so is its owner.
          if (r.url().empty() == r.document_id().empty() ||
              r.owner_url().empty() == r.owner_document_id().empty()) {
            Fail(rpc, absl::StrCat("item ", i,
                                   ": not one of url, document_id; or of owner_url, "
                                   "owner_document_id"));
          }
          if (!r.document_id().empty() && r.document_id() != request.items(i).document_id()) {
            Fail(rpc, absl::StrCat("item ", i, ": document_id is not the request's"));
          }
          break;
        default:
          Fail(rpc, absl::StrCat("item ", i, ": verdict ", r.verdict()));
      }
    }
    CheckReparses(rpc, response);
  }
}

// ---- CheckChunks ----

void CheckChunks(const dedupd::Engine& engine, const v1::CheckChunksRequest& request) {
  const char* rpc = "CheckChunks";
  const bool by_id = !request.document_id().empty();
  const bool bad = BatchSizeBad(request.chunks_size()) ||
                   NamespaceOrClaimIdBad(request.namespace_(), request.claim_id()) ||
                   (by_id ? !request.document_url().empty() ||
                                !dedupd::CheckDocumentId(request.document_id()).ok()
                          : request.document_url().empty() ||
                                !Normalizer().Normalize(request.document_url(), "").ok()) ||
                   (request.has_max_hamming_distance() &&
                    request.max_hamming_distance() > static_cast<uint32_t>(kIndexDistance)) ||
                   // Outside [floor, 1] (NaN included): the request's error.
                   (request.has_min_jaccard() &&
                    !(request.min_jaccard() >= dedupd::EngineOptions().min_jaccard_floor &&
                      request.min_jaccard() <= 1));
  const bool claim = request.mode() != v1::CLAIM_MODE_PEEK;
  v1::CheckChunksResponse first;
  for (int run = 0; run < 2; ++run) {
    v1::CheckChunksResponse response;
    const absl::Status s = engine.CheckChunks(request, &response);
    CheckStatus(rpc, s, bad || NamespaceOrClaimIdBad(request.namespace_(), request.claim_id()));
    if (!s.ok()) return;
    if (response.results_size() != request.chunks_size()) Fail(rpc, "result count");
    if (run == 0) first = response;
    const bool same_lists =
        response.replaced_chunks() == first.replaced_chunks() &&
        std::equal(response.removed_chunk_ids().begin(), response.removed_chunk_ids().end(),
                   first.removed_chunk_ids().begin(), first.removed_chunk_ids().end());
    if (claim && run == 1 && !request.claim_id().empty() && !same_lists) {
      Fail(rpc, "claim: a retry with the claim id gets other removed chunks");
    }
    if (claim && run == 1 && request.claim_id().empty() && response.removed_chunk_ids_size() > 0) {
      Fail(rpc, "claim: the second run removes chunks");
    }
    absl::flat_hash_set<std::string> ids;
    for (int i = 0; i < response.results_size(); ++i) {
      const v1::ChunkResult& r = response.results(i);
      switch (r.verdict()) {
        case v1::CHUNK_VERDICT_INVALID:
          if (r.error().empty()) Fail(rpc, absl::StrCat("chunk ", i, ": INVALID without error"));
          break;
        case v1::CHUNK_VERDICT_NEW:
        case v1::CHUNK_VERDICT_EXACT_DUPLICATE:
        case v1::CHUNK_VERDICT_NEAR_DUPLICATE:
          if (!r.error().empty()) Fail(rpc, absl::StrCat("chunk ", i, ": error on a verdict"));
          if (!IsHex64(r.content_hash())) Fail(rpc, absl::StrCat("chunk ", i, ": content_hash"));
          if (r.chunk_id().empty() || !ids.insert(r.chunk_id()).second) {
            Fail(rpc, absl::StrCat("chunk ", i, ": empty or repeated chunk_id"));
          }
          if (r.verdict() != v1::CHUNK_VERDICT_NEW &&
              (r.duplicate_of_document_url().empty() == r.duplicate_of_document_id().empty() ||
               r.duplicate_of_chunk_id().empty())) {
            Fail(rpc, absl::StrCat("chunk ", i, ": duplicate of nothing"));
          }
          break;
        default:
          Fail(rpc, absl::StrCat("chunk ", i, ": verdict ", r.verdict()));
      }
    }
    CheckReparses(rpc, response);
  }
}

// ---- DedupResults ----

void DedupResults(const dedupd::Engine& engine, const v1::DedupResultsRequest& request) {
  const char* rpc = "DedupResults";
  v1::DedupResultsResponse response;
  const absl::Status s = engine.DedupResults(request, &response);
  if (!s.ok()) {
    // Which settings are bad is results_dedup's to define; the code and a
    // message are the contract here.
    CheckStatus(rpc, s, /*whole_request_bad=*/true);
    return;
  }
  if (request.hits_size() == 0 || (request.has_top_k() && request.top_k() == 0)) {
    Fail(rpc, "a bad request was answered");
  }
  const size_t n = static_cast<size_t>(request.hits_size());
  std::vector<int> seen(n, 0);
  auto mark = [&](uint32_t index) {
    if (index >= n) Fail(rpc, absl::StrCat("index ", index, " out of range"));
    if (seen[index]++ != 0) Fail(rpc, absl::StrCat("index ", index, " listed twice"));
  };
  if (request.has_top_k() && static_cast<size_t>(response.kept_size()) > request.top_k()) {
    Fail(rpc, "more than top_k kept");
  }
  if (!request.has_top_k() && response.not_examined_size() != 0) {
    Fail(rpc, "hits not examined without a top_k");
  }
  absl::flat_hash_set<uint32_t> kept;
  for (const v1::KeptHit& k : response.kept()) {
    mark(k.index());
    kept.insert(k.index());
    if (k.id() != request.hits(static_cast<int>(k.index())).id()) Fail(rpc, "kept id differs");
  }
  for (const v1::DroppedHit& d : response.dropped()) {
    mark(d.index());
    if (d.reason() == v1::DROP_REASON_DUPLICATE) {
      if (!kept.contains(d.duplicate_of_index())) Fail(rpc, "duplicate of a hit not kept");
    } else if (d.reason() != v1::DROP_REASON_SOURCE_CAP) {
      Fail(rpc, "drop reason");
    }
  }
  for (uint32_t i : response.not_examined()) mark(i);
  for (const v1::RejectedHit& r : response.rejected()) {
    mark(r.index());
    if (r.id() != request.hits(static_cast<int>(r.index())).id()) Fail(rpc, "rejected id differs");
    if (r.error_reason() != v1::ERROR_REASON_BAD_TEXT &&
        r.error_reason() != v1::ERROR_REASON_BAD_HIT) {
      Fail(rpc, "reject reason");
    }
    if (r.error().empty()) Fail(rpc, "a rejected hit without a message");
  }
  for (size_t i = 0; i < n; ++i) {
    if (seen[i] != 1) Fail(rpc, absl::StrCat("hit ", i, " neither kept, dropped nor listed"));
  }
  CheckReparses(rpc, response);
}

template <typename Request>
bool Parse(const uint8_t* data, size_t size, Request* request) {
  return request->ParseFromArray(data, static_cast<int>(size));
}

void DiscardProtobufLog(google::protobuf::LogLevel, const char*, int, const std::string&) {}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Requests with invalid UTF-8 in string fields fail to parse (skipped);
  // protobuf would log each one.
  google::protobuf::SetLogHandler(DiscardProtobufLog);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t pick = data[0] % 4;
  ++data;
  --size;
  const bool memory_only = MemoryOnly();
  // CheckUrl first meets a fresh URL store; DedupResults needs none.
  std::unique_ptr<MemoryFixture> memory;
  if (memory_only || pick == 0 || pick == 3) memory = std::make_unique<MemoryFixture>(pick);
  const dedupd::Engine& engine = memory != nullptr ? *memory->engine : *RocksDb()->engine;
  switch (pick) {
    case 0: {
      v1::CheckUrlRequest request;
      if (!Parse(data, size, &request)) return -1;
      CheckUrl(engine, request, /*fresh_stores=*/true);
      if (!memory_only) CheckUrl(*RocksDb()->engine, request, /*fresh_stores=*/false);
      break;
    }
    case 1: {
      v1::CheckContentRequest request;
      if (!Parse(data, size, &request)) return -1;
      CheckContent(engine, request);
      break;
    }
    case 2: {
      v1::CheckChunksRequest request;
      if (!Parse(data, size, &request)) return -1;
      CheckChunks(engine, request);
      break;
    }
    default: {
      v1::DedupResultsRequest request;
      if (!Parse(data, size, &request)) return -1;
      DedupResults(engine, request);
      break;
    }
  }
  return 0;
}
