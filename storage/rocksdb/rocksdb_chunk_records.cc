// RocksDbStore: the chunk layer (CheckChunks), its planner's reader, and
// the writes and index updates of a chunk plan (shared with Forget).

#include <memory>
#include <string>
#include <vector>

#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

RocksDbStore::ChunkReader::ChunkReader(Impl* impl, rocksdb::DB* db,
                                       const rocksdb::Snapshot* snapshot,
                                       const Impl::SpaceView* space)
    : impl_(impl),
      space_(space),
      reads_(db, impl->content_cf, snapshot, kAction, impl->options.path) {}

absl::StatusOr<std::optional<ChunkManifest>> RocksDbStore::ChunkReader::GetManifest(
    absl::string_view url) {
  std::string value;
  DEDUPD_ASSIGN_OR_RETURN(bool found,
                          reads_.Get(space_->Key(fmt::EncodeChunkManifestKey(url)), &value));
  if (!found) return std::nullopt;
  absl::StatusOr<ChunkManifest> v = fmt::DecodeChunkManifestValue(value);
  if (!v.ok()) {
    return reads_.Damaged(absl::StrCat("chunk manifest of \"", PrintableKey(url), "\""),
                          v.status());
  }
  return *std::move(v);
}

absl::StatusOr<std::optional<ChunkTextRecord>> RocksDbStore::ChunkReader::GetText(
    const Sha256Digest& sha) {
  if (space_->chunk_text_ids() == nullptr) return std::nullopt;
  const std::optional<uint32_t> id = space_->chunk_text_ids()->Find(sha);
  if (!id.has_value()) return std::nullopt;
  DEDUPD_ASSIGN_OR_RETURN(std::optional<fmt::ChunkTextByIdValue> v, ReadText(*id));
  // Not in the snapshot (a peek's, older than the claim that wrote it),
  // or another text that shares the digest's first 8 bytes.
  if (!v.has_value() || v->sha256 != sha) return std::nullopt;
  return ChunkTextRecord{
      *id,
      v->simhash,
      v->holders,
      ChunkHolder{v->owner_added, std::move(v->owner_url), std::move(v->owner_chunk_id)},
      v->minhash,
      std::move(v->shingles)};
}

absl::StatusOr<std::vector<ChunkHolder>> RocksDbStore::ChunkReader::ListHolders(
    const Sha256Digest& sha, size_t limit) {
  std::vector<ChunkHolder> out;
  const std::string prefix = space_->Key(fmt::EncodeChunkHolderPrefix(sha));
  // Bounded above, so that a text without holders does not scan on
  // through the (deleted) holders of the texts after it.
  const std::string end = PrefixEnd(prefix);
  const rocksdb::Slice upper(end);
  std::unique_ptr<rocksdb::Iterator> it = reads_.NewIterator(&upper);
  for (it->Seek(prefix); it->Valid() && out.size() < limit; it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    absl::StatusOr<fmt::ChunkHolderKey> h = fmt::DecodeChunkHolderKey(space_->Unscoped(key));
    absl::Status value =
        fmt::CheckChunkHolderValue(absl::string_view(it->value().data(), it->value().size()));
    if (!h.ok() || !value.ok() || h->sha256 != sha) {
      return reads_.Damaged(absl::StrCat("chunk holder ", out.size(), " of ", Sha256Hex(sha)),
                            !h.ok()       ? h.status()
                            : !value.ok() ? value
                                          : absl::DataLossError("its key names another text"));
    }
    out.push_back({h->added, std::move(h->document_url), std::move(h->chunk_id)});
  }
  if (!it->status().ok()) return reads_.Failed(it->status());
  return out;
}

std::vector<SimHashIndex::Match> RocksDbStore::ChunkReader::QueryNear(uint64_t simhash,
                                                                      int max_distance,
                                                                      size_t limit, size_t* total) {
  if (space_->chunk_index() == nullptr) {
    if (total != nullptr) *total = 0;
    return {};
  }
  return reads_.KeepInSnapshot(
      space_->chunk_index()->Query(simhash, max_distance, limit, total),
      [this](uint32_t id) { return ReadFingerprint(id); }, total);
}

