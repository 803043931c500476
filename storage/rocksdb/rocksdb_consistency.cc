// RocksDbStore::CheckConsistency: the invariants that tie the record kinds
// together, checked over one snapshot. Three steps: read every record into
// memory (Records), check each layer's invariants against it, and compare
// the in-memory indexes with the fingerprint records.

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "storage/document_key.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {
namespace {

constexpr absl::string_view kCheck = "check consistency of store";
constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;

std::string Hex(absl::string_view bytes) { return PrintableKey(bytes); }
std::string ShaHex(absl::string_view digest_key) { return absl::BytesToHexString(digest_key); }
Sha256Digest DigestOf(const std::string& digest_key) {
  Sha256Digest d{};
  std::memcpy(d.data(), digest_key.data(), d.size());
  return d;
}

// Problems collects the report's lines: the first kMaxProblems, then a
// count of the rest.
class Problems {
 public:
  explicit Problems(ConsistencyReport* report) : report_(report) {}
  void Add(std::string line) {
    if (report_->problems.size() < ConsistencyReport::kMaxProblems) {
      report_->problems.push_back(std::move(line));
    } else {
      ++more_;
    }
  }
  void Finish() {
    if (more_ > 0) report_->problems.push_back(absl::StrCat("... and ", more_, " more"));
  }

 private:
  ConsistencyReport* const report_;
  size_t more_ = 0;
};

// Every decoded record of one namespace in one snapshot; per-text maps are
// keyed by DigestKey.
struct Records {
  absl::flat_hash_set<std::string> urls;
  absl::flat_hash_map<std::string, ContentRecord> contents;
  absl::flat_hash_map<std::string, std::vector<std::string>> aliases;
  uint64_t alias_records = 0;
  absl::flat_hash_map<uint32_t, FingerprintRecord> fingerprints;
  absl::flat_hash_map<std::string, FetchRecord> fetches;
  absl::flat_hash_map<std::string, std::vector<StoredChunk>> manifests;
  absl::flat_hash_map<std::string, fmt::ChunkTextByIdValue> chunk_texts;
  absl::flat_hash_map<std::string, uint32_t> chunk_text_ids;
  std::vector<fmt::ChunkHolderKey> holders;
  // The chunk index's entries as the text records imply them.
  absl::flat_hash_map<uint32_t, FingerprintRecord> chunk_fingerprints;
};

// The records of every namespace, by name ("": the empty namespace).
using SpaceRecords = absl::flat_hash_map<std::string, Records>;

// ReadUrlRecords reads the default family's URL records into `spaces`.
absl::Status ReadUrlRecords(rocksdb::DB* db, const rocksdb::ReadOptions& read,
                            const std::string& path, SpaceRecords* spaces, Problems* problems) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, db->DefaultColumnFamily()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    if (key == fmt::EncodeMetaKey()) continue;
    absl::StatusOr<fmt::UrlKey> url = fmt::DecodeAnyUrlKey(key);
    absl::StatusOr<UrlRecord> record =
        fmt::DecodeUrlRecord(absl::string_view(it->value().data(), it->value().size()));
    if (!url.ok() || !record.ok()) {
      problems->Add(absl::StrCat("URL record ", Hex(key), ": ",
                                 (!url.ok() ? url.status() : record.status()).message()));
      continue;
    }
    (*spaces)[url->name_space].urls.emplace(url->url);
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kCheck, path);
  return absl::OkStatus();
}

// AddContentLayerRecord decodes one record of tags 02, 03, 04 or 06 into `r`;
// `bad` reports a record that does not decode.
template <typename Bad>
void AddContentLayerRecord(absl::string_view key, absl::string_view value, Records* r,
                           const Bad& bad) {
  const char tag = key[0];
  if (tag == fmt::kTagContent) {
    absl::StatusOr<ContentRecord> v = fmt::DecodeContentValue(value);
    if (key.size() != 1 + kShaBytes) {
      bad("content record", absl::DataLossError("key is not 02 + SHA-256"));
    } else if (!v.ok()) {
      bad("content record", v.status());
    } else {
      r->contents.emplace(std::string(key.substr(1)), *std::move(v));
    }
  } else if (tag == fmt::kTagAlias) {
    absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
    absl::StatusOr<absl::Time> added = fmt::DecodeAliasValue(value);
    if (!url.ok() || !added.ok()) {
      bad("alias record", !url.ok() ? url.status() : added.status());
    } else {
      r->aliases[std::string(key.substr(1, kShaBytes))].emplace_back(*url);
      ++r->alias_records;
    }
  } else if (tag == fmt::kTagFingerprint) {
    absl::StatusOr<uint32_t> id = fmt::DecodeFingerprintKey(key);
    absl::StatusOr<FingerprintRecord> v = fmt::DecodeFingerprintValue(value);
    if (!id.ok() || !v.ok()) {
      bad("fingerprint record", !id.ok() ? id.status() : v.status());
    } else {
      r->fingerprints.emplace(*id, *v);
    }
  } else {  // kTagFetch
    absl::StatusOr<FetchRecord> v = fmt::DecodeFetchValue(value);
    if (key.size() < 2 || !v.ok()) {
      bad("fetch record", v.ok() ? absl::DataLossError("no URL") : v.status());
    } else {
      r->fetches.emplace(std::string(key.substr(1)), *v);
    }
  }
}

