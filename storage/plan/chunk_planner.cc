#include "storage/plan/chunk_planner.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/text/simhash.h"
#include "storage/url_store.h"

namespace dedupd {

absl::Status CheckChunkDocument(const ChunkDocument& doc, int max_near_distance) {
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(doc.name_space));
  if (doc.document_url.empty()) {
    return absl::InvalidArgumentError("document_url is empty");
  }
  if (doc.document_url.find('\0') != std::string::npos) {
    // Normalized URLs never hold one; stores may use it as a separator.
    return absl::InvalidArgumentError("document_url holds a NUL byte");
  }
  absl::flat_hash_map<absl::string_view, size_t> seen;
  for (size_t i = 0; i < doc.chunks.size(); ++i) {
    const ChunkInput& c = doc.chunks[i];
    if (c.chunk_id.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, ": chunk id is empty"));
    }
    if (c.max_distance < -1 || c.max_distance > max_near_distance) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, ": max_distance ", c.max_distance,
                                                     " is outside [-1, ", max_near_distance, "]"));
    }
    if (!(c.min_jaccard >= 0 && c.min_jaccard <= 1)) {  // NaN fails both
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, " (\"", c.chunk_id,
                                                     "\"): min_jaccard ", c.min_jaccard,
                                                     " is outside [0, 1]"));
    }
    auto [it, inserted] = seen.emplace(c.chunk_id, i);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, ": chunk id \"", c.chunk_id,
                                                     "\" repeats chunk ", it->second, "'s"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ChunkHolder>> ListAllHolders(ChunkStateReader* reader,
                                                        const Sha256Digest& sha256,
                                                        const ChunkTextRecord& record,
                                                        size_t limit) {
  std::vector<ChunkHolder> out;
  if (limit == 0) return out;
  if (record.owner.has_value()) {
    out.push_back(*record.owner);
    --limit;
    if (limit == 0) return out;
  }
  DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> records, reader->ListHolders(sha256, limit));
  for (ChunkHolder& h : records) out.push_back(std::move(h));
  return out;
}

std::vector<Sha256Digest> ChunkLockShas(const ChunkDocument& doc,
                                        const std::optional<ChunkManifest>& stored) {
  std::vector<Sha256Digest> shas;
  for (const ChunkInput& c : doc.chunks) shas.push_back(c.sha256);
  if (stored.has_value()) {
    for (const StoredChunk& c : stored->chunks) shas.push_back(c.sha256);
  }
  std::sort(shas.begin(), shas.end());
  shas.erase(std::unique(shas.begin(), shas.end()), shas.end());
  return shas;
}

namespace {

// A chunk that may be duplicated: a stored holder of another document, or an
// earlier chunk of this call (`position` its index, else -1).
struct Candidate {
  int distance = 0;
  absl::Time added;  // reported as first_seen
  // Compared instead of `added`: a chunk of this call that takes no age
  // from the stored document is younger than every stored one, whatever
  // the clock says.
  absl::Time rank;
  int position = -1;  // -1: stored; stored ones win ties (they were first)
  std::string document_url;
  std::string chunk_id;
  uint64_t simhash = 0;
  bool hamming = true;   // within max_distance (every exact candidate is)
  bool jaccard = false;  // Jaccard (exact or estimated) >= min_jaccard
  double estimated_jaccard = 0;