// The LSH candidates whose text record the snapshot holds (as QueryNear
// keeps its matches).
std::vector<uint32_t> RocksDbStore::ChunkReader::QueryJaccardCandidates(const MinHashSignature& sig,
                                                                        double min_estimate) {
  if (space_->chunk_near() == nullptr) return {};
  return reads_.KeepIdsInSnapshot(space_->chunk_near()->Query(sig, min_estimate),
                                  [this](uint32_t id) { return ReadFingerprint(id); });
}

absl::StatusOr<FingerprintRecord> RocksDbStore::ChunkReader::GetTextFingerprint(uint32_t text_id) {
  return reads_.CachedFingerprint(
      text_id, [this](uint32_t id) { return ReadFingerprint(id); }, "chunk index entry",
      "chunk text record");
}

absl::StatusOr<uint32_t> RocksDbStore::ChunkReader::AllocateTextId() {
  return impl_->AllocateIndexId(&impl_->next_text_id, kAction, "chunk text");
}

absl::StatusOr<std::optional<fmt::ChunkTextByIdValue>> RocksDbStore::ChunkReader::ReadText(
    uint32_t text_id) {
  std::string value;
  DEDUPD_ASSIGN_OR_RETURN(bool found,
                          reads_.Get(space_->Key(fmt::EncodeChunkTextByIdKey(text_id)), &value));
  if (!found) return std::nullopt;
  absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(value);
  if (!v.ok()) return reads_.Damaged(absl::StrCat("chunk text ", text_id), v.status());
  return *std::move(v);
}

absl::StatusOr<std::optional<FingerprintRecord>> RocksDbStore::ChunkReader::ReadFingerprint(
    uint32_t text_id) {
  DEDUPD_ASSIGN_OR_RETURN(std::optional<fmt::ChunkTextByIdValue> v, ReadText(text_id));
  if (!v.has_value()) return std::nullopt;
  return FingerprintRecord{v->simhash, v->sha256, v->minhash, std::move(v->shingles)};
}

rocksdb::Status RocksDbStore::Impl::AddChunkMutations(const ChunkMutations& m,
                                                      const std::string& doc_key,
                                                      const SpaceView& space,
                                                      rocksdb::WriteBatch* batch) const {
  rocksdb::Status s;
  rocksdb::ColumnFamilyHandle* cf = content_cf;
  auto del = [&](const std::string& k) {
    if (s.ok()) s = batch->Delete(cf, k);
  };
  auto put = [&](const std::string& k, const std::string& v) {
    if (s.ok()) s = batch->Put(cf, k, v);
  };
  auto holder_key = [&space](const Sha256Digest& sha, const ChunkHolder& h) {
    return space.Key(fmt::EncodeChunkHolderKey({sha, h.added, h.document_url, h.chunk_id}));
  };
  // Deletions first, then puts (ChunkMutations' contract; the planner
  // never deletes and puts one key).
  for (const auto& [sha, h] : m.holders_removed) del(holder_key(sha, h));
  for (const auto& [sha, r] : m.texts_deleted) {
    del(space.Key(fmt::EncodeChunkTextByIdKey(r.text_id)));
  }
  if (m.delete_manifest) del(doc_key);
  if (m.manifest.has_value()) put(doc_key, fmt::EncodeChunkManifestValue(*m.manifest));
  for (const auto& [sha, h] : m.holders_added) {
    put(holder_key(sha, h), fmt::EncodeChunkHolderValue());
  }
  for (const auto& [sha, r] : m.texts_put) {
    // The planner names an owner in every record it writes.
    put(space.Key(fmt::EncodeChunkTextByIdKey(r.text_id)),
        fmt::EncodeChunkTextByIdValue({sha, r.simhash, r.holders, r.owner->added,
                                       r.owner->document_url, r.owner->chunk_id, r.minhash,
                                       r.shingles}));
  }
  return s;
}

