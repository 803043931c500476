// Crash consistency against the real dedupd binary: several client
// threads claim URLs, documents and chunks while the server is SIGKILLed at
// random moments, several times, and restarted on the same data dir each
// time. Every answer the clients received is an acknowledgement; after each
// restart every acknowledged fact must still hold, and the records must be
// whole (each content record's alias count equals its alias records, no
// alias without its content record).
//
// What counts as acknowledged (a failed call never does):
//   - CheckUrl NEW: the URL is SEEN from then on, always with the same
//     first_seen_time, which lies between the call's send and its answer;
//     no second NEW is ever given for it. A SEEN fixes the first_seen too.
//   - CheckContent NEW / EXACT_DUPLICATE: the text's owner (the NEW's
//     identity URL, or the duplicate's owner_url) and first_seen never
//     change, the text never gets a second NEW, both of the document's URLs
//     are SEEN and are the owner or on the owner's alias list.
//   - CheckChunks NEW / EXACT_DUPLICATE: the chunk text's owner (document,
//     chunk id) and first_seen never change, no second NEW; the text has at
//     least as many holders as acknowledged.
//
// The seed of the kill moments and of the workload is logged; set
// DEDUPD_CRASH_SEED to replay one. Every RPC has a deadline; every loop is
// bounded in count and in time.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "core/text/splitmix64.h"
#include "dedupd/v1/admin.pb.h"
#include "dedupd/v1/dedupd.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;

// kKills SIGKILLs, each after a random part of a round of load.
constexpr int kKills = 5;
constexpr int kThreads = 4;
// Per thread and round: at most this many calls (the kill usually comes
// first), and the kill comes at most kMaxLoadPerRound after the round began.
constexpr int kMaxCallsPerRound = 400;
constexpr absl::Duration kMaxLoadPerRound = absl::Seconds(10);
// The kill lands uniformly in [kMinAcked calls acknowledged + 0 ms,
// + kMaxKillDelayMs ms].
constexpr int kMinAcked = 12;
constexpr int kMaxKillDelayMs = 900;
// Shared pools: URLs, texts and chunk texts that every thread claims, so
// that claims race, owners and aliases exist, and later rounds re-claim
// what earlier rounds acknowledged.
constexpr int kSharedUrls = 300;
constexpr int kSharedTexts = 80;
constexpr int kSharedChunks = 80;
// Violations kept verbatim (all are counted).
constexpr size_t kMaxViolationsKept = 30;

constexpr uint64_t Mix(uint64_t x) { return SplitMix64(x); }

// Picks in [0, n) from the run's seeded stream.
class Rng {
 public:
  explicit Rng(uint64_t seed) : rng_(seed) {}
  int Below(int n) { return static_cast<int>(rng_.Below(static_cast<size_t>(n))); }

 private:
  SplitMixRng rng_;
};

// Text `words` pseudo-random words drawn from 5,000, a pure function of
// (kind, id): texts of different ids are far apart in SimHash (no near
// duplicates), equal ids give equal texts.
std::string Words(const std::string& kind, uint64_t id, int words) {
  std::string out = absl::StrCat(kind, " ", id, ":");
  uint64_t h = Mix(id ^ Mix(kind.size()));
  for (int i = 0; i < words; ++i) {
    h = Mix(h);
    uint64_t w = h % 5000;
    std::string word;
    for (int c = 0; c < 3 || w > 0; ++c) {
      word.push_back(static_cast<char>('a' + w % 26));
      w /= 26;
    }
    absl::StrAppend(&out, " ", word);
  }
  return out;
}

using Stamp = std::pair<int64_t, int32_t>;
Stamp ToStamp(const google::protobuf::Timestamp& t) { return {t.seconds(), t.nanos()}; }
std::string StampStr(const Stamp& s) { return absl::StrCat(s.first, ".", s.second); }
absl::Time StampTime(const Stamp& s) {
  return absl::FromUnixSeconds(s.first) + absl::Nanoseconds(s.second);
}