  // As the content planner orders near texts: SimHash matches first,
  // nearest first; then Jaccard-only ones, highest Jaccard first; then
  // oldest, then stored before this call's.
  bool Before(const Candidate& o) const {
    if (hamming != o.hamming) return hamming;
    if (hamming && distance != o.distance) return distance < o.distance;
    if (!hamming && estimated_jaccard != o.estimated_jaccard) {
      return estimated_jaccard > o.estimated_jaccard;
    }
    if (rank != o.rank) return rank < o.rank;
    return position < o.position;
  }
  NearMeasure measure() const { return NearMeasureOf(hamming, jaccard); }
};

// Whether near matching by Jaccard is on for `chunk`.
bool UsesJaccard(const ChunkInput& chunk) {
  return chunk.min_jaccard > 0 && chunk.minhash.has_value();
}

// Fills c's Jaccard fields from the signature and shingle set of the
// candidate's text (`other`, `other_set`; each maybe none): the exact
// Jaccard of the two sets when both texts have one (the estimate passes
// only about half of the pairs at J = t: docs/benchmarks.md, "Exact
// verification for chunks"), else the estimate. An estimate
// kExactPrefilterMargin below the threshold is kept without merging the
// sets (the pair is not near by Jaccard; see kExactPrefilterMargin).
void MeasureJaccard(const ChunkInput& chunk, const std::optional<MinHashSignature>& other,
                    const ShingleSet32& other_set, Candidate* c) {
  std::optional<double> j = JaccardWhenAsked(chunk.min_jaccard, chunk.minhash, other);
  if (j.has_value() && *j >= chunk.min_jaccard - kExactPrefilterMargin && !chunk.shingles.empty() &&
      !other_set.empty()) {
    j = ExactJaccard(chunk.shingles, other_set);
  }
  c->estimated_jaccard = j.value_or(0);
  c->jaccard = j.has_value() && *j >= chunk.min_jaccard;
}

// Per-text facts the plan needs, read once per text.
struct TextState {
  std::optional<ChunkTextRecord> record;  // as stored before the call
  uint64_t own_old = 0;                   // this document's stored chunks holding it
  // The oldest holder in another document, once looked up.
  bool other_looked_up = false;
  std::optional<ChunkHolder> oldest_other;
};

class Planner {
 public:
  Planner(const ChunkDocument& doc, ChunkStateReader* reader) : doc_(doc), reader_(reader) {}

  // The pointer is valid until the next call of Text or OldestOther.
  absl::StatusOr<TextState*> Text(const Sha256Digest& sha) {
    auto it = texts_.find(sha);
    if (it != texts_.end()) return &it->second;
    TextState state;
    DEDUPD_ASSIGN_OR_RETURN(state.record, reader_->GetText(sha));
    auto own = own_old_.find(sha);
    state.own_old = own == own_old_.end() ? 0 : own->second;
    return &texts_.emplace(sha, std::move(state)).first->second;
  }

  // The oldest holder of `sha` outside this document, if any.
  absl::StatusOr<std::optional<ChunkHolder>> OldestOther(const Sha256Digest& sha) {
    DEDUPD_ASSIGN_OR_RETURN(TextState * t, Text(sha));
    if (t->other_looked_up) return t->oldest_other;
    t->other_looked_up = true;
    if (!t->record.has_value() || t->record->holders <= t->own_old) {
      return t->oldest_other;
    }
    const std::optional<ChunkHolder>& owner = t->record->owner;
    if (owner.has_value() && owner->document_url != doc_.document_url) {
      t->oldest_other = *owner;
      return t->oldest_other;
    }
    // This document's holders are the only ones to skip: at most own_old
    // of them come before the first other one.
    DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> holders,
                            ListAllHolders(reader_, sha, *t->record, t->own_old + 1));
    for (ChunkHolder& h : holders) {
      if (h.document_url != doc_.document_url) {
        t->oldest_other = std::move(h);
        break;
      }
    }
    if (!t->oldest_other.has_value()) {
      return absl::DataLossError(absl::StrCat("chunk text ", Sha256Hex(sha), " counts ",
                                              t->record->holders, " holders but none outside ",
                                              doc_.document_url, " is stored"));
    }
    return t->oldest_other;
  }

  void CountOwnOld(const ChunkManifest& old) {
    for (const StoredChunk& c : old.chunks) ++own_old_[c.sha256];
  }

 private:
  const ChunkDocument& doc_;
  ChunkStateReader* reader_;
  absl::flat_hash_map<Sha256Digest, uint64_t> own_old_;
  absl::flat_hash_map<Sha256Digest, TextState> texts_;
};

// How many index matches a near search resolves at first; when none of them
// has a holder outside the document, the search is repeated for all.
constexpr size_t kNearProbe = 16;