void RocksDbStore::Impl::ApplyChunkIndex(const ChunkMutations& m, const SpaceView& space) {
  // A claim's view was created with its namespace's indexes.
  SimHashIndex* index = space.chunk_index();
  MinHashNearIndex* near = space.chunk_near();
  ChunkTextIds* ids = space.chunk_text_ids();
  for (const SimHashIndex::Entry& e : m.fingerprints_removed) {
    index->Remove(e.fingerprint, e.id);
    near->Erase(e.id);
  }
  for (const auto& [sha, r] : m.texts_deleted) ids->Erase(sha, r.text_id);
  std::vector<LshIndex::Entry> signed_texts;
  for (const auto& [id, fp] : m.fingerprints_added) {
    ids->Insert(fp.sha256, id);
    index->Insert(fp.simhash, id);
    if (fp.minhash.has_value()) signed_texts.push_back({*fp.minhash, id});
  }
  near->Insert(signed_texts);  // one lock for the document's texts
}

absl::Status RocksDbStore::CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                       ChunkAnswer* answer) {
  constexpr absl::string_view kAction = "check chunks in store";
  *answer = ChunkAnswer{};
  DEDUPD_RETURN_IF_ERROR(CheckChunkDocument(doc, max_near_distance()));
  if (doc.document_url.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        "document_url contains a NUL byte (chunk holder keys end the URL with one)");
  }

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  const Impl::SpaceView space(impl_.get(), doc.name_space, /*create=*/claim);
  ChunkPlan plan;
  if (!claim) {
    rocksdb::ManagedSnapshot snapshot(db);
    ChunkReader reader(impl_.get(), db, snapshot.snapshot(), &space);
    DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, false, now, &reader, &plan));
    *answer = std::move(plan.answer);
    return absl::OkStatus();
  }

  // Two lock steps: the document's key, then (once its stored manifest
  // says which texts it held) the keys of every text it held or will hold.
  // This cannot deadlock although the second step waits while the first
  // lock is held: a call waits for text locks only while it holds no text
  // lock (it registers all of them at once), and nothing that holds a text
  // lock ever waits for a document lock (the document lock is always taken
  // first). So a call holding text locks never waits, and finishes. The
  // manifest read between the steps is stable: only a claim holding the
  // document's lock writes it.
  const std::string doc_key = space.Key(fmt::EncodeChunkManifestKey(doc.document_url));
  const KeyLocks doc_lock(&impl_->key_locks, {absl::string_view(doc_key)});
  std::optional<ChunkManifest> stored;
  {
    ChunkReader latest(impl_.get(), db, /*snapshot=*/nullptr, &space);
    DEDUPD_ASSIGN_OR_RETURN(stored, latest.GetManifest(doc.document_url));
  }
  std::vector<std::string> text_keys;
  for (const Sha256Digest& sha : ChunkLockShas(doc, stored)) {
    text_keys.push_back(space.Key(fmt::EncodeChunkTextKey(sha)));
  }
  const KeyLocks text_locks(&impl_->key_locks,
                            std::vector<absl::string_view>(text_keys.begin(), text_keys.end()));
  // Taken after the locks: it holds every write of the claims that held
  // them before (they wrote before unlocking), and nothing writes the
  // locked texts' records, holders or this manifest until we unlock.
  rocksdb::ManagedSnapshot snapshot(db);
  ChunkReader reader(impl_.get(), db, snapshot.snapshot(), &space);
  // The manifest read above is the snapshot's too (only a claim holding the
  // document's lock writes it): the planner is given it, not asked again.
  DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, true, now, stored, &reader, &plan));
  const ChunkMutations& m = plan.mutations;
  if (!m.empty()) {
    rocksdb::WriteBatch batch;
    rocksdb::Status s = impl_->AddChunkMutations(m, doc_key, space, &batch);
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
    s = db->Write(impl_->write_options, &batch);
    if (!s.ok()) return impl_->WriteFailed(s, kAction);
    impl_->ApplyChunkIndex(m, space);
  }
  *answer = std::move(plan.answer);
  return absl::OkStatus();
}

}  // namespace dedupd