// Ledger: every acknowledged fact, and every contradiction seen.
// Thread-safe.
class Ledger {
 public:
  struct UrlFact {
    int news = 0;  // NEW answers
    std::optional<Stamp> first_seen;
    absl::Time new_sent, new_answered;  // the NEW call's window
  };
  struct Owner {
    std::string url;
    std::string chunk_id;  // chunks only
    bool operator==(const Owner& o) const { return url == o.url && chunk_id == o.chunk_id; }
    std::string Str() const { return chunk_id.empty() ? url : absl::StrCat(url, "#", chunk_id); }
  };
  struct TextFact {
    std::string text;
    int news = 0;
    std::optional<Owner> owner;
    std::optional<Stamp> first_seen;
    std::set<std::string> urls;  // content: both URLs of every acked doc; chunks: documents
  };

  void Violation(const std::string& what) {
    absl::MutexLock lock(&mu_);
    ViolationLocked(what);
  }

  void OnUrl(const v1::UrlResult& r, absl::Time sent, absl::Time answered) {
    absl::MutexLock lock(&mu_);
    if (r.normalized_url().empty())
      return ViolationLocked(absl::StrCat("url: no key: ", r.error()));
    UrlFact& f = urls_[r.normalized_url()];
    if (r.verdict() == v1::URL_VERDICT_NEW) {
      if (++f.news > 1) ViolationLocked(absl::StrCat("url ", r.normalized_url(), ": NEW again"));
      f.new_sent = sent;
      f.new_answered = answered;
    } else if (r.verdict() == v1::URL_VERDICT_SEEN) {
      SameStamp(&f.first_seen, ToStamp(r.first_seen_time()), "url " + r.normalized_url());
    } else {
      ViolationLocked(absl::StrCat("url ", r.normalized_url(), ": verdict ", r.verdict()));
    }
  }

  void OnContent(const std::string& text, const v1::ContentResult& r) {
    absl::MutexLock lock(&mu_);
    const std::string what = absl::StrCat("content ", r.content_hash(), " (", r.url(), ")");
    Owner owner;
    if (r.verdict() == v1::CONTENT_VERDICT_NEW) {
      owner.url = r.canonical_url();
      if (r.owner_url() != r.canonical_url()) {
        ViolationLocked(absl::StrCat(what, ": NEW owned by ", r.owner_url()));
      }
    } else if (r.verdict() == v1::CONTENT_VERDICT_EXACT_DUPLICATE) {
      owner.url = r.owner_url();
    } else {
      return ViolationLocked(absl::StrCat(what, ": verdict ", r.verdict(), " ", r.error()));
    }
    TextFact& f = texts_[r.content_hash()];
    if (f.text.empty()) f.text = text;
    if (r.verdict() == v1::CONTENT_VERDICT_NEW && ++f.news > 1) {
      ViolationLocked(absl::StrCat(what, ": NEW again"));
    }
    SameOwner(&f.owner, owner, what);
    SameStamp(&f.first_seen, ToStamp(r.first_seen_time()), what);
    f.urls.insert(r.url());
    f.urls.insert(r.canonical_url());
  }

  void OnChunk(const std::string& document_url, const std::string& text, const v1::ChunkResult& r) {
    absl::MutexLock lock(&mu_);
    const std::string what =
        absl::StrCat("chunk ", r.content_hash(), " (", document_url, "#", r.chunk_id(), ")");
    Owner owner;
    if (r.verdict() == v1::CHUNK_VERDICT_NEW) {
      owner = {document_url, r.chunk_id()};
    } else if (r.verdict() == v1::CHUNK_VERDICT_EXACT_DUPLICATE) {
      owner = {r.duplicate_of_document_url(), r.duplicate_of_chunk_id()};
    } else {
      return ViolationLocked(absl::StrCat(what, ": verdict ", r.verdict(), " ", r.error()));
    }
    TextFact& f = chunks_[r.content_hash()];
    if (f.text.empty()) f.text = text;
    if (r.verdict() == v1::CHUNK_VERDICT_NEW && ++f.news > 1) {
      ViolationLocked(absl::StrCat(what, ": NEW again"));
    }
    SameOwner(&f.owner, owner, what);
    SameStamp(&f.first_seen, ToStamp(r.first_seen_time()), what);
    f.urls.insert(document_url);
  }

