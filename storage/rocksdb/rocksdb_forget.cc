// RocksDbStore::Forget: removing one URL and everything that names it.

#include "storage/rocksdb/rocksdb_store_internal.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace dedupd {

absl::StatusOr<ForgetResult> RocksDbStore::Forget(const std::string& normalized_url,
                                                  absl::Time now) {
  constexpr absl::string_view kAction = "forget URL in store";
  const std::string& url = normalized_url;
  if (url.empty()) {
    return absl::InvalidArgumentError("forget: the URL is empty");
  }
  ForgetResult result;
  const std::string& path = impl_->options.path;
  auto damaged = [&](absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(
        absl::StrCat(kAction, " at ", path, ": ", what, ": ", why.message()));
  };

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  rocksdb::ColumnFamilyHandle* const cf = impl_->content_cf;

  // Step 1: the URL's own keys, as claims lock them (ClaimUrls and
  // CheckContent lock the URL key, CheckContent the fetch key, CheckChunks
  // the manifest key). A text or chunk comes to name the URL (as content
  // owner, alias, fetch, manifest or holder) only through a claim holding
  // one of these, so while they are held no new one appears. (Another
  // Forget may turn this URL from an alias of a text into its owner: the
  // text named it already, and is re-read under its lock below.)
  const std::string url_key = fmt::EncodeUrlKey(url);
  const std::string fetch_key = fmt::EncodeFetchKey(url);
  // A URL with a NUL byte never has chunks (CheckChunks refuses it).
  const bool may_have_chunks = url.find('\0') == std::string::npos;
  const std::string doc_key = fmt::EncodeChunkManifestKey(url);
  std::vector<absl::string_view> own_keys = {url_key, fetch_key};
  if (may_have_chunks) own_keys.push_back(doc_key);
  const KeyLocks own_locks(&impl_->key_locks, std::move(own_keys));

  // The texts that name the URL, as owner or alias: a scan of the content
  // and alias records (nothing maps a URL to its texts). Taken after the
  // locks, so it holds every claim that named the URL. A text found here
  // may change (another Forget promoting this URL from alias to owner, a
  // claim adding aliases) until its lock is held below: it is re-read then.
  std::vector<Sha256Digest> texts;
  {
    const std::string first(1, fmt::kTagContent);
    const std::string end(1, fmt::kTagFingerprint);  // [02, 04): content, alias
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;  // a one-off pass must not evict the working set
    read.readahead_size = size_t{2} << 20;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, cf));
    constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;
    for (it->Seek(first); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (key.size() < 1 + kShaBytes) {
        return damaged(absl::StrCat("key ", PrintableKey(key)),
                       absl::DataLossError("shorter than a tag and a SHA-256"));
      }
      bool names_url = false;
      if (key[0] == fmt::kTagContent) {
        absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(
            absl::string_view(it->value().data(), it->value().size()));
        if (!v.ok()) {
          return damaged(absl::StrCat("content record ", PrintableKey(key)), v.status());
        }
        names_url = v->owner_url == url;
      } else {
        names_url = key.substr(1 + kShaBytes) == url;
      }
      if (names_url) {
        Sha256Digest sha;
        std::copy(key.begin() + 1, key.begin() + 1 + kShaBytes, sha.begin());
        texts.push_back(sha);
      }
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, path);
  }
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());

  // The document's chunks (stable: only a claim holding its manifest lock
  // writes them).
  std::optional<ChunkManifest> manifest;
  if (may_have_chunks) {
    ChunkReader latest(impl_.get(), db, /*snapshot=*/nullptr);
    DEDUPD_ASSIGN_OR_RETURN(manifest, latest.GetManifest(url));
  }
  const ChunkDocument no_chunks{url, {}};

  // Step 2: the texts' keys, all at once (as CheckChunks' second step):
  // a call holding them never waits, so this cannot deadlock.
  std::vector<std::string> text_keys;
  for (const Sha256Digest& sha : texts) text_keys.push_back(fmt::EncodeContentKey(sha));
  if (manifest.has_value()) {
    for (const Sha256Digest& sha : ChunkLockShas(no_chunks, manifest)) {
      text_keys.push_back(fmt::EncodeChunkTextKey(sha));
    }
  }
  const KeyLocks text_locks(
      &impl_->key_locks, std::vector<absl::string_view>(text_keys.begin(), text_keys.end()));
  // After every lock: nothing writes what is read below until we unlock.
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  auto get = [&](rocksdb::ColumnFamilyHandle* family, const std::string& key,
                 std::string* value) -> absl::StatusOr<bool> {
    rocksdb::Status s = db->Get(read, family, key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocksDbStatus(s, kAction, path);
    return true;
  };

  rocksdb::WriteBatch batch;
  rocksdb::Status ws;
  auto del = [&](rocksdb::ColumnFamilyHandle* family, const std::string& k) {
    if (ws.ok()) ws = batch.Delete(family, k);
  };
  auto put = [&](const std::string& k, const std::string& v) {
    if (ws.ok()) ws = batch.Put(cf, k, v);
  };
  std::vector<SimHashIndex::Entry> index_removed;

  std::string value;
  DEDUPD_ASSIGN_OR_RETURN(result.url_found, get(db->DefaultColumnFamily(), url_key, &value));
  if (result.url_found) del(db->DefaultColumnFamily(), url_key);
  DEDUPD_ASSIGN_OR_RETURN(result.fetch_removed, get(cf, fetch_key, &value));
  if (result.fetch_removed) del(cf, fetch_key);

  for (const Sha256Digest& sha : texts) {
    const std::string content_key = fmt::EncodeContentKey(sha);
    DEDUPD_ASSIGN_OR_RETURN(bool found, get(cf, content_key, &value));
    if (!found) continue;  // deleted by another Forget since the scan
    absl::StatusOr<fmt::ContentValue> record = fmt::DecodeContentValue(value);
    if (!record.ok()) {
      return damaged("content record of text " + Sha256Hex(sha), record.status());
    }
    // Every alias of the text, with the time it was added.
    struct Alias {
      absl::Time added;
      std::string url;
    };
    std::vector<Alias> aliases;
    bool url_is_alias = false;
    {
      const std::string prefix = fmt::EncodeAliasPrefix(sha);
      const std::string end = PrefixEnd(prefix);
      const rocksdb::Slice upper(end);
      rocksdb::ReadOptions range = read;
      range.iterate_upper_bound = &upper;
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(range, cf));
      for (it->Seek(prefix); it->Valid(); it->Next()) {
        const absl::string_view key(it->key().data(), it->key().size());
        absl::StatusOr<absl::string_view> alias = fmt::DecodeAliasKeyUrl(key);
        absl::StatusOr<absl::Time> added = fmt::DecodeAliasValue(
            absl::string_view(it->value().data(), it->value().size()));
        if (!alias.ok() || !added.ok()) {
          return damaged("alias list of text " + Sha256Hex(sha),
                         !alias.ok() ? alias.status() : added.status());
        }
        if (*alias == url) {
          url_is_alias = true;
        } else {
          aliases.push_back({*added, std::string(*alias)});
        }
      }
      if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, path);
    }
    if (url_is_alias) {
      del(cf, fmt::EncodeAliasKey(sha, url));
      ++result.aliases_removed;
    }
    if (record->owner_url != url) {
      if (!url_is_alias) continue;  // a stale scan hit: nothing names the URL now
      record->alias_count = aliases.size();
      put(content_key, fmt::EncodeContentValue(*record));
      continue;
    }
    if (aliases.empty()) {
      del(cf, content_key);
      del(cf, fmt::EncodeFingerprintKey(record->doc_id));
      index_removed.push_back({record->simhash, record->doc_id});
      ++result.contents_removed;
      continue;
    }
    // The oldest alias becomes the owner; ties by URL bytes (the order the
    // alias list is in), so the choice is deterministic.
    auto next = std::min_element(aliases.begin(), aliases.end(),
                                 [](const Alias& a, const Alias& b) {
                                   return a.added != b.added ? a.added < b.added
                                                             : a.url < b.url;
                                 });
    del(cf, fmt::EncodeAliasKey(sha, next->url));
    record->owner_url = next->url;
    record->alias_count = aliases.size() - 1;
    put(content_key, fmt::EncodeContentValue(*record));
    result.contents_promoted.push_back({sha, next->url});
  }

  // The chunks: exactly what a claim of the document with no chunks does.
  ChunkMutations chunk_mutations;
  if (manifest.has_value()) {
    ChunkReader reader(impl_.get(), db, snapshot.snapshot());
    // The owners before, to report the texts whose owner changes.
    std::vector<std::pair<Sha256Digest, size_t>> held;  // sha, chunks of this doc
    for (const StoredChunk& c : manifest->chunks) {
      auto it = std::find_if(held.begin(), held.end(),
                             [&](const auto& h) { return h.first == c.sha256; });
      if (it == held.end()) {
        held.emplace_back(c.sha256, 1);
      } else {
        ++it->second;
      }
    }
    for (const auto& [sha, mine] : held) {
      // This document's holders of the text are at most `mine`, so the
      // first mine + 1 holders name the next owner when there is one.
      DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkTextRecord> text, reader.GetText(sha));
      if (!text.has_value()) continue;  // the plan below reports the damage
      // Owned by another document (named in the record): no holder scan.
      if (text->owner.has_value() && text->owner->document_url != url) continue;
      DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> holders,
                              ListAllHolders(&reader, sha, *text, mine + 1));
      if (holders.empty() || holders.front().document_url != url) continue;
      for (const ChunkHolder& h : holders) {
        if (h.document_url == url) continue;
        result.chunk_owners_promoted.push_back({sha, h.document_url, h.chunk_id});
        break;
      }
    }
    ChunkPlan plan;
    DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(no_chunks, /*claim=*/true, now, &reader, &plan));
    chunk_mutations = std::move(plan.mutations);
    result.chunk_manifest_removed = chunk_mutations.delete_manifest;
    result.chunk_holders_removed = manifest->chunks.size();
    result.chunk_texts_removed = chunk_mutations.texts_deleted.size();
    if (ws.ok()) ws = impl_->AddChunkMutations(chunk_mutations, doc_key, &batch);
  }

  if (!ws.ok()) return FromRocksDbStatus(ws, kAction, path);
  if (batch.Count() == 0) return result;
  // Returns after the WAL write (and fsync with sync_writes).
  DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
  rocksdb::Status s = db->Write(impl_->write_options, &batch);
  if (!s.ok()) return impl_->WriteFailed(s, kAction);
  // Only after the write, as claims do: readers skip index entries whose
  // fingerprint record their snapshot lacks.
  for (const SimHashIndex::Entry& e : index_removed) {
    impl_->index->Remove(e.fingerprint, e.id);
  }
  impl_->ApplyChunkIndex(chunk_mutations);
  return result;
}

}  // namespace dedupd