// AddChunkRecord decodes one record of tag 05 into `r`; `bad` reports a
// record that does not decode.
template <typename Bad>
void AddChunkRecord(absl::string_view key, absl::string_view value, Records* r, const Bad& bad) {
  const char sub = key.size() < 2 ? '\xff' : key[1];
  if (sub == fmt::kChunkManifest) {
    absl::StatusOr<ChunkManifest> v = fmt::DecodeChunkManifestValue(value);
    if (key.size() < 3 || !v.ok()) {
      bad("chunk manifest", v.ok() ? absl::DataLossError("no URL") : v.status());
    } else {
      // The claim a manifest keeps (its answer to a retry) refers to no
      // other record: decoding it is its whole check.
      r->manifests.emplace(std::string(key.substr(2)), std::move(v->chunks));
    }
  } else if (sub == fmt::kChunkTextById) {
    absl::StatusOr<uint32_t> id = fmt::DecodeChunkTextByIdKey(key);
    absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(value);
    if (!id.ok() || !v.ok()) {
      bad("chunk text", !id.ok() ? id.status() : v.status());
      return;
    }
    const std::string sha = DigestKey(v->sha256);
    auto [other, inserted] = r->chunk_text_ids.emplace(sha, *id);
    if (!inserted) {
      bad("chunk text", absl::DataLossError(absl::StrCat("text ", Sha256Hex(v->sha256),
                                                         " also has text id ", other->second)));
      return;
    }
    r->chunk_fingerprints.emplace(
        *id, FingerprintRecord{v->simhash, v->sha256, v->minhash, v->shingles});
    r->chunk_texts.emplace(sha, *std::move(v));
  } else if (sub == fmt::kChunkText || sub == fmt::kChunkFingerprint) {
    // Open converts every one of them to a text record by id.
    bad(sub == fmt::kChunkText ? "chunk text record by SHA-256" : "chunk fingerprint record",
        absl::DataLossError("a storage format 3 record left after the upgrade"));
  } else if (sub == fmt::kChunkHolder) {
    absl::StatusOr<fmt::ChunkHolderKey> h = fmt::DecodeChunkHolderKey(key);
    absl::Status v = fmt::CheckChunkHolderValue(value);
    if (!h.ok() || !v.ok()) {
      bad("chunk holder", !h.ok() ? h.status() : v);
    } else {
      r->holders.push_back(*std::move(h));
    }
  } else {
    bad("key", absl::DataLossError("no record kind has this tag"));
  }
}

// ReadContentFamily reads every record of the content family into
// `spaces`: a named namespace's record (tag 08) without its prefix into
// that namespace's Records.
absl::Status ReadContentFamily(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf,
                               const rocksdb::ReadOptions& read, const std::string& path,
                               SpaceRecords* spaces, Problems* problems) {
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, cf));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const absl::string_view full_key(it->key().data(), it->key().size());
    const absl::string_view value(it->value().data(), it->value().size());
    auto bad = [&](absl::string_view what, const absl::Status& why) {
      problems->Add(absl::StrCat(what, " ", Hex(full_key), ": ", why.message()));
    };
    if (full_key == fmt::EncodeContentMetaKey()) continue;
    absl::string_view key = full_key;
    std::string name_space;
    if (!key.empty() && key[0] == fmt::kTagNamespace) {
      const size_t n = key.size() < 2 ? 0 : static_cast<uint8_t>(key[1]);
      if (n == 0 || key.size() < 3 + n) {
        bad("key", absl::DataLossError("a namespace key without a namespace or a record key"));
        continue;
      }
      name_space = std::string(key.substr(2, n));
      key = key.substr(2 + n);
    }
    Records* r = &(*spaces)[name_space];
    const char tag = key.empty() ? '\xff' : key[0];
    if (tag == fmt::kTagContent || tag == fmt::kTagAlias || tag == fmt::kTagFingerprint ||
        tag == fmt::kTagFetch) {
      AddContentLayerRecord(key, value, r, bad);
    } else if (tag == fmt::kTagChunk) {
      AddChunkRecord(key, value, r, bad);
    } else {
      bad("key", absl::DataLossError("no record kind has this tag"));
    }
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kCheck, path);
  return absl::OkStatus();
}