  // Snapshots for the checks (taken while no worker runs).
  std::map<std::string, UrlFact> Urls() const {
    absl::MutexLock lock(&mu_);
    return urls_;
  }
  std::map<std::string, TextFact> Texts() const {
    absl::MutexLock lock(&mu_);
    return texts_;
  }
  std::map<std::string, TextFact> Chunks() const {
    absl::MutexLock lock(&mu_);
    return chunks_;
  }
  // Records a first_seen learned from a check (so later rounds compare).
  void LearnUrlStamp(const std::string& url, const Stamp& s) {
    absl::MutexLock lock(&mu_);
    SameStamp(&urls_[url].first_seen, s, "url " + url);
  }

  size_t violations() const {
    absl::MutexLock lock(&mu_);
    return violation_count_;
  }
  std::string ViolationText() const {
    absl::MutexLock lock(&mu_);
    std::string out;
    for (const std::string& v : violations_) absl::StrAppend(&out, "  ", v, "\n");
    return out;
  }

 private:
  void ViolationLocked(const std::string& what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    ++violation_count_;
    if (violations_.size() < kMaxViolationsKept) violations_.push_back(what);
  }
  void SameStamp(std::optional<Stamp>* known, const Stamp& got, const std::string& what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!known->has_value()) {
      *known = got;
    } else if (**known != got) {
      ViolationLocked(
          absl::StrCat(what, ": first_seen ", StampStr(got), ", acknowledged ", StampStr(**known)));
    }
  }
  void SameOwner(std::optional<Owner>* known, const Owner& got, const std::string& what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!known->has_value()) {
      *known = got;
    } else if (!(**known == got)) {
      ViolationLocked(
          absl::StrCat(what, ": owner ", got.Str(), ", acknowledged ", (*known)->Str()));
    }
  }

  mutable absl::Mutex mu_;
  std::map<std::string, UrlFact> urls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, TextFact> texts_ ABSL_GUARDED_BY(mu_);   // by content hash
  std::map<std::string, TextFact> chunks_ ABSL_GUARDED_BY(mu_);  // by chunk text hash
  size_t violation_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> violations_ ABSL_GUARDED_BY(mu_);
};

class E2eCrashTest : public ClientServerTest {
 protected:
  E2eCrashTest() : ClientServerTest(DEDUPD_BINARY, "e2e_crash_") {}

  static uint64_t Seed() {
    if (const char* s = std::getenv("DEDUPD_CRASH_SEED"); s != nullptr && *s != '\0') {
      return std::strtoull(s, nullptr, 10);
    }
    return static_cast<uint64_t>(absl::ToUnixNanos(absl::Now()));
  }