// PlanTextHolders adds to `mut` the records that change when a claim drops
// `gone` and adds `come` (this document's holders of text `sha`, each sorted
// oldest first) given the text's record as it was (`was_record`; nullopt: no
// chunk held the text, which is then recorded with `simhash`, `minhash`
// and, with a signature only, `shingles`): the text record with its holder count and owner (the
// oldest holder), the holder records of every other holder, and the index entry of a text that
// comes or goes.
absl::Status PlanTextHolders(const Sha256Digest& sha,
                             const std::optional<ChunkTextRecord>& was_record,
                             const std::vector<ChunkHolder>& gone,
                             const std::vector<ChunkHolder>& come, uint64_t simhash,
                             const std::optional<MinHashSignature>& minhash,
                             const ShingleSet32& shingles, absl::string_view document_url,
                             ChunkStateReader* reader, ChunkMutations* mut) {
  if (!was_record.has_value()) {
    if (!gone.empty()) {
      return absl::DataLossError(absl::StrCat("document ", document_url, " holds chunk text ",
                                              Sha256Hex(sha), " which has no text record"));
    }
    // A new text: its oldest holder is the owner, the others get records.
    DEDUPD_ASSIGN_OR_RETURN(uint32_t id, reader->AllocateTextId());
    ChunkTextRecord r{id, simhash, come.size(), come.front(), minhash};
    if (minhash.has_value()) r.shingles = shingles;
    for (size_t k = 1; k < come.size(); ++k) mut->holders_added.emplace_back(sha, come[k]);
    mut->fingerprints_added.emplace_back(id,
                                         FingerprintRecord{r.simhash, sha, r.minhash, r.shingles});
    mut->texts_put.emplace_back(sha, std::move(r));
    return absl::OkStatus();
  }
  const ChunkTextRecord& was = *was_record;
  if (was.holders < gone.size()) {
    return absl::DataLossError(absl::StrCat("chunk text ", Sha256Hex(sha), " counts ", was.holders,
                                            " holders but document ", document_url, " alone held ",
                                            gone.size()));
  }
  const uint64_t count = was.holders - gone.size() + come.size();
  const bool owner_gone =
      was.owner.has_value() && std::binary_search(gone.begin(), gone.end(), *was.owner);
  size_t gone_records = 0;  // the removed holders that have records
  for (const ChunkHolder& h : gone) {
    if (owner_gone && h == *was.owner) continue;
    mut->holders_removed.emplace_back(sha, h);
    ++gone_records;
  }
  if (count == 0) {
    mut->texts_deleted.emplace_back(sha, was);
    mut->fingerprints_removed.push_back({was.simhash, was.text_id});
    return absl::OkStatus();
  }
  // The new owner: the oldest of the old owner (if it stays), the oldest
  // remaining holder record (if the old owner goes, or the record names
  // none) and the oldest added holder.
  std::optional<ChunkHolder> owner;
  bool owner_has_record = false;
  if (was.owner.has_value() && !owner_gone) {
    owner = was.owner;
  } else if (count > come.size()) {
    // Some holder stays; the removed records are at most gone_records
    // of the records before the first that stays.
    DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> records,
                            reader->ListHolders(sha, gone_records + 1));
    for (ChunkHolder& h : records) {
      if (std::binary_search(gone.begin(), gone.end(), h)) continue;
      owner = std::move(h);
      owner_has_record = true;
      break;
    }
    if (!owner.has_value()) {
      return absl::DataLossError(absl::StrCat(
          "chunk text ", Sha256Hex(sha), " counts ", was.holders,
          " holders but none stays after document ", document_url, " drops its ", gone.size()));
    }
  }
  if (!come.empty() && (!owner.has_value() || come.front() < *owner)) {
    owner = come.front();
    owner_has_record = false;
  }
  for (const ChunkHolder& h : come) {
    if (!(h == *owner)) mut->holders_added.emplace_back(sha, h);
  }
  // A holder record that becomes the owner loses its record; an owner
  // that stays but is no longer the oldest gets one.
  if (owner_has_record) mut->holders_removed.emplace_back(sha, *owner);
  if (was.owner.has_value() && !owner_gone && !(*was.owner == *owner)) {
    mut->holders_added.emplace_back(sha, *was.owner);
  }
  ChunkTextRecord r = was;
  r.holders = count;
  r.owner = std::move(owner);
  if (!(r == was)) mut->texts_put.emplace_back(sha, std::move(r));
  return absl::OkStatus();
}

// The ages of a document's new chunks (one per chunk).
struct ChunkAges {
  // Recorded as the chunk's time added.
  std::vector<absl::Time> added;
  // Compared instead of `added` (Candidate::rank).
  std::vector<absl::Time> rank;
  // The chunk took the age of a stored chunk of this document.
  std::vector<bool> carried;
};