bool IsAliasOf(const Records& r, const std::string& sha, const std::string& url) {
  auto a = r.aliases.find(sha);
  return a != r.aliases.end() &&
         std::find(a->second.begin(), a->second.end(), url) != a->second.end();
}

// CheckContentLayer: content, alias, fingerprint and fetch records. A
// document id (storage/document_key.h) owns or aliases texts without a URL
// record.
void CheckContentLayer(const Records& r, uint64_t next_doc_id, Problems* problems) {
  for (const auto& [sha, c] : r.contents) {
    const std::string what = absl::StrCat("content ", ShaHex(sha));
    if (!IsDocumentIdKey(c.owner_url) && !r.urls.contains(c.owner_url)) {
      problems->Add(absl::StrCat(what, ": owner \"", Hex(c.owner_url), "\" has no URL record"));
    }
    auto fp = r.fingerprints.find(c.doc_id);
    if (fp == r.fingerprints.end()) {
      problems->Add(absl::StrCat(what, ": no fingerprint record ", c.doc_id));
    } else if (DigestKey(fp->second.sha256) != sha || fp->second.simhash != c.simhash) {
      problems->Add(absl::StrCat(what, ": fingerprint record ", c.doc_id, " names another text"));
    }
    auto a = r.aliases.find(sha);
    const size_t n = a == r.aliases.end() ? 0 : a->second.size();
    if (n != c.alias_count) {
      problems->Add(
          absl::StrCat(what, ": alias count ", c.alias_count, " but ", n, " alias records"));
    }
    if (IsAliasOf(r, sha, c.owner_url)) {
      problems->Add(absl::StrCat(what, ": owner \"", Hex(c.owner_url), "\" is also an alias"));
    }
  }
  for (const auto& [sha, list] : r.aliases) {
    for (const std::string& url : list) {
      const std::string what = absl::StrCat("alias ", ShaHex(sha), " \"", Hex(url), "\"");
      if (!r.contents.contains(sha)) problems->Add(absl::StrCat(what, ": no content record"));
      if (!IsDocumentIdKey(url) && !r.urls.contains(url)) {
        problems->Add(absl::StrCat(what, ": no URL record"));
      }
    }
  }
  for (const auto& [id, fp] : r.fingerprints) {
    auto c = r.contents.find(DigestKey(fp.sha256));
    if (c == r.contents.end() || c->second.doc_id != id) {
      problems->Add(
          absl::StrCat("fingerprint ", id, ": text ", Sha256Hex(fp.sha256),
                       c == r.contents.end() ? " has no content record" : " has another doc id"));
    }
    if (id >= next_doc_id) {
      problems->Add(absl::StrCat("fingerprint ", id, ": not below the next doc id"));
    }
  }
  for (const auto& [url, f] : r.fetches) {
    const std::string what = absl::StrCat("fetch \"", Hex(url), "\"");
    const std::string sha = DigestKey(f.sha256);
    auto c = r.contents.find(sha);
    if (c == r.contents.end()) {
      problems->Add(absl::StrCat(what, ": text ", ShaHex(sha), " has no content record"));
    } else if (c->second.owner_url != url && !IsAliasOf(r, sha, url)) {
      problems->Add(absl::StrCat(what, ": neither owner nor alias of text ", ShaHex(sha)));
    }
  }
}