  // One worker's round: claims until `stop` or the call budget; returns
  // after its first failed call (the server is gone, or about to be).
  void Work(int thread, int round, uint64_t seed, const std::atomic<bool>& stop,
            const std::atomic<bool>& killing, std::atomic<int>* acked_calls,
            std::atomic<int>* early_failures) {
    ClientOptions options;
    options.max_attempts = 1;  // a retry could hide a lost NEW (client.h)
    options.deadline = absl::Seconds(10);
    absl::StatusOr<std::unique_ptr<DedupClient>> client =
        DedupClient::Connect(server_->address(), options);
    if (!client.ok()) {
      ledger_.Violation(absl::StrCat("connect: ", client.status().ToString()));
      return;
    }
    Rng rng(seed);
    const std::string tag = absl::StrCat("r", round, "t", thread);
    for (int call = 0; call < kMaxCallsPerRound && !stop.load(); ++call) {
      absl::Status failed;
      const absl::Time sent = absl::Now();
      switch (rng.Below(3)) {
        case 0: {  // URLs: half shared, half this call's own
          std::vector<v1::UrlItem> items(10);
          for (int i = 0; i < 10; ++i) {
            items[i].set_url(i % 2 == 0
                                 ? absl::StrCat("https://shared.example/p/", rng.Below(kSharedUrls))
                                 : absl::StrCat("https://u.example/", tag, "/", call, "/", i));
          }
          absl::StatusOr<std::vector<v1::UrlResult>> r =
              (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM);
          if (!r.ok()) {
            failed = r.status();
            break;
          }
          const absl::Time answered = absl::Now();
          for (const v1::UrlResult& res : *r) ledger_.OnUrl(res, sent, answered);
          break;
        }
        case 1: {  // documents: shared or own text, some with a canonical URL
          std::vector<v1::ContentItem> items(6);
          std::vector<std::string> texts(6);
          for (int i = 0; i < 6; ++i) {
            const bool shared = rng.Below(2) == 0;
            texts[i] = shared
                           ? Words("page", rng.Below(kSharedTexts), 40)
                           : Words("own page", Mix(seed) + static_cast<uint64_t>(call * 8 + i), 40);
            items[i].set_url(absl::StrCat("https://c.example/", tag, "/", call, "/", i));
            if (rng.Below(3) == 0) {
              items[i].set_canonical_url(
                  absl::StrCat("https://canon.example/", tag, "/", call, "/", i));
            }
            items[i].set_text(texts[i]);
          }
          absl::StatusOr<std::vector<v1::ContentResult>> r =
              (*client)->CheckContent(items, v1::CLAIM_MODE_CLAIM);
          if (!r.ok()) {
            failed = r.status();
            break;
          }
          for (size_t i = 0; i < r->size(); ++i) ledger_.OnContent(texts[i], (*r)[i]);
          break;
        }
        default: {  // one document's chunks: distinct texts, shared or own
          v1::CheckChunksRequest request;
          request.set_document_url(absl::StrCat("https://k.example/", tag, "/", call));
          request.set_mode(v1::CLAIM_MODE_CLAIM);
          std::set<int> picked;
          for (int i = 0; i < 4; ++i) {
            std::string text;
            const int k = rng.Below(kSharedChunks);
            if (rng.Below(2) == 0 && picked.insert(k).second) {
              text = Words("chunk", static_cast<uint64_t>(k), 30);
            } else {
              text = Words("own chunk", Mix(seed) + static_cast<uint64_t>(call * 8 + i), 30);
            }
            request.add_chunks()->set_text(text);
          }
          absl::StatusOr<v1::CheckChunksResponse> r = (*client)->CheckChunks(request);
          if (!r.ok()) {
            failed = r.status();
            break;
          }
          if (r->results_size() != request.chunks_size()) {
            ledger_.Violation("chunks: wrong result count");
            break;
          }
          for (int i = 0; i < r->results_size(); ++i) {
            ledger_.OnChunk(r->document_url(), request.chunks(i).text(), r->results(i));
          }
          break;
        }
      }
      if (!failed.ok()) {
        // Failures are expected once the kill is under way, not before.
        if (!killing.load()) {
          ++*early_failures;
          std::cerr << "e2e_crash: " << tag << " call " << call
                    << " failed before the kill: " << failed << "\n";
        }
        return;
      }
      ++*acked_calls;
    }
  }

  // Check: everything in the ledger, against the running server (peek only,
  // plus an export of every record).
  void Check(const std::string& when) {
    SCOPED_TRACE(when);
    const size_t before = ledger_.violations();
    CheckUrls();
    CheckContent();
    CheckChunks();
    CheckExport();
    EXPECT_EQ(ledger_.violations(), before) << when << ":\n" << ledger_.ViolationText();
  }