// CarryStoredAges: each new chunk keeps the age of a stored chunk of this
// document with the same text (oldest first), so re-sending a document does
// not make it younger than the documents that copied it; the others are
// added at `t`.
ChunkAges CarryStoredAges(const ChunkDocument& doc, const std::optional<ChunkManifest>& old,
                          absl::Time t) {
  absl::flat_hash_map<Sha256Digest, std::vector<absl::Time>> old_ages;
  if (old.has_value()) {
    for (const StoredChunk& c : old->chunks) {
      old_ages[c.sha256].push_back(c.added);
    }
    for (auto& [key, ages] : old_ages) {
      std::sort(ages.begin(), ages.end(), std::greater<absl::Time>());
    }
  }
  ChunkAges ages;
  ages.added.assign(doc.chunks.size(), t);
  ages.rank.assign(doc.chunks.size(), absl::InfiniteFuture());
  ages.carried.assign(doc.chunks.size(), false);
  for (size_t i = 0; i < doc.chunks.size(); ++i) {
    auto it = old_ages.find(doc.chunks[i].sha256);
    if (it == old_ages.end() || it->second.empty()) continue;
    ages.added[i] = ages.rank[i] = it->second.back();
    it->second.pop_back();
    ages.carried[i] = true;
  }
  return ages;
}

// The first chunk of the call with each text.
using FirstWithText = absl::flat_hash_map<Sha256Digest, size_t>;

// ExactCandidate returns what chunk `i` would duplicate exactly: the oldest
// holder of its text elsewhere, or an earlier chunk of this call with the
// same text, whichever is older. Makes a new holder younger than the
// text's oldest holder (ages->added[i]); registers chunk i in
// `first_with_text` when it is the first with its text.
absl::StatusOr<std::optional<Candidate>> ExactCandidate(const ChunkDocument& doc, size_t i,
                                                        Planner* planner, ChunkAges* ages,
                                                        FirstWithText* first_with_text) {
  const ChunkInput& chunk = doc.chunks[i];
  std::optional<Candidate> exact;
  DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkHolder> other, planner->OldestOther(chunk.sha256));
  if (other.has_value() && !ages->carried[i] && ages->added[i] <= other->added) {
    // The clocks of concurrent calls can disagree: a call that took `now`
    // earlier may record after another. A new holder is recorded as
    // younger than the text's oldest holder, so the chunk that was
    // answered kNew stays the owner.
    ages->added[i] = other->added + absl::Microseconds(1);
  }
  if (other.has_value()) {
    exact = Candidate{
        0, other->added, other->added, -1, other->document_url, other->chunk_id, chunk.simhash};
  }
  auto earlier = first_with_text->find(chunk.sha256);
  if (earlier != first_with_text->end()) {
    const size_t j = earlier->second;
    Candidate own{0,
                  ages->added[j],
                  ages->rank[j],
                  static_cast<int>(j),
                  doc.document_url,
                  doc.chunks[j].chunk_id,
                  chunk.simhash};
    if (!exact.has_value() || own.Before(*exact)) exact = std::move(own);
  } else {
    first_with_text->emplace(chunk.sha256, i);
  }
  return exact;
}

