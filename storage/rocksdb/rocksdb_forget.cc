// RocksDbStore::Forget: removing one URL and everything that names it. The
// decisions (which alias becomes a text's owner, which chunk owners change)
// are forget_planner.h's; this file finds the records, locks their keys and
// writes the decisions in one WriteBatch.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "storage/plan/forget_planner.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {
namespace {

constexpr absl::string_view kForget = "forget URL in store";

absl::Status ForgetDamaged(const std::string& path, absl::string_view what,
                           const absl::Status& why) {
  return absl::DataLossError(absl::StrCat(kForget, " at ", path, ": ", what, ": ", why.message()));
}

}  // namespace

// The one WriteBatch of a Forget and what the in-memory indexes drop after
// it. The first failed WriteBatch call is kept in `status`; later calls do
// nothing.
struct RocksDbStore::Impl::ForgetBatch {
  rocksdb::WriteBatch batch;
  rocksdb::Status status;
  std::vector<SimHashIndex::Entry> index_removed;
  ChunkMutations chunk_mutations;

  void Delete(rocksdb::ColumnFamilyHandle* family, const std::string& key) {
    if (status.ok()) status = batch.Delete(family, key);
  }
  void Put(rocksdb::ColumnFamilyHandle* family, const std::string& key, const std::string& value) {
    if (status.ok()) status = batch.Put(family, key, value);
  }
};

absl::StatusOr<std::vector<Sha256Digest>> RocksDbStore::Impl::TextsNamingUrl(
    rocksdb::DB* db, const std::string& url) {
  std::vector<Sha256Digest> texts;
  const std::string first(1, fmt::kTagContent);
  const std::string end(1, fmt::kTagFingerprint);  // [02, 04): content, alias
  const rocksdb::Slice upper(end);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  read.fill_cache = false;  // a one-off pass must not evict the working set
  read.readahead_size = size_t{2} << 20;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, content_cf));
  constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;
  for (it->Seek(first); it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    if (key.size() < 1 + kShaBytes) {
      return ForgetDamaged(options.path, absl::StrCat("key ", PrintableKey(key)),
                           absl::DataLossError("shorter than a tag and a SHA-256"));
    }
    bool names_url = false;
    if (key[0] == fmt::kTagContent) {
      absl::StatusOr<fmt::ContentValue> v =
          fmt::DecodeContentValue(absl::string_view(it->value().data(), it->value().size()));
      if (!v.ok()) {
        return ForgetDamaged(options.path, absl::StrCat("content record ", PrintableKey(key)),
                             v.status());
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
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kForget, options.path);
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());
  return texts;
}

absl::StatusOr<std::vector<AliasRecord>> RocksDbStore::Impl::ReadAliases(
    rocksdb::DB* db, const rocksdb::ReadOptions& read, const Sha256Digest& sha) {
  std::vector<AliasRecord> aliases;
  const std::string prefix = fmt::EncodeAliasPrefix(sha);
  const std::string end = PrefixEnd(prefix);
  const rocksdb::Slice upper(end);
  rocksdb::ReadOptions range = read;
  range.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(range, content_cf));
  for (it->Seek(prefix); it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    absl::StatusOr<absl::string_view> alias = fmt::DecodeAliasKeyUrl(key);
    absl::StatusOr<absl::Time> added =
        fmt::DecodeAliasValue(absl::string_view(it->value().data(), it->value().size()));
    if (!alias.ok() || !added.ok()) {
      return ForgetDamaged(options.path, "alias list of text " + Sha256Hex(sha),
                           !alias.ok() ? alias.status() : added.status());
    }
    aliases.push_back({std::string(*alias), *added});
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kForget, options.path);
  return aliases;
}