// CheckChunkHolders: a text record's owner is a holder without a record,
// so it must sort before every holder record of its text; every holder
// (owners included, appended to r->holders) has its text record and is an
// entry of its document's manifest. Returns the holders per text.
absl::flat_hash_map<std::string, uint64_t> CheckChunkHolders(Records* r, Problems* problems) {
  absl::flat_hash_map<std::string, std::string> owner_keys;
  for (const auto& [sha, t] : r->chunk_texts) {
    owner_keys.emplace(sha, fmt::EncodeChunkHolderKey(
                                {DigestOf(sha), t.owner_added, t.owner_url, t.owner_chunk_id}));
  }
  for (const fmt::ChunkHolderKey& h : r->holders) {
    auto o = owner_keys.find(DigestKey(h.sha256));
    if (o != owner_keys.end() && fmt::EncodeChunkHolderKey(h) <= o->second) {
      problems->Add(absl::StrCat("chunk holder ", ShaHex(o->first), " \"", Hex(h.document_url),
                                 "\" ", Hex(h.chunk_id),
                                 ": a holder record that is not younger than its text's owner"));
    }
  }
  for (const auto& [sha, t] : r->chunk_texts) {
    r->holders.push_back({DigestOf(sha), t.owner_added, t.owner_url, t.owner_chunk_id});
  }
  absl::flat_hash_map<std::string, uint64_t> holder_counts;
  for (const fmt::ChunkHolderKey& h : r->holders) {
    const std::string sha = DigestKey(h.sha256);
    ++holder_counts[sha];
    const std::string what = absl::StrCat("chunk holder ", ShaHex(sha), " \"", Hex(h.document_url),
                                          "\" ", Hex(h.chunk_id));
    if (!r->chunk_texts.contains(sha)) problems->Add(absl::StrCat(what, ": no text record"));
    auto m = r->manifests.find(h.document_url);
    const bool listed =
        m != r->manifests.end() &&
        std::any_of(m->second.begin(), m->second.end(), [&](const StoredChunk& e) {
          return e.chunk_id == h.chunk_id && e.sha256 == h.sha256 && e.added == h.added;
        });
    if (!listed) problems->Add(absl::StrCat(what, ": not an entry of its document's manifest"));
  }
  return holder_counts;
}

// CheckChunkLayer: manifests, holders and text records, and the in-memory
// SHA-256 -> text id map.
void CheckChunkLayer(Records* r, uint64_t next_text_id, const ChunkTextIds& text_id_map,
                     Problems* problems) {
  const absl::flat_hash_map<std::string, uint64_t> holder_counts = CheckChunkHolders(r, problems);
  absl::flat_hash_set<std::string> holder_keys;
  for (const fmt::ChunkHolderKey& h : r->holders) {
    holder_keys.insert(fmt::EncodeChunkHolderKey(h));
  }
  for (const auto& [url, entries] : r->manifests) {
    for (const StoredChunk& e : entries) {
      const std::string what =
          absl::StrCat("chunk manifest \"", Hex(url), "\" entry ", Hex(e.chunk_id));
      if (!holder_keys.contains(fmt::EncodeChunkHolderKey({e.sha256, e.added, url, e.chunk_id}))) {
        problems->Add(absl::StrCat(what, ": no holder record"));
      }
      if (!r->chunk_texts.contains(DigestKey(e.sha256))) {
        problems->Add(absl::StrCat(what, ": no text record"));
      }
    }
  }
  for (const auto& [sha, t] : r->chunk_texts) {
    const std::string what = absl::StrCat("chunk text ", ShaHex(sha));
    auto n = holder_counts.find(sha);
    const uint64_t held = n == holder_counts.end() ? 0 : n->second;
    if (held != t.holders) {
      problems->Add(absl::StrCat(what, ": holder count ", t.holders, " but ", held,
                                 " holders (owner and holder records)"));
    }
    const uint32_t id = r->chunk_text_ids.at(sha);
    if (id >= next_text_id) {
      problems->Add(absl::StrCat(what, ": text id ", id, " is not below the next text id"));
    }
    // The in-memory SHA-256 -> id map names the record (Find's candidate
    // is the text's own id).
    if (text_id_map.Find(t.sha256) != std::optional<uint32_t>(id)) {
      problems->Add(absl::StrCat(what, ": the in-memory text id map lacks text id ", id));
    }
  }
  if (text_id_map.size() != r->chunk_texts.size()) {
    problems->Add(absl::StrCat("the in-memory text id map holds ", text_id_map.size(),
                               " entries for ", r->chunk_texts.size(), " chunk text records"));
  }
}