// NearCandidate returns the nearest text within chunk `i`'s max_distance:
// a stored one (from the index, whose matches of this chunk's own text are
// this document's) or an earlier chunk of this call; ties by age. When
// there is none and the chunk uses Jaccard, the text with the highest
// verified Jaccard >= min_jaccard among the LSH candidates and the
// earlier chunks of this call; ties by age (Candidate::Before).
absl::StatusOr<std::optional<Candidate>> NearCandidate(const ChunkDocument& doc, size_t i,
                                                       const ChunkAges& ages,
                                                       const FirstWithText& first_with_text,
                                                       Planner* planner, ChunkStateReader* reader) {
  const ChunkInput& chunk = doc.chunks[i];
  std::optional<Candidate> near;
  size_t total = 0;
  size_t limit = kNearProbe;
  for (int pass = 0; pass < 2 && !near.has_value(); ++pass) {
    std::vector<SimHashIndex::Match> matches =
        reader->QueryNear(chunk.simhash, chunk.max_distance, limit, &total);
    for (const SimHashIndex::Match& m : matches) {
      if (near.has_value() && m.distance > near->distance) break;
      DEDUPD_ASSIGN_OR_RETURN(FingerprintRecord fp, reader->GetTextFingerprint(m.id));
      if (fp.sha256 == chunk.sha256) continue;  // only this document's
      DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkHolder> holder, planner->OldestOther(fp.sha256));
      if (!holder.has_value()) continue;
      Candidate c{m.distance,           holder->added,    holder->added, -1,
                  holder->document_url, holder->chunk_id, m.fingerprint};
      MeasureJaccard(chunk, fp.minhash, fp.shingles, &c);
      if (!near.has_value() || c.Before(*near)) near = std::move(c);
    }
    if (total <= limit) break;
    limit = total;
  }
  for (const auto& [key, j] : first_with_text) {
    if (j >= i) continue;
    const ChunkInput& earlier = doc.chunks[j];
    if (earlier.sha256 == chunk.sha256) continue;
    const int d = HammingDistance(chunk.simhash, earlier.simhash);
    Candidate c{d,
                ages.added[j],
                ages.rank[j],
                static_cast<int>(j),
                doc.document_url,
                earlier.chunk_id,
                earlier.simhash,
                d <= chunk.max_distance};
    MeasureJaccard(chunk, earlier.minhash, earlier.shingles, &c);
    if (!c.hamming && !c.jaccard) continue;
    if (!near.has_value() || c.Before(*near)) near = std::move(c);
  }
  // A SimHash match beats every Jaccard-only one: the LSH candidates
  // matter only without one.
  if ((near.has_value() && near->hamming) || !UsesJaccard(chunk)) return near;
  // A chunk verified exactly (it has a shingle set) still skips, unread,
  // the candidates whose estimate is kExactPrefilterMargin below the
  // threshold; verified by the estimate, the filter is the verification.
  const double min_estimate =
      chunk.shingles.empty() ? chunk.min_jaccard : chunk.min_jaccard - kExactPrefilterMargin;
  for (uint32_t id : reader->QueryJaccardCandidates(*chunk.minhash, min_estimate)) {
    DEDUPD_ASSIGN_OR_RETURN(FingerprintRecord fp, reader->GetTextFingerprint(id));
    if (fp.sha256 == chunk.sha256) continue;  // only this document's
    const int d = HammingDistance(chunk.simhash, fp.simhash);
    // Within max_distance: the SimHash search above saw it.
    if (d <= chunk.max_distance) continue;
    Candidate c{d, absl::InfinitePast(), absl::InfinitePast(), -1, "", "", fp.simhash, false};
    MeasureJaccard(chunk, fp.minhash, fp.shingles, &c);
    if (!c.jaccard || (near.has_value() && near->Before(c))) continue;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkHolder> holder, planner->OldestOther(fp.sha256));
    if (!holder.has_value()) continue;
    c.added = c.rank = holder->added;
    c.document_url = holder->document_url;
    c.chunk_id = holder->chunk_id;
    if (!near.has_value() || c.Before(*near)) near = std::move(c);
  }
  return near;
}

void SetDuplicate(ChunkVerdict verdict, const Candidate& c, ChunkOutcome* out) {
  out->verdict = verdict;
  out->duplicate_document_url = c.document_url;
  out->duplicate_chunk_id = c.chunk_id;
  out->duplicate_simhash = c.simhash;
  out->distance = c.distance;
  out->first_seen = c.added;
  out->estimated_jaccard = c.estimated_jaccard;
  out->measure = c.measure();
}

// AnswerChunks decides every chunk's outcome (ages->added may move later,
// see ExactCandidate).
absl::Status AnswerChunks(const ChunkDocument& doc, bool claim, Planner* planner,
                          ChunkStateReader* reader, ChunkAges* ages, ChunkAnswer* answer) {
  FirstWithText first_with_text;
  first_with_text.reserve(doc.chunks.size());
  for (size_t i = 0; i < doc.chunks.size(); ++i) {
    const ChunkInput& chunk = doc.chunks[i];
    ChunkOutcome& out = answer->outcomes[i];
    DEDUPD_ASSIGN_OR_RETURN(TextState * text, planner->Text(chunk.sha256));
    out.other_holders = text->record.has_value() && text->record->holders > text->own_old
                            ? text->record->holders - text->own_old
                            : 0;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<Candidate> exact,
                            ExactCandidate(doc, i, planner, ages, &first_with_text));
    if (exact.has_value() && exact->rank <= ages->rank[i]) {
      SetDuplicate(ChunkVerdict::kExactDuplicate, *exact, &out);
      continue;
    }
    // A text stored elsewhere but younger than this document's copy: this
    // document owns it, whatever is near it.
    std::optional<Candidate> near;
    if (!exact.has_value() && chunk.max_distance >= 0) {
      DEDUPD_ASSIGN_OR_RETURN(near, NearCandidate(doc, i, *ages, first_with_text, planner, reader));
    }
    if (near.has_value()) {
      SetDuplicate(ChunkVerdict::kNearDuplicate, *near, &out);
    } else {
      out.verdict = ChunkVerdict::kNew;
      if (claim || ages->carried[i]) out.first_seen = ages->added[i];
    }
  }
  return absl::OkStatus();
}

