// RocksDbStore::CheckConsistency: the invariants that tie the record kinds
// together, checked over one snapshot.

#include "storage/rocksdb/rocksdb_store_internal.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"

namespace dedupd {

absl::StatusOr<ConsistencyReport> RocksDbStore::CheckConsistency() {
  constexpr absl::string_view kAction = "check consistency of store";
  ConsistencyReport report;
  size_t more = 0;
  auto problem = [&](std::string line) {
    if (report.problems.size() < ConsistencyReport::kMaxProblems) {
      report.problems.push_back(std::move(line));
    } else {
      ++more;
    }
  };
  auto hex = [](absl::string_view bytes) { return PrintableKey(bytes); };

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  read.fill_cache = false;

  absl::flat_hash_set<std::string> urls;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, db->DefaultColumnFamily()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (key == fmt::EncodeMetaKey()) continue;
      absl::StatusOr<absl::string_view> url = fmt::DecodeUrlKey(key);
      absl::StatusOr<absl::Time> t = fmt::DecodeUrlValue(
          absl::string_view(it->value().data(), it->value().size()));
      if (!url.ok() || !t.ok()) {
        problem(absl::StrCat("URL record ", hex(key), ": ",
                             (!url.ok() ? url.status() : t.status()).message()));
        continue;
      }
      urls.emplace(*url);
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
  }
  report.urls = urls.size();

