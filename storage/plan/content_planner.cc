#include "storage/plan/content_planner.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/text/simhash.h"
#include "storage/document_key.h"

namespace dedupd {
namespace {

// A near match before its owner is resolved: SimHash matches (hamming)
// first, by (distance, doc_id), i.e. nearest first, then oldest first;
// then Jaccard-only matches by (estimated Jaccard descending, doc_id).
struct Candidate {
  int distance;
  uint32_t doc_id;
  uint64_t simhash;
  Sha256Digest sha256;
  bool hamming;  // within max_distance
  bool jaccard;  // estimated Jaccard >= min_jaccard
  double estimated_jaccard;
  bool operator<(const Candidate& o) const {
    if (hamming != o.hamming) return hamming;
    if (hamming) return distance != o.distance ? distance < o.distance : doc_id < o.doc_id;
    if (estimated_jaccard != o.estimated_jaccard) return estimated_jaccard > o.estimated_jaccard;
    return doc_id < o.doc_id;
  }
  NearMeasure measure() const { return NearMeasureOf(hamming, jaccard); }
};

// A text recorded earlier in this batch (not in the index yet).
struct BatchText {
  uint32_t doc_id;
  uint64_t simhash;
  Sha256Digest sha256;
  std::optional<MinHashSignature> minhash;
};

// Whether near matching by Jaccard is on for `doc`.
bool UsesJaccard(const ContentDoc& doc) { return doc.min_jaccard > 0 && doc.minhash.has_value(); }

// Fills c's Jaccard fields from the stored signature `stored` (if any).
void MeasureJaccard(const ContentDoc& doc, const std::optional<MinHashSignature>& stored,
                    Candidate* c) {
  const std::optional<double> j = JaccardWhenAsked(doc.min_jaccard, doc.minhash, stored);
  c->estimated_jaccard = j.value_or(0);
  c->jaccard = j.has_value() && *j >= doc.min_jaccard;
}

// The batch's own writes, consulted before the reader.
class Overlay {
 public:
  explicit Overlay(ContentStateReader* reader) : reader_(reader) {}

  absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha) {
    if (const ContentRecord* own = FindOwn(sha)) return *own;
    return reader_->GetContent(sha);
  }
  // The record this batch wrote for `sha`, or null.
  const ContentRecord* FindOwn(const Sha256Digest& sha) const {
    auto it = contents_.find(DigestKey(sha));
    return it == contents_.end() ? nullptr : &it->second;
  }
  void PutContent(const Sha256Digest& sha, ContentRecord record) {
    std::string key = DigestKey(sha);
    if (!contents_.contains(key)) content_order_.push_back(sha);
    contents_[key] = std::move(record);
  }