// PlanReplacement collects the records that replace the document's stored
// chunks (`old`) with its new ones, added at `added`; a manifest it writes
// keeps `claim`.
absl::Status PlanReplacement(const ChunkDocument& doc, const std::optional<ChunkManifest>& old,
                             const std::vector<absl::Time>& added,
                             std::optional<ManifestClaim> claim, Planner* planner,
                             ChunkStateReader* reader, ChunkMutations* mut) {
  ChunkManifest next;
  next.chunks.reserve(doc.chunks.size());
  for (size_t i = 0; i < doc.chunks.size(); ++i) {
    const ChunkInput& c = doc.chunks[i];
    next.chunks.push_back({c.chunk_id, c.sha256, c.simhash, added[i]});
  }
  next.claim = std::move(claim);
  const ChunkManifest no_chunks;
  const ChunkManifest& before = old.has_value() ? *old : no_chunks;
  // Holders: the difference between the old and the new set, by text.
  using Held = std::pair<Sha256Digest, ChunkHolder>;
  auto less = [](const Held& a, const Held& b) {
    return std::tie(a.first, a.second) < std::tie(b.first, b.second);
  };
  auto holders_of = [&](const ChunkManifest& m) {
    std::vector<Held> out;
    out.reserve(m.chunks.size());
    for (const StoredChunk& c : m.chunks) {
      out.push_back({c.sha256, {c.added, doc.document_url, c.chunk_id}});
    }
    std::sort(out.begin(), out.end(), less);
    return out;
  };
  const std::vector<Held> old_holders = holders_of(before);
  const std::vector<Held> new_holders = holders_of(next);
  std::vector<Held> removed;
  std::vector<Held> added_holders;
  std::set_difference(old_holders.begin(), old_holders.end(), new_holders.begin(),
                      new_holders.end(), std::back_inserter(removed), less);
  std::set_difference(new_holders.begin(), new_holders.end(), old_holders.begin(),
                      old_holders.end(), std::back_inserter(added_holders), less);
  if (next.chunks.empty()) {
    mut->delete_manifest = old.has_value();
  } else if (!(next.chunks == before.chunks)) {
    // Unchanged chunks write nothing, and keep the claim that wrote them:
    // this call's answer (all replaced, none removed) is what any re-send
    // of them gets, its retries included.
    mut->manifest = std::move(next);
  }
  // A new text's SimHash, signature and set: those of its first chunk
  // with a signature, else of its first chunk (the same text gives the
  // same fingerprints; only whether a chunk sent them differs).
  struct Fingerprints {
    uint64_t simhash;
    const ChunkInput* signed_by;  // the chunk whose signature and set the text keeps
  };
  absl::flat_hash_map<Sha256Digest, Fingerprints> simhash_of;
  simhash_of.reserve(doc.chunks.size());
  for (const ChunkInput& c : doc.chunks) {
    auto [it, inserted] = simhash_of.try_emplace(c.sha256, Fingerprints{c.simhash, &c});
    if (!inserted && !it->second.signed_by->minhash.has_value()) it->second.signed_by = &c;
  }
  const std::optional<MinHashSignature> no_signature;
  const ShingleSet32 no_set;
  // Text records, in SHA-256 order (deterministic ids and writes): both
  // lists are sorted by text, then holder, so each text's removed and
  // added holders are one run of each, oldest first.
  auto r_it = removed.begin();
  auto a_it = added_holders.begin();
  while (r_it != removed.end() || a_it != added_holders.end()) {
    const Sha256Digest sha = r_it == removed.end()         ? a_it->first
                             : a_it == added_holders.end() ? r_it->first
                                                           : std::min(r_it->first, a_it->first);
    std::vector<ChunkHolder> gone;  // this text's removed holders, oldest first
    for (; r_it != removed.end() && r_it->first == sha; ++r_it) gone.push_back(r_it->second);
    std::vector<ChunkHolder> come;  // its added ones, oldest first
    for (; a_it != added_holders.end() && a_it->first == sha; ++a_it) {
      come.push_back(a_it->second);
    }
    DEDUPD_ASSIGN_OR_RETURN(TextState * text, planner->Text(sha));
    auto simhash = simhash_of.find(sha);  // absent: a text the document drops
    const bool sent = simhash != simhash_of.end();
    DEDUPD_RETURN_IF_ERROR(PlanTextHolders(
        sha, text->record, gone, come, sent ? simhash->second.simhash : 0,
        sent ? simhash->second.signed_by->minhash : no_signature,
        sent ? simhash->second.signed_by->shingles : no_set, doc.document_url, reader, mut));
  }
  return absl::OkStatus();
}