  void CheckUrls() {
    const std::map<std::string, Ledger::UrlFact> urls = ledger_.Urls();
    std::vector<std::string> keys;
    for (const auto& [url, f] : urls) keys.push_back(url);
    // The content documents' URLs count as seen too.
    for (const auto& [hash, f] : ledger_.Texts())
      keys.insert(keys.end(), f.urls.begin(), f.urls.end());
    for (size_t start = 0; start < keys.size(); start += 1000) {
      std::vector<v1::UrlItem> items;
      for (size_t i = start; i < std::min(keys.size(), start + 1000); ++i) {
        items.emplace_back().set_url(keys[i]);
      }
      absl::StatusOr<std::vector<v1::UrlResult>> r = client_->CheckUrls(items, v1::CLAIM_MODE_PEEK);
      ASSERT_THAT(r, IsOk());
      for (size_t j = 0; j < r->size(); ++j) {
        const std::string& url = keys[start + j];
        const v1::UrlResult& res = (*r)[j];
        if (res.verdict() != v1::URL_VERDICT_SEEN || res.normalized_url() != url) {
          ledger_.Violation(absl::StrCat("check url ", url, ": verdict ", res.verdict(), " key ",
                                         res.normalized_url()));
          continue;
        }
        auto it = urls.find(url);
        if (it == urls.end()) continue;  // a content URL: no time acknowledged
        const Stamp got = ToStamp(res.first_seen_time());
        ledger_.LearnUrlStamp(url, got);
        const Ledger::UrlFact& f = it->second;
        // Timestamps are taken on this machine's clock by both sides;
        // allow a second either way for their rounding.
        if (f.news > 0 && (StampTime(got) < f.new_sent - absl::Seconds(1) ||
                           StampTime(got) > f.new_answered + absl::Seconds(1))) {
          ledger_.Violation(absl::StrCat("check url ", url, ": first_seen ", StampStr(got),
                                         " outside its NEW call [", absl::FormatTime(f.new_sent),
                                         ", ", absl::FormatTime(f.new_answered), "]"));
        }
      }
    }
  }

  void CheckContent() {
    const std::map<std::string, Ledger::TextFact> texts = ledger_.Texts();
    std::vector<const std::pair<const std::string, Ledger::TextFact>*> all;
    for (const auto& entry : texts) all.push_back(&entry);
    for (size_t start = 0; start < all.size(); start += 500) {
      std::vector<v1::ContentItem> items;
      for (size_t i = start; i < std::min(all.size(), start + 500); ++i) {
        v1::ContentItem& item = items.emplace_back();
        item.set_url(absl::StrCat("https://verify.example/content/", i));
        item.set_text(all[i]->second.text);
      }
      absl::StatusOr<std::vector<v1::ContentResult>> r =
          client_->CheckContent(items, v1::CLAIM_MODE_PEEK);
      ASSERT_THAT(r, IsOk());
      for (size_t j = 0; j < r->size(); ++j) {
        const auto& [hash, f] = *all[start + j];
        const v1::ContentResult& res = (*r)[j];
        const std::string what = absl::StrCat("check content ", hash);
        if (res.verdict() != v1::CONTENT_VERDICT_EXACT_DUPLICATE || res.content_hash() != hash) {
          ledger_.Violation(absl::StrCat(what, ": verdict ", res.verdict()));
          continue;
        }
        if (res.owner_url() != f.owner->url) {
          ledger_.Violation(
              absl::StrCat(what, ": owner ", res.owner_url(), ", acknowledged ", f.owner->url));
        }
        if (ToStamp(res.first_seen_time()) != *f.first_seen) {
          ledger_.Violation(absl::StrCat(what, ": first_seen ",
                                         StampStr(ToStamp(res.first_seen_time())),
                                         ", acknowledged ", StampStr(*f.first_seen)));
        }
        const uint64_t others = f.urls.size() - (f.urls.count(f.owner->url) ? 1 : 0);
        if (res.alias_count() < others) {
          ledger_.Violation(absl::StrCat(what, ": alias_count ", res.alias_count(), " < ", others,
                                         " acknowledged"));
        }
      }
    }
  }