absl::Status RocksDbStore::Impl::ForgetTexts(rocksdb::DB* db, const rocksdb::ReadOptions& read,
                                             const std::string& url,
                                             absl::Span<const Sha256Digest> texts, ForgetBatch* out,
                                             ForgetResult* result) {
  for (const Sha256Digest& sha : texts) {
    const std::string content_key = fmt::EncodeContentKey(sha);
    std::string value;
    rocksdb::Status s = db->Get(read, content_cf, content_key, &value);
    if (s.IsNotFound()) continue;  // deleted by another Forget since the scan
    if (!s.ok()) return FromRocksDbStatus(s, kForget, options.path);
    absl::StatusOr<fmt::ContentValue> record = fmt::DecodeContentValue(value);
    if (!record.ok()) {
      return ForgetDamaged(options.path, "content record of text " + Sha256Hex(sha),
                           record.status());
    }
    DEDUPD_ASSIGN_OR_RETURN(std::vector<AliasRecord> aliases, ReadAliases(db, read, sha));
    const TextForgetPlan plan = PlanTextForget(url, *record, aliases);
    if (plan.remove_url_alias) out->Delete(content_cf, fmt::EncodeAliasKey(sha, url));
    switch (plan.action) {
      case TextForgetPlan::Action::kNone:
        break;
      case TextForgetPlan::Action::kPromoteAlias:
        out->Delete(content_cf, fmt::EncodeAliasKey(sha, plan.new_owner));
        [[fallthrough]];
      case TextForgetPlan::Action::kDropAlias:
        out->Put(content_cf, content_key, fmt::EncodeContentValue(plan.record));
        break;
      case TextForgetPlan::Action::kDeleteText:
        out->Delete(content_cf, content_key);
        out->Delete(content_cf, fmt::EncodeFingerprintKey(record->doc_id));
        out->index_removed.push_back({record->simhash, record->doc_id});
        break;
    }
    plan.Count(sha, result);
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::ForgetChunks(ChunkReader* reader, const std::string& url,
                                              const std::optional<ChunkManifest>& manifest,
                                              const std::string& doc_key, absl::Time now,
                                              ForgetBatch* out, ForgetResult* result) {
  // The owners before, to report the texts whose owner changes.
  DEDUPD_ASSIGN_OR_RETURN(result->chunk_owners_promoted,
                          PlanChunkOwnerPromotions(url, *manifest, reader));
  // Exactly what a claim of the document with no chunks does.
  ChunkPlan plan;
  DEDUPD_RETURN_IF_ERROR(
      PlanChunkDocument(ChunkDocument{url, {}}, /*claim=*/true, now, manifest, reader, &plan));
  out->chunk_mutations = std::move(plan.mutations);
  result->chunk_manifest_removed = out->chunk_mutations.delete_manifest;
  result->chunk_holders_removed = manifest->chunks.size();
  result->chunk_texts_removed = out->chunk_mutations.texts_deleted.size();
  if (out->status.ok()) {
    out->status =
        AddChunkMutations(out->chunk_mutations, doc_key, SpaceView(this, "", false), &out->batch);
  }
  return absl::OkStatus();
}

absl::StatusOr<ForgetResult> RocksDbStore::Forget(const std::string& normalized_url,
                                                  absl::Time now) {
  const std::string& url = normalized_url;
  if (url.empty()) {
    return absl::InvalidArgumentError("forget: the URL is empty");
  }
  ForgetResult result;
  const std::string& path = impl_->options.path;

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kForget));
  rocksdb::ColumnFamilyHandle* const cf = impl_->content_cf;
  // Forget is of the empty namespace's URLs (a named one is dropped whole).
  const Impl::SpaceView space(impl_.get(), "", /*create=*/false);

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
  DEDUPD_ASSIGN_OR_RETURN(const std::vector<Sha256Digest> texts, impl_->TextsNamingUrl(db, url));
  // The document's chunks (stable: only a claim holding its manifest lock
  // writes them).
  std::optional<ChunkManifest> manifest;
  if (may_have_chunks) {
    ChunkReader latest(impl_.get(), db, /*snapshot=*/nullptr, &space);
    DEDUPD_ASSIGN_OR_RETURN(manifest, latest.GetManifest(url));
  }

  // Step 2: the texts' keys, all at once (as CheckChunks' second step):
  // a call holding them never waits, so this cannot deadlock.
  std::vector<std::string> text_keys;
  for (const Sha256Digest& sha : texts) text_keys.push_back(fmt::EncodeContentKey(sha));
  if (manifest.has_value()) {
    for (const Sha256Digest& sha : ChunkLockShas(ChunkDocument{url, {}}, manifest)) {
      text_keys.push_back(fmt::EncodeChunkTextKey(sha));
    }
  }
  const KeyLocks text_locks(&impl_->key_locks,
                            std::vector<absl::string_view>(text_keys.begin(), text_keys.end()));
  // After every lock: nothing writes what is read below until we unlock.
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();

  Impl::ForgetBatch out;
  std::string value;
  for (auto [family, key, found] :
       {std::tuple{db->DefaultColumnFamily(), &url_key, &result.url_found},
        std::tuple{cf, &fetch_key, &result.fetch_removed}}) {
    rocksdb::Status s = db->Get(read, family, *key, &value);
    if (!s.ok() && !s.IsNotFound()) return FromRocksDbStatus(s, kForget, path);
    *found = s.ok();
    if (*found) out.Delete(family, *key);
  }
  DEDUPD_RETURN_IF_ERROR(impl_->ForgetTexts(db, read, url, texts, &out, &result));
  if (manifest.has_value()) {
    ChunkReader reader(impl_.get(), db, snapshot.snapshot(), &space);
    DEDUPD_RETURN_IF_ERROR(
        impl_->ForgetChunks(&reader, url, manifest, doc_key, now, &out, &result));
  }

  if (!out.status.ok()) return FromRocksDbStatus(out.status, kForget, path);
  if (out.batch.Count() == 0) return result;
  // Returns after the WAL write (and fsync with sync_writes).
  DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kForget));
  rocksdb::Status s = db->Write(impl_->write_options, &out.batch);
  if (!s.ok()) return impl_->WriteFailed(s, kForget);
  // Only after the write, as claims do: readers skip index entries whose
  // fingerprint record their snapshot lacks.
  for (const SimHashIndex::Entry& e : out.index_removed) {
    impl_->index->Remove(e.fingerprint, e.id);
    impl_->near->Erase(e.id);
  }
  impl_->ApplyChunkIndex(out.chunk_mutations, space);
  return result;
}

}  // namespace dedupd