// IsRetry returns whether `doc` retries the claim `stored` keeps: the same
// claim id hash, within the retention after that claim, with the same
// chunks (ids and texts, in order) that claim stored.
bool IsRetry(const ChunkDocument& doc, const std::optional<ChunkManifest>& stored, absl::Time now) {
  if (doc.claim_id_hash == 0 || !stored.has_value() || !stored->claim.has_value()) return false;
  const ManifestClaim& c = *stored->claim;
  if (c.claim_id_hash != doc.claim_id_hash || now - c.claimed > doc.claim_id_retention) {
    return false;
  }
  if (doc.chunks.size() != stored->chunks.size()) return false;
  for (size_t i = 0; i < doc.chunks.size(); ++i) {
    if (doc.chunks[i].chunk_id != stored->chunks[i].chunk_id ||
        doc.chunks[i].sha256 != stored->chunks[i].sha256) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Status PlanChunkDocument(const ChunkDocument& doc, bool claim, absl::Time now,
                               ChunkStateReader* reader, ChunkPlan* plan) {
  DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkManifest> stored,
                          reader->GetManifest(doc.document_url));
  return PlanChunkDocument(doc, claim, now, stored, reader, plan);
}

absl::Status PlanChunkDocument(const ChunkDocument& doc, bool claim, absl::Time now,
                               const std::optional<ChunkManifest>& stored, ChunkStateReader* reader,
                               ChunkPlan* plan) {
  const absl::Time t = absl::FromUnixMicros(absl::ToUnixMicros(now));
  plan->answer = ChunkAnswer{};
  plan->mutations = ChunkMutations{};
  plan->answer.outcomes.assign(doc.chunks.size(), ChunkOutcome{});
  Planner planner(doc, reader);
  if (stored.has_value()) {
    planner.CountOwnOld(*stored);
    plan->answer.replaced_chunks = stored->chunks.size();
    absl::flat_hash_map<absl::string_view, const Sha256Digest*> sent;
    sent.reserve(doc.chunks.size());
    for (const ChunkInput& c : doc.chunks) sent.emplace(c.chunk_id, &c.sha256);
    for (const StoredChunk& old : stored->chunks) {
      auto it = sent.find(old.chunk_id);
      if (it == sent.end() || *it->second != old.sha256) {
        plan->answer.removed_chunk_ids.push_back(old.chunk_id);
      }
    }
  }
  if (IsRetry(doc, stored, t)) {
    // The chunks are the stored ones, so a claim writes nothing: the
    // answer the first attempt lost is the one kept.
    plan->answer.retry = true;
    plan->answer.replaced_chunks = stored->claim->replaced_chunks;
    plan->answer.removed_chunk_ids = stored->claim->removed_chunk_ids;
  }
  ChunkAges ages = CarryStoredAges(doc, stored, t);
  DEDUPD_RETURN_IF_ERROR(AnswerChunks(doc, claim, &planner, reader, &ages, &plan->answer));
  if (!claim) return absl::OkStatus();
  std::optional<ManifestClaim> kept;
  if (doc.claim_id_hash != 0) {
    kept = ManifestClaim{doc.claim_id_hash, t, plan->answer.replaced_chunks,
                         plan->answer.removed_chunk_ids};
  }
  return PlanReplacement(doc, stored, ages.added, std::move(kept), &planner, reader,
                         &plan->mutations);
}

}  // namespace dedupd