  void CheckChunks() {
    const std::map<std::string, Ledger::TextFact> chunks = ledger_.Chunks();
    std::vector<const std::pair<const std::string, Ledger::TextFact>*> all;
    for (const auto& entry : chunks) all.push_back(&entry);
    for (size_t start = 0; start < all.size(); start += 1000) {
      v1::CheckChunksRequest request;
      request.set_document_url(absl::StrCat("https://verify.example/chunks/", start));
      request.set_mode(v1::CLAIM_MODE_PEEK);
      const size_t end = std::min(all.size(), start + 1000);
      for (size_t i = start; i < end; ++i) request.add_chunks()->set_text(all[i]->second.text);
      absl::StatusOr<v1::CheckChunksResponse> r = client_->CheckChunks(request);
      ASSERT_THAT(r, IsOk());
      ASSERT_EQ(static_cast<size_t>(r->results_size()), end - start);
      for (size_t j = 0; j < end - start; ++j) {
        const auto& [hash, f] = *all[start + j];
        const v1::ChunkResult& res = r->results(static_cast<int>(j));
        const std::string what = absl::StrCat("check chunk ", hash);
        if (res.verdict() != v1::CHUNK_VERDICT_EXACT_DUPLICATE || res.content_hash() != hash) {
          ledger_.Violation(absl::StrCat(what, ": verdict ", res.verdict()));
          continue;
        }
        const Ledger::Owner got{res.duplicate_of_document_url(), res.duplicate_of_chunk_id()};
        if (!(got == *f.owner)) {
          ledger_.Violation(
              absl::StrCat(what, ": owner ", got.Str(), ", acknowledged ", f.owner->Str()));
        }
        if (ToStamp(res.first_seen_time()) != *f.first_seen) {
          ledger_.Violation(absl::StrCat(what, ": first_seen ",
                                         StampStr(ToStamp(res.first_seen_time())),
                                         ", acknowledged ", StampStr(*f.first_seen)));
        }
        if (res.other_holders() < f.urls.size()) {
          ledger_.Violation(absl::StrCat(what, ": other_holders ", res.other_holders(), " < ",
                                         f.urls.size(), " acknowledged"));
        }
      }
    }
  }

  // CheckExport reads every record: each content record is followed by
  // exactly alias_count alias records of its own hash (no half-written
  // record), URL records keep their acknowledged first_seen, and every
  // acknowledged document URL is its text's owner or on its alias list.
  void CheckExport() {
    std::map<std::string, Stamp> url_records;
    struct Content {
      std::string owner;
      uint64_t alias_count = 0;
      std::set<std::string> aliases;
    };
    std::map<std::string, Content> contents;
    std::string current;  // the hash whose aliases may follow
    absl::Status s = client_->AdminExport(v1::ExportRequest(), [&](const v1::ExportResponse& m) {
      for (const v1::ExportRecord& rec : m.records()) {
        if (rec.has_url()) {
          url_records[rec.url().url()] = ToStamp(rec.url().first_seen());
        } else if (rec.has_content()) {
          if (!current.empty() &&
              contents[current].aliases.size() != contents[current].alias_count) {
            ledger_.Violation(absl::StrCat("export: content ", current, " alias_count ",
                                           contents[current].alias_count, " but ",
                                           contents[current].aliases.size(), " aliases"));
          }
          current = rec.content().content_hash();
          Content& c = contents[current];
          c.owner = rec.content().owner_url();
          c.alias_count = rec.content().alias_count();
        } else if (rec.has_alias()) {
          if (rec.alias().content_hash() != current) {
            ledger_.Violation(absl::StrCat("export: alias ", rec.alias().url(), " of ",
                                           rec.alias().content_hash(),
                                           " without its content record"));
            continue;
          }
          contents[current].aliases.insert(rec.alias().url());
        }
      }
      return absl::OkStatus();
    });
    ASSERT_THAT(s, IsOk());
    if (!current.empty() && contents[current].aliases.size() != contents[current].alias_count) {
      ledger_.Violation(absl::StrCat("export: content ", current, " alias_count ",
                                     contents[current].alias_count, " but ",
                                     contents[current].aliases.size(), " aliases"));
    }
    for (const auto& [url, f] : ledger_.Urls()) {
      auto it = url_records.find(url);
      if (it == url_records.end()) {
        ledger_.Violation(absl::StrCat("export: no URL record for ", url));
      } else if (f.first_seen.has_value() && it->second != *f.first_seen) {
        ledger_.Violation(absl::StrCat("export: url ", url, " first_seen ", StampStr(it->second),
                                       ", acknowledged ", StampStr(*f.first_seen)));
      }
    }
    for (const auto& [hash, f] : ledger_.Texts()) {
      auto it = contents.find(hash);
      if (it == contents.end()) {
        ledger_.Violation(absl::StrCat("export: no content record for ", hash));
        continue;
      }
      if (it->second.owner != f.owner->url) {
        ledger_.Violation(absl::StrCat("export: content ", hash, " owner ", it->second.owner,
                                       ", acknowledged ", f.owner->url));
      }
      for (const std::string& url : f.urls) {
        if (url != it->second.owner && it->second.aliases.count(url) == 0) {
          ledger_.Violation(absl::StrCat("export: content ", hash, ": acknowledged URL ", url,
                                         " is neither owner nor alias"));
        }
      }
    }
    EXPECT_GT(url_records.size() + contents.size(), 0u);
  }