  // `stored_aliases`: whether the store held alias records of the text
  // before the batch (only then is the reader asked).
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha, bool stored_aliases,
                                absl::string_view url) {
    auto it = aliases_.find(DigestKey(sha));
    if (it != aliases_.end() && it->second.contains(url)) return true;
    if (!stored_aliases) return false;
    return reader_->HasAlias(sha, url);
  }
  void AddAlias(const Sha256Digest& sha, const std::string& url, absl::Time t,
                ContentMutations* out) {
    aliases_[DigestKey(sha)].insert(url);
    out->aliases.push_back({sha, url, t});
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(const Sha256Digest& sha, bool stored_aliases,
                                                       size_t limit) {
    std::vector<std::string> stored;
    if (stored_aliases && limit > 0) {
      DEDUPD_ASSIGN_OR_RETURN(stored, reader_->ListAliases(sha, limit));
    }
    auto it = aliases_.find(DigestKey(sha));
    if (it == aliases_.end()) return stored;
    // The reader's list is the first `limit` stored aliases in byte order;
    // the first `limit` of its union with the batch's are the answer.
    std::vector<std::string> merged;
    std::set_union(stored.begin(), stored.end(), it->second.begin(), it->second.end(),
                   std::back_inserter(merged));
    if (merged.size() > limit) merged.resize(limit);
    return merged;
  }

  absl::StatusOr<std::optional<FetchRecord>> GetFetch(const std::string& url) {
    auto it = fetches_.find(url);
    if (it != fetches_.end()) return it->second;
    return reader_->GetFetch(url);
  }
  void PutFetch(const std::string& url, const FetchRecord& record) {
    if (!fetches_.contains(url)) fetch_order_.push_back(url);
    fetches_[url] = record;
  }

  // Adds `url` to the seen-set unless it is there already.
  absl::Status SeeUrl(const std::string& url, absl::Time t, ContentMutations* out) {
    // A document id is not a URL: the URL seen-set never holds one.
    if (IsDocumentIdKey(url)) return absl::OkStatus();
    if (!urls_.insert(url).second) return absl::OkStatus();
    DEDUPD_ASSIGN_OR_RETURN(bool seen, reader_->HasUrl(url));
    if (!seen) out->urls.emplace_back(url, t);
    return absl::OkStatus();
  }

  // Moves the final content and fetch records into `out`.
  void Finish(ContentMutations* out) {
    for (const Sha256Digest& sha : content_order_) {
      out->contents.emplace_back(sha, std::move(contents_[DigestKey(sha)]));
    }
    for (const std::string& url : fetch_order_) {
      out->fetches.emplace_back(url, fetches_[url]);
    }
  }

 private:
  ContentStateReader* reader_;
  absl::flat_hash_map<std::string, ContentRecord> contents_;
  std::vector<Sha256Digest> content_order_;
  absl::flat_hash_map<std::string, absl::btree_set<std::string>> aliases_;
  absl::flat_hash_map<std::string, FetchRecord> fetches_;
  std::vector<std::string> fetch_order_;
  absl::flat_hash_set<std::string> urls_;
};

// Fills outcome->near_matches / near_match_count from the index and the
// batch's earlier texts.
absl::Status FindNear(const ContentDoc& doc, const ContentLimits& limits,
                      absl::Span<const BatchText> batch_texts, ContentStateReader* reader,
                      Overlay* overlay, ContentOutcome* outcome) {
  size_t total = 0;
  std::vector<SimHashIndex::Match> indexed = reader->QueryNear(
      doc.simhash, doc.max_distance, std::max<size_t>(limits.max_near_matches, 1), &total);
  std::vector<Candidate> candidates;
  candidates.reserve(indexed.size() + batch_texts.size());
  absl::flat_hash_set<uint32_t> listed;
  for (const SimHashIndex::Match& m : indexed) {
    DEDUPD_ASSIGN_OR_RETURN(FingerprintRecord fp, reader->GetFingerprint(m.id));
    Candidate c{m.distance, m.id, m.fingerprint, fp.sha256, true, false, 0};
    MeasureJaccard(doc, fp.minhash, &c);
    candidates.push_back(c);
    listed.insert(m.id);
  }
  for (const BatchText& t : batch_texts) {
    const int d = HammingDistance(doc.simhash, t.simhash);
    Candidate c{d, t.doc_id, t.simhash, t.sha256, d <= doc.max_distance, false, 0};
    MeasureJaccard(doc, t.minhash, &c);
    if (!c.hamming && !c.jaccard) continue;
    ++total;
    candidates.push_back(c);
  }
  if (UsesJaccard(doc)) {
    // Verified LSH candidates. One within max_distance is a SimHash match
    // already counted in `total` (listed above, or beyond the index's
    // limit): it counts once.
    for (uint32_t id : reader->QueryJaccardCandidates(*doc.minhash, doc.min_jaccard)) {
      if (listed.contains(id)) continue;
      DEDUPD_ASSIGN_OR_RETURN(FingerprintRecord fp, reader->GetFingerprint(id));
      const int d = HammingDistance(doc.simhash, fp.simhash);
      Candidate c{d, id, fp.simhash, fp.sha256, d <= doc.max_distance, false, 0};
      MeasureJaccard(doc, fp.minhash, &c);
      if (c.hamming) continue;  // counted, and listed if within the limit
      if (!c.jaccard) continue;
      ++total;
      candidates.push_back(c);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  outcome->near_match_count = total;
  // The nearest match names the owner even when none may be listed
  // (max_near_matches = 0).
  const size_t resolve = std::min(candidates.size(), std::max<size_t>(limits.max_near_matches, 1));
  for (size_t i = 0; i < resolve; ++i) {
    const Candidate& c = candidates[i];
    DEDUPD_ASSIGN_OR_RETURN(std::optional<ContentRecord> record, overlay->GetContent(c.sha256));
    if (!record.has_value()) {
      return absl::DataLossError(absl::StrCat("fingerprint ", c.doc_id, " names text ",
                                              Sha256Hex(c.sha256), " which has no content record"));
    }
    if (i == 0) {
      outcome->owner_url = record->owner_url;
      outcome->first_seen = record->first_seen;
    }
    if (i < limits.max_near_matches) {
      outcome->near_matches.push_back(
          {record->owner_url, c.simhash, c.distance, c.sha256, c.estimated_jaccard, c.measure()});
    }
  }
  return absl::OkStatus();
}

// IsRetry returns whether `doc` retries the claim that recorded `stored`
// as kNew: the same claim id hash, the same identity URL (still the owner),
// within the retention after the text's first_seen (the claim's `now`).
bool IsRetry(const ContentDoc& doc, const ContentRecord& stored, absl::Time now) {
  return doc.claim_id_hash != 0 && stored.claim_id_hash == doc.claim_id_hash &&
         stored.owner_url == doc.identity_url && now - stored.first_seen <= doc.claim_id_retention;
}

}  // namespace

absl::Status PlanContentBatch(absl::Span<const ContentDoc> docs, bool claim,
                              const ContentLimits& limits, absl::Time now,
                              ContentStateReader* reader, ContentPlan* plan) {
  const absl::Time t = absl::FromUnixMicros(absl::ToUnixMicros(now));
  plan->outcomes.assign(docs.size(), ContentOutcome{});
  plan->mutations = ContentMutations{};
  ContentMutations& mut = plan->mutations;
  // In peek mode the overlay stays empty: each document is answered
  // against the stored state alone, as CheckUrl's peek does.
  Overlay overlay(reader);
  std::vector<BatchText> batch_texts;
  // The texts a claim batch answered as a retry: a repeat after the first
  // is an exact duplicate, as it was in the claim being retried.
  absl::flat_hash_set<std::string> retried;

  for (size_t i = 0; i < docs.size(); ++i) {
    const ContentDoc& doc = docs[i];
    ContentOutcome& out = plan->outcomes[i];

    DEDUPD_ASSIGN_OR_RETURN(std::optional<FetchRecord> fetch, overlay.GetFetch(doc.fetched_url));
    if (!fetch.has_value()) {
      out.recrawl = RecrawlStatus::kFirstSeen;
    } else {
      out.recrawl =
          fetch->sha256 == doc.sha256 ? RecrawlStatus::kUnchanged : RecrawlStatus::kChanged;
    }

    DEDUPD_ASSIGN_OR_RETURN(std::optional<ContentRecord> record, reader->GetContent(doc.sha256));
    // Alias records of the text exist in the store only when its stored
    // record counts some: then (and only then) the reader is asked.
    const bool stored_aliases = record.has_value() && record->alias_count > 0;
    const bool retry = record.has_value() && IsRetry(doc, *record, t) &&
                       (!claim || retried.insert(DigestKey(doc.sha256)).second);
    if (const ContentRecord* own = overlay.FindOwn(doc.sha256)) record = *own;
    if (record.has_value()) {
      out.verdict = ContentVerdict::kExactDuplicate;
      out.owner_url = record->owner_url;
      out.first_seen = record->first_seen;
      if (claim) {
        bool changed = false;
        for (const std::string* url : {&doc.identity_url, &doc.fetched_url}) {
          if (*url == record->owner_url) continue;
          DEDUPD_ASSIGN_OR_RETURN(bool known, overlay.HasAlias(doc.sha256, stored_aliases, *url));
          if (known) continue;
          overlay.AddAlias(doc.sha256, *url, t, &mut);
          ++record->alias_count;
          changed = true;
        }
        if (changed) overlay.PutContent(doc.sha256, *record);
      }
      out.alias_count = record->alias_count;
      if (retry) {
        out.verdict = ContentVerdict::kNew;
        out.retry = true;
        // The fetch record is still the claim's when it took this hash at
        // the claim's time: the claim answered FIRST_SEEN or CHANGED.
        if (fetch.has_value() && fetch->sha256 == doc.sha256 &&
            fetch->hash_since == record->first_seen) {
          out.recrawl = fetch->first_fetch == fetch->hash_since ? RecrawlStatus::kFirstSeen
                                                                : RecrawlStatus::kChanged;
        }
      }
    } else {
      DEDUPD_RETURN_IF_ERROR(FindNear(doc, limits, batch_texts, reader, &overlay, &out));
      if (out.near_match_count > 0) {
        out.verdict = ContentVerdict::kNearDuplicate;
      } else {
        out.verdict = ContentVerdict::kNew;
        out.owner_url = doc.identity_url;
        out.first_seen = t;
      }
      if (claim) {
        DEDUPD_ASSIGN_OR_RETURN(uint32_t id, reader->AllocateDocId());
        ContentRecord fresh;
        fresh.doc_id = id;
        fresh.simhash = doc.simhash;
        fresh.first_seen = t;
        fresh.owner_url = doc.identity_url;
        // Only a kNew claim answers its retries (ContentStore::CheckContent).
        if (out.verdict == ContentVerdict::kNew) fresh.claim_id_hash = doc.claim_id_hash;
        if (doc.fetched_url != doc.identity_url) {
          overlay.AddAlias(doc.sha256, doc.fetched_url, t, &mut);
          fresh.alias_count = 1;
        }
        if (out.verdict == ContentVerdict::kNew) {
          out.alias_count = fresh.alias_count;
        }
        overlay.PutContent(doc.sha256, std::move(fresh));
        mut.fingerprints.emplace_back(id, FingerprintRecord{doc.simhash, doc.sha256, doc.minhash});
        batch_texts.push_back({id, doc.simhash, doc.sha256, doc.minhash});
      }
    }
    if (out.verdict != ContentVerdict::kNearDuplicate) {
      DEDUPD_ASSIGN_OR_RETURN(out.aliases,
                              overlay.ListAliases(doc.sha256, stored_aliases, limits.max_aliases));
    }

    if (claim) {
      // Only a first fetch, a changed hash or changed validators are
      // written: a batch of unchanged re-crawls of known texts (with the
      // same ETag and Last-Modified) then writes nothing at all.
      const bool changed = !fetch.has_value() || fetch->sha256 != doc.sha256;
      if (changed || fetch->etag != doc.etag || fetch->last_modified != doc.last_modified) {
        FetchRecord next;
        next.sha256 = doc.sha256;
        next.first_fetch = fetch.has_value() ? fetch->first_fetch : t;
        next.hash_since = changed ? t : fetch->hash_since;
        next.etag = doc.etag;
        next.last_modified = doc.last_modified;
        overlay.PutFetch(doc.fetched_url, next);
      }
      DEDUPD_RETURN_IF_ERROR(overlay.SeeUrl(doc.identity_url, t, &mut));
      DEDUPD_RETURN_IF_ERROR(overlay.SeeUrl(doc.fetched_url, t, &mut));
    }
  }
  overlay.Finish(&mut);
  return absl::OkStatus();
}

}  // namespace dedupd