  absl::flat_hash_map<std::string, fmt::ContentValue> contents;  // by DigestKey
  absl::flat_hash_map<std::string, std::vector<std::string>> aliases;
  absl::flat_hash_map<uint32_t, fmt::FingerprintValue> fingerprints;
  absl::flat_hash_map<std::string, fmt::FetchValue> fetches;
  absl::flat_hash_map<std::string, std::vector<fmt::ChunkManifestEntry>> manifests;
  absl::flat_hash_map<std::string, fmt::ChunkTextByIdValue> chunk_texts;  // by DigestKey
  absl::flat_hash_map<std::string, uint32_t> chunk_text_ids;              // by DigestKey
  std::vector<fmt::ChunkHolderKey> holders;
  // The chunk index's entries as the text records imply them.
  absl::flat_hash_map<uint32_t, fmt::FingerprintValue> chunk_fingerprints;
  constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, impl_->content_cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      const absl::string_view value(it->value().data(), it->value().size());
      auto bad = [&](absl::string_view what, const absl::Status& why) {
        problem(absl::StrCat(what, " ", hex(key), ": ", why.message()));
      };
      const char tag = key.empty() ? '\xff' : key[0];
      const char sub = key.size() < 2 ? '\xff' : key[1];
      if (key == fmt::EncodeContentMetaKey()) continue;
      if (tag == fmt::kTagContent) {
        absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(value);
        if (key.size() != 1 + kShaBytes) {
          bad("content record", absl::DataLossError("key is not 02 + SHA-256"));
        } else if (!v.ok()) {
          bad("content record", v.status());
        } else {
          contents.emplace(std::string(key.substr(1)), *std::move(v));
        }
      } else if (tag == fmt::kTagAlias) {
        absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
        absl::StatusOr<absl::Time> added = fmt::DecodeAliasValue(value);
        if (!url.ok() || !added.ok()) {
          bad("alias record", !url.ok() ? url.status() : added.status());
        } else {
          aliases[std::string(key.substr(1, kShaBytes))].emplace_back(*url);
          ++report.aliases;
        }
      } else if (tag == fmt::kTagFingerprint) {
        absl::StatusOr<uint32_t> id = fmt::DecodeFingerprintKey(key);
        absl::StatusOr<fmt::FingerprintValue> v = fmt::DecodeFingerprintValue(value);
        if (!id.ok() || !v.ok()) {
          bad("fingerprint record", !id.ok() ? id.status() : v.status());
        } else {
          fingerprints.emplace(*id, *v);
        }
      } else if (tag == fmt::kTagFetch) {
        absl::StatusOr<fmt::FetchValue> v = fmt::DecodeFetchValue(value);
        if (key.size() < 2 || !v.ok()) {
          bad("fetch record", v.ok() ? absl::DataLossError("no URL") : v.status());
        } else {
          fetches.emplace(std::string(key.substr(1)), *v);
        }
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkManifest) {
        absl::StatusOr<std::vector<fmt::ChunkManifestEntry>> v =
            fmt::DecodeChunkManifestValue(value);
        if (key.size() < 3 || !v.ok()) {
          bad("chunk manifest", v.ok() ? absl::DataLossError("no URL") : v.status());
        } else {
          manifests.emplace(std::string(key.substr(2)), *std::move(v));
        }
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkTextById) {
        absl::StatusOr<uint32_t> id = fmt::DecodeChunkTextByIdKey(key);
        absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(value);
        if (!id.ok() || !v.ok()) {
          bad("chunk text", !id.ok() ? id.status() : v.status());
          continue;
        }
        const std::string sha = DigestKey(v->sha256);
        auto [other, inserted] = chunk_text_ids.emplace(sha, *id);
        if (!inserted) {
          bad("chunk text", absl::DataLossError(absl::StrCat(
                                "text ", Sha256Hex(v->sha256), " also has text id ",
                                other->second)));
          continue;
        }
        chunk_fingerprints.emplace(*id, fmt::FingerprintValue{v->simhash, v->sha256});
        chunk_texts.emplace(sha, *std::move(v));
      } else if (tag == fmt::kTagChunk &&
                 (sub == fmt::kChunkText || sub == fmt::kChunkFingerprint)) {
        // Open converts every one of them to a text record by id.
        bad(sub == fmt::kChunkText ? "chunk text record by SHA-256"
                                   : "chunk fingerprint record",
            absl::DataLossError("a storage format 3 record left after the upgrade"));
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkHolder) {
        absl::StatusOr<fmt::ChunkHolderKey> h = fmt::DecodeChunkHolderKey(key);
        absl::Status v = fmt::CheckChunkHolderValue(value);
        if (!h.ok() || !v.ok()) {
          bad("chunk holder", !h.ok() ? h.status() : v);
        } else {
          holders.push_back(*std::move(h));
        }
      } else {
        bad("key", absl::DataLossError("no record kind has this tag"));
      }
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
  }
  report.contents = contents.size();
  report.fingerprints = fingerprints.size();
  report.fetches = fetches.size();
  report.chunk_manifests = manifests.size();
  report.chunk_texts = chunk_texts.size();
  report.chunk_holders = holders.size();

  auto sha_hex = [](absl::string_view digest_key) {
    return absl::BytesToHexString(digest_key);
  };
  // Content layer.
  for (const auto& [sha, c] : contents) {
    const std::string what = absl::StrCat("content ", sha_hex(sha));
    if (!urls.contains(c.owner_url)) {
      problem(absl::StrCat(what, ": owner \"", hex(c.owner_url), "\" has no URL record"));
    }
    auto fp = fingerprints.find(c.doc_id);
    if (fp == fingerprints.end()) {
      problem(absl::StrCat(what, ": no fingerprint record ", c.doc_id));
    } else if (DigestKey(fp->second.sha256) != sha || fp->second.simhash != c.simhash) {
      problem(absl::StrCat(what, ": fingerprint record ", c.doc_id, " names another text"));
    }
    auto a = aliases.find(sha);
    const size_t n = a == aliases.end() ? 0 : a->second.size();
    if (n != c.alias_count) {
      problem(absl::StrCat(what, ": alias count ", c.alias_count, " but ", n,
                           " alias records"));
    }
    if (a != aliases.end() &&
        std::find(a->second.begin(), a->second.end(), c.owner_url) != a->second.end()) {
      problem(absl::StrCat(what, ": owner \"", hex(c.owner_url), "\" is also an alias"));
    }
  }
  for (const auto& [sha, list] : aliases) {
    for (const std::string& url : list) {
      const std::string what = absl::StrCat("alias ", sha_hex(sha), " \"", hex(url), "\"");
      if (!contents.contains(sha)) problem(absl::StrCat(what, ": no content record"));
      if (!urls.contains(url)) problem(absl::StrCat(what, ": no URL record"));
    }
  }
  for (const auto& [id, fp] : fingerprints) {
    auto c = contents.find(DigestKey(fp.sha256));
    if (c == contents.end() || c->second.doc_id != id) {
      problem(absl::StrCat("fingerprint ", id, ": text ", Sha256Hex(fp.sha256),
                           c == contents.end() ? " has no content record"
                                               : " has another doc id"));
    }
    if (id >= impl_->next_doc_id.load()) {
      problem(absl::StrCat("fingerprint ", id, ": not below the next doc id"));
    }
  }
  for (const auto& [url, f] : fetches) {
    const std::string what = absl::StrCat("fetch \"", hex(url), "\"");
    const std::string sha = DigestKey(f.sha256);
    auto c = contents.find(sha);
    if (c == contents.end()) {
      problem(absl::StrCat(what, ": text ", sha_hex(sha), " has no content record"));
      continue;
    }
    auto a = aliases.find(sha);
    const bool alias = a != aliases.end() &&
                       std::find(a->second.begin(), a->second.end(), url) != a->second.end();
    if (c->second.owner_url != url && !alias) {
      problem(absl::StrCat(what, ": neither owner nor alias of text ", sha_hex(sha)));
    }
  }

  // Chunk layer. A text record's owner is a holder without a record: it
  // must sort before every holder record of its text.
  auto digest_of = [](const std::string& key) {
    Sha256Digest d{};
    std::memcpy(d.data(), key.data(), d.size());
    return d;
  };
  absl::flat_hash_map<std::string, std::string> owner_keys;  // by DigestKey
  for (const auto& [sha, t] : chunk_texts) {
    owner_keys.emplace(sha, fmt::EncodeChunkHolderKey(
                                {digest_of(sha), t.owner_added, t.owner_url, t.owner_chunk_id}));
  }
  for (const fmt::ChunkHolderKey& h : holders) {
    auto o = owner_keys.find(DigestKey(h.sha256));
    if (o != owner_keys.end() && fmt::EncodeChunkHolderKey(h) <= o->second) {
      problem(absl::StrCat("chunk holder ", sha_hex(o->first), " \"", hex(h.document_url),
                           "\" ", hex(h.chunk_id),
                           ": a holder record that is not younger than its text's owner"));
    }
  }
  for (const auto& [sha, t] : chunk_texts) {
    holders.push_back({digest_of(sha), t.owner_added, t.owner_url, t.owner_chunk_id});
  }
  report.chunk_holders = holders.size();
  absl::flat_hash_map<std::string, uint64_t> holder_counts;  // by DigestKey
  for (const fmt::ChunkHolderKey& h : holders) {
    const std::string sha = DigestKey(h.sha256);
    ++holder_counts[sha];
    const std::string what = absl::StrCat("chunk holder ", sha_hex(sha), " \"",
                                          hex(h.document_url), "\" ", hex(h.chunk_id));
    if (!chunk_texts.contains(sha)) problem(absl::StrCat(what, ": no text record"));
    auto m = manifests.find(h.document_url);
    const bool listed =
        m != manifests.end() &&
        std::any_of(m->second.begin(), m->second.end(), [&](const fmt::ChunkManifestEntry& e) {
          return e.chunk_id == h.chunk_id && e.sha256 == h.sha256 && e.added == h.added;
        });
    if (!listed) problem(absl::StrCat(what, ": not an entry of its document's manifest"));
  }
  absl::flat_hash_set<std::string> holder_keys;
  for (const fmt::ChunkHolderKey& h : holders) holder_keys.insert(fmt::EncodeChunkHolderKey(h));
  for (const auto& [url, entries] : manifests) {
    for (const fmt::ChunkManifestEntry& e : entries) {
      const std::string what = absl::StrCat("chunk manifest \"", hex(url), "\" entry ",
                                            hex(e.chunk_id));
      if (!holder_keys.contains(fmt::EncodeChunkHolderKey(
              {e.sha256, e.added, url, e.chunk_id}))) {
        problem(absl::StrCat(what, ": no holder record"));
      }
      if (!chunk_texts.contains(DigestKey(e.sha256))) {
        problem(absl::StrCat(what, ": no text record"));
      }
    }
  }
  for (const auto& [sha, t] : chunk_texts) {
    const std::string what = absl::StrCat("chunk text ", sha_hex(sha));
    auto n = holder_counts.find(sha);
    const uint64_t held = n == holder_counts.end() ? 0 : n->second;
    if (held != t.holders) {
      problem(absl::StrCat(what, ": holder count ", t.holders, " but ", held,
                           " holders (owner and holder records)"));
    }
    const uint32_t id = chunk_text_ids.at(sha);
    if (id >= impl_->next_text_id.load()) {
      problem(absl::StrCat(what, ": text id ", id, " is not below the next text id"));
    }
    // The in-memory SHA-256 -> id map names the record (Find's candidate
    // is the text's own id).
    if (impl_->chunk_text_ids.Find(t.sha256) != std::optional<uint32_t>(id)) {
      problem(absl::StrCat(what, ": the in-memory text id map lacks text id ", id));
    }
  }
  if (impl_->chunk_text_ids.size() != chunk_texts.size()) {
    problem(absl::StrCat("the in-memory text id map holds ", impl_->chunk_text_ids.size(),
                         " entries for ", chunk_texts.size(), " chunk text records"));
  }

  // The in-memory indexes hold exactly the fingerprint records: each record
  // is found at distance 0, and the sizes agree (the index is a set).
  auto check_index = [&](absl::string_view name, const SimHashIndex& index,
                         const absl::flat_hash_map<uint32_t, fmt::FingerprintValue>& records) {
    for (const auto& [id, fp] : records) {
      const std::vector<SimHashIndex::Match> same =
          index.Query(fp.simhash, 0, std::numeric_limits<size_t>::max());
      const bool held = std::any_of(same.begin(), same.end(),
                                    [id = id](const SimHashIndex::Match& m) { return m.id == id; });
      if (!held) problem(absl::StrCat(name, " lacks fingerprint record ", id));
    }
    if (index.size() != records.size()) {
      problem(absl::StrCat(name, " holds ", index.size(), " entries for ", records.size(),
                           " fingerprint records"));
    }
  };
  check_index("near-duplicate index", *impl_->index, fingerprints);
  check_index("chunk index", *impl_->chunk_index, chunk_fingerprints);

  if (more > 0) report.problems.push_back(absl::StrCat("... and ", more, " more"));
  return report;
}

}  // namespace dedupd