// CheckIndex: the in-memory index `index` holds exactly `records`: each is
// found at distance 0, and the sizes agree (the index is a set).
void CheckIndex(absl::string_view name, const SimHashIndex& index,
                const absl::flat_hash_map<uint32_t, FingerprintRecord>& records,
                Problems* problems) {
  for (const auto& [id, fp] : records) {
    const std::vector<SimHashIndex::Match> same =
        index.Query(fp.simhash, 0, std::numeric_limits<size_t>::max());
    const bool held = std::any_of(same.begin(), same.end(),
                                  [id = id](const SimHashIndex::Match& m) { return m.id == id; });
    if (!held) problems->Add(absl::StrCat(name, " lacks fingerprint record ", id));
  }
  if (index.size() != records.size()) {
    problems->Add(absl::StrCat(name, " holds ", index.size(), " entries for ", records.size(),
                               " fingerprint records"));
  }
}

// CheckNearIndex: the in-memory MinHash index `near` holds exactly the
// signatures of the `records` that have one.
void CheckNearIndex(absl::string_view name, const MinHashNearIndex& near,
                    const absl::flat_hash_map<uint32_t, FingerprintRecord>& records,
                    Problems* problems) {
  size_t signed_records = 0;
  for (const auto& [id, fp] : records) {
    if (!fp.minhash.has_value()) continue;
    ++signed_records;
    const std::optional<MinHashSignature> held = near.Find(id);
    if (!held.has_value()) {
      problems->Add(absl::StrCat(name, " lacks the signature of record ", id));
    } else if (*held != *fp.minhash) {
      problems->Add(absl::StrCat(name, " holds another signature for record ", id));
    }
  }
  if (near.size() != signed_records) {
    problems->Add(absl::StrCat(name, " holds ", near.size(), " signatures for ", signed_records,
                               " records with one"));
  }
}

}  // namespace

absl::StatusOr<ConsistencyReport> RocksDbStore::CheckConsistency() {
  ConsistencyReport report;
  Problems problems(&report);
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kCheck));
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  read.fill_cache = false;
  const std::string& path = impl_->options.path;

  SpaceRecords spaces;
  spaces[""];  // the empty namespace's indexes are checked even when it has no records
  for (const auto& [name, space] : impl_->NamedSpaces()) spaces[name];
  DEDUPD_RETURN_IF_ERROR(ReadUrlRecords(db, read, path, &spaces, &problems));
  DEDUPD_RETURN_IF_ERROR(ReadContentFamily(db, impl_->content_cf, read, path, &spaces, &problems));
  for (auto& [name, r] : spaces) {
    report.urls += r.urls.size();
    report.aliases += r.alias_records;
    report.contents += r.contents.size();
    report.fingerprints += r.fingerprints.size();
    report.fetches += r.fetches.size();
    report.chunk_manifests += r.manifests.size();
    report.chunk_texts += r.chunk_texts.size();

    // A named namespace's problems name it; the empty one's read as before.
    ConsistencyReport space_report;
    Problems space_problems(&space_report);
    // The namespace's indexes (its lock held shared while they are read):
    // a namespace without an entry has records nobody indexed, so it is
    // checked against empty indexes.
    Impl::SpaceView view(impl_.get(), name, /*create=*/false);
    const SimHashIndex no_index(impl_->options.simhash_max_distance,
                                impl_->options.simhash_index_blocks);
    const ChunkTextIds no_text_ids;
    const MinHashNearIndex no_near;
    CheckContentLayer(r, impl_->next_doc_id.load(), &space_problems);
    CheckChunkLayer(&r, impl_->next_text_id.load(),
                    view.chunk_text_ids() != nullptr ? *view.chunk_text_ids() : no_text_ids,
                    &space_problems);
    // Owners count as holders (CheckChunkHolders appended them).
    report.chunk_holders += r.holders.size();
    CheckIndex("near-duplicate index", view.index() != nullptr ? *view.index() : no_index,
               r.fingerprints, &space_problems);
    CheckIndex("chunk index", view.chunk_index() != nullptr ? *view.chunk_index() : no_index,
               r.chunk_fingerprints, &space_problems);
    CheckNearIndex("MinHash index", view.near() != nullptr ? *view.near() : no_near, r.fingerprints,
                   &space_problems);
    CheckNearIndex("chunk MinHash index",
                   view.chunk_near() != nullptr ? *view.chunk_near() : no_near,
                   r.chunk_fingerprints, &space_problems);
    for (std::string& line : space_report.problems) {
      problems.Add(name.empty() ? std::move(line)
                                : absl::StrCat("namespace \"", name, "\": ", line));
    }
  }
  problems.Finish();
  return report;
}

}  // namespace dedupd