  Ledger ledger_;
};

TEST_F(E2eCrashTest, RepeatedKillMinus9KeepsEveryAcknowledgedClaimAndWholeRecords) {
  const uint64_t seed = Seed();
  std::cout << "e2e_crash: seed " << seed << " (replay: DEDUPD_CRASH_SEED=" << seed << ")\n";
  RecordProperty("seed", std::to_string(seed));
  Rng kill_rng(Mix(seed));
  int total_acked = 0, total_early_failures = 0;
  for (int round = 0; round < kKills; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round, ", seed ", seed));
    std::atomic<bool> stop{false}, killing{false};
    std::atomic<int> acked{0}, early_failures{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < kThreads; ++t) {
      const uint64_t thread_seed = Mix(seed ^ Mix(static_cast<uint64_t>(round * 64 + t + 1)));
      workers.emplace_back([&, t, thread_seed] {
        Work(t, round, thread_seed, stop, killing, &acked, &early_failures);
      });
    }
    // Kill at a random moment once some claims are acknowledged.
    const absl::Time begun = absl::Now();
    const absl::Time give_up = begun + kMaxLoadPerRound;
    while (acked.load() < kMinAcked && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    const int delay_ms = kill_rng.Below(kMaxKillDelayMs + 1);
    absl::SleepFor(std::min(absl::Milliseconds(delay_ms), give_up - absl::Now()));
    killing.store(true);
    const int acked_at_kill = acked.load();
    server_->Kill();
    stop.store(true);
    for (std::thread& w : workers) w.join();
    std::cout << "e2e_crash: round " << round << ": killed " << delay_ms << " ms after "
              << kMinAcked << " calls; " << acked.load() << " calls acknowledged (" << acked_at_kill
              << " at the kill)\n";
    total_acked += acked.load();
    total_early_failures += early_failures.load();
    EXPECT_GE(acked.load(), kMinAcked) << "the load did not get going";
    StartServer();
    Check(absl::StrCat("after kill ", round + 1));
    if (HasFailure()) break;  // one round's report is enough
  }
  const size_t urls = ledger_.Urls().size(), texts = ledger_.Texts().size(),
               chunks = ledger_.Chunks().size();
  std::cout << "e2e_crash: " << total_acked << " calls acknowledged; checked " << urls << " URLs, "
            << texts << " texts, " << chunks << " chunk texts; " << ledger_.violations()
            << " violations\n";
  EXPECT_EQ(total_early_failures, 0) << "calls failed before any kill";
  EXPECT_EQ(ledger_.violations(), 0u) << ledger_.ViolationText();
  // The check covered real work: shared claims raced, owners have aliases.
  EXPECT_GT(urls, 100u);
  EXPECT_GT(texts, 20u);
  EXPECT_GT(chunks, 20u);
}

}  // namespace
}  // namespace dedupd
