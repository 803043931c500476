// RocksDbStore: the lifecycle. Open (meta records, format upgrade, the
// in-memory indexes rebuilt from the fingerprint records) and Close.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/time/clock.h"
#include "core/index/lsh_index.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

using ::dedupd::rocksdb_internal::CheckOptions;
using ::dedupd::rocksdb_internal::ContentFamilyOptions;
using ::dedupd::rocksdb_internal::kContentColumnFamily;
using ::dedupd::rocksdb_internal::MakeDbOptions;
using ::dedupd::rocksdb_internal::UrlFamilyOptions;

absl::Status RocksDbStore::Impl::CloseDb(rocksdb::DB* db, bool sync_wal) {
  absl::Status result;
  if (content_cf != nullptr) {
    // Handles must go before the database closes.
    result =
        FromRocksDbStatus(db->DestroyColumnFamilyHandle(content_cf), "close store", options.path);
    content_cf = nullptr;
  }
  if (sync_wal && result.ok()) {
    result = FromRocksDbStatus(db->SyncWAL(), "sync WAL of store", options.path);
  }
  absl::Status closed = FromRocksDbStatus(db->Close(), "close store", options.path);
  if (result.ok()) result = closed;
  return result;
}

RocksDbStore::RocksDbStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RocksDbStore::~RocksDbStore() {
  absl::Status s = Close();
  if (!s.ok()) {
    // Handled here: a destructor has no caller to return it to.
    std::fprintf(stderr, "dedupd: %s\n", s.ToString().c_str());
  }
}

absl::StatusOr<std::unique_ptr<RocksDbStore>> RocksDbStore::Open(
    const RocksDbStoreOptions& options) {
  DEDUPD_RETURN_IF_ERROR(CheckOptions(options));
  const std::string& path = options.path;
  constexpr absl::string_view kOpen = "open store";

  // The content layer's records live in their own column family, so that
  // the default one (meta + URL records) keeps exact per-layer counts. A
  // new store gets it after its meta record is written; a store that has
  // a meta record must have it already.
  auto write_stop = std::make_shared<WriteStop>();
  const rocksdb::Options db_options = MakeDbOptions(options, write_stop);
  std::vector<std::string> families;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, path, &families);
  // No database there yet is the one expected failure (DB::Open then creates
  // it or reports it missing); any other is the store's problem to report.
  std::error_code ec;
  if (!s.ok() && std::filesystem::exists(path + "/CURRENT", ec)) {
    return FromRocksDbStatus(s, kOpen, path);
  }
  const bool has_content_family =
      s.ok() && std::find(families.begin(), families.end(), kContentColumnFamily) != families.end();
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, UrlFamilyOptions(db_options, options)}};
  if (has_content_family) {
    descriptors.push_back({kContentColumnFamily, ContentFamilyOptions(db_options, options)});
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw_db = nullptr;
  s = rocksdb::DB::Open(rocksdb::DBOptions(db_options), path, descriptors, &handles, &raw_db);
  if (!s.ok()) return FromRocksDbStatus(s, kOpen, path);
  std::unique_ptr<rocksdb::DB> db(raw_db);

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->write_stop = std::move(write_stop);
  impl->write_options.sync = options.sync_writes;
  impl->write_options.disableWAL = false;
  // Each batch keeps its last skip-list position per memtable ("splice")
  // from key to key while inserting concurrently, instead of searching
  // from the top for every key. A claim's URL keys are sorted
  // (SortedBatch), so the next key's search starts near the last one: on
  // 5 alternated pairs of 2,000,000 claims the server's CPU per URL went
  // from 8.09 to 7.18 us (medians; docs/benchmarks.md, "Memtable
  // inserts"). Ignored without concurrent memtable writes, and by the
  // URL family's hash memtables (--url_memtable=hash, the default): it
  // serves the content family and --url_memtable=skiplist.
  impl->write_options.memtable_insert_hint_per_batch = true;
  if (has_content_family) impl->content_cf = handles[1];

  // On any failure below, close the database (releasing its LOCK) and
  // report the first error.
  auto fail = [&](const absl::Status& error) -> absl::Status {
    absl::Status closed = impl->CloseDb(db.get(), /*sync_wal=*/false);
    if (closed.ok()) return error;
    return absl::Status(error.code(),
                        absl::StrCat(error.message(), " (closing after that error failed too: ",
                                     closed.message(), ")"));
  };

  // The default family is reached through db->DefaultColumnFamily().
  s = db->DestroyColumnFamilyHandle(handles[0]);
  if (!s.ok()) return fail(FromRocksDbStatus(s, kOpen, path));

  std::string meta_value;
  s = db->Get(rocksdb::ReadOptions(), fmt::EncodeMetaKey(), &meta_value);
  if (s.IsNotFound()) {
    if (absl::Status c = impl->CreateMeta(db.get(), db_options); !c.ok()) return fail(c);
  } else if (!s.ok()) {
    return fail(FromRocksDbStatus(s, kOpen, path));
  } else if (absl::Status c = impl->CheckMeta(db.get(), meta_value); !c.ok()) {
    return fail(c);
  }
  if (absl::Status l = impl->LoadIndexes(db.get()); !l.ok()) return fail(l);

  uint64_t store_tag = 0;
  {
    absl::MutexLock lock(&impl->mu);
    store_tag = db->GetLatestSequenceNumber();
    impl->db = std::move(db);
  }
  // After `db` is published: a rebuild scans through it.
  Impl* const raw = impl.get();
  impl->url_front = std::make_unique<UrlFilterFront>(
      options.url_filter,
      [raw](const std::function<void(absl::string_view)>& emit, const std::atomic<bool>& cancel) {
        return raw->ScanUrlKeys(emit, cancel);
      },
      (std::filesystem::path(path) / kUrlFilterFileName).string());
  impl->url_front->Start(store_tag);
  return std::unique_ptr<RocksDbStore>(new RocksDbStore(std::move(impl)));
}

absl::Status RocksDbStore::Impl::CreateMeta(rocksdb::DB* db, const rocksdb::Options& db_options) {
  constexpr absl::string_view kOpen = "open store";
  // A new store, unless the directory holds someone else's database.
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->SeekToFirst();
  const bool empty = !it->Valid();
  rocksdb::Status it_status = it->status();
  it.reset();
  if (!it_status.ok()) return FromRocksDbStatus(it_status, kOpen, options.path);
  if (!empty) {
    return absl::FailedPreconditionError(
        absl::StrCat("store at ", options.path,
                     " holds a RocksDB database without a dedupd meta record: not a "
                     "dedupd store; point the store at an empty or dedupd directory"));
  }
  fmt::StoreMeta meta;
  meta.format_version = fmt::kStorageFormatVersion;
  meta.normalizer_version = options.normalizer_version;
  meta.created = absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
  rocksdb::WriteOptions sync_write;
  sync_write.sync = true;  // once per store: always durable
  rocksdb::Status s;
  if (content_cf == nullptr) {
    s = db->CreateColumnFamily(ContentFamilyOptions(db_options, options), kContentColumnFamily,
                               &content_cf);
    if (!s.ok()) return FromRocksDbStatus(s, kOpen, options.path);
  }
  rocksdb::WriteBatch metas;
  s = metas.Put(content_cf, fmt::EncodeContentMetaKey(),
                fmt::EncodeContentMeta(WantedContentMeta()));
  // The meta record last in the batch, and the batch atomic: a store with
  // a meta record always has its content meta record too.
  if (s.ok()) s = metas.Put(fmt::EncodeMetaKey(), fmt::EncodeMeta(meta));
  if (s.ok()) s = db->Write(sync_write, &metas);
  if (!s.ok()) return FromRocksDbStatus(s, kOpen, options.path);
  created = meta.created;
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::CheckMeta(rocksdb::DB* db, const std::string& meta_value) {
  constexpr absl::string_view kOpen = "open store";
  absl::StatusOr<uint32_t> version = fmt::DecodeMetaFormatVersion(meta_value);
  if (!version.ok()) {
    return absl::DataLossError(
        absl::StrCat("store at ", options.path, ": ", version.status().message()));
  }
  if (*version < fmt::kOldestUpgradableFormatVersion || *version > fmt::kStorageFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "store at ", options.path, " was written with storage format version ", *version,
        ", this build reads versions ", fmt::kOldestUpgradableFormatVersion, " to ",
        fmt::kStorageFormatVersion, ": run the matching dedupd version or rebuild the store"));
  }
  absl::StatusOr<fmt::StoreMeta> meta = fmt::DecodeMeta(meta_value);
  if (!meta.ok()) {
    return absl::Status(meta.status().code(),
                        absl::StrCat("store at ", options.path, ": ", meta.status().message()));
  }
  if (meta->normalizer_version != options.normalizer_version) {
    return absl::FailedPreconditionError(
        absl::StrCat("store at ", options.path, " was written with normalizer version ",
                     meta->normalizer_version, ", this build uses ", options.normalizer_version,
                     "; keys would not match: rebuild the store or run the matching "
                     "dedupd version"));
  }
  created = meta->created;
  bool rewrite_content_meta = false;
  DEDUPD_RETURN_IF_ERROR(CheckContentMeta(db, meta->format_version, &rewrite_content_meta));
  if (meta->format_version < fmt::kStorageFormatVersion) {
    // Formats 2 and 3 differ from 4 only in the chunk text records, which
    // ConvertChunkTextsToIds (LoadIndexes) rewrites. The version goes first (and
    // durably), so that older builds, which cannot read a half-converted
    // store, refuse it from now on.
    // The content meta record gains the MinHash fields in the same atomic
    // write: a format-5 store always has them.
    fmt::StoreMeta upgraded = *meta;
    upgraded.format_version = fmt::kStorageFormatVersion;
    rocksdb::WriteOptions sync_write;
    sync_write.sync = true;
    rocksdb::WriteBatch batch;
    rocksdb::Status s;
    if (rewrite_content_meta) {
      s = batch.Put(content_cf, fmt::EncodeContentMetaKey(),
                    fmt::EncodeContentMeta(WantedContentMeta()));
    }
    if (s.ok()) s = batch.Put(fmt::EncodeMetaKey(), fmt::EncodeMeta(upgraded));
    if (s.ok()) s = db->Write(sync_write, &batch);
    if (!s.ok()) return FromRocksDbStatus(s, kOpen, options.path);
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::LoadIndexes(rocksdb::DB* db) {
  index =
      std::make_unique<SimHashIndex>(options.simhash_max_distance, options.simhash_index_blocks);
  chunk_index =
      std::make_unique<SimHashIndex>(options.simhash_max_distance, options.simhash_index_blocks);
  DEDUPD_RETURN_IF_ERROR(ConvertChunkTextsToIds(db).status());
  near = std::make_unique<MinHashNearIndex>();
  chunk_near = std::make_unique<MinHashNearIndex>();
  DEDUPD_RETURN_IF_ERROR(LoadSpace(db, "", index.get(), near.get(), chunk_index.get(),
                                   chunk_near.get(), &chunk_text_ids));
  return LoadNamedSpaces(db);
}

absl::Status RocksDbStore::Impl::CheckContentMeta(rocksdb::DB* db, uint32_t format_version,
                                                  bool* rewrite) {
  *rewrite = false;
  const std::string& path = options.path;
  std::string value;
  if (content_cf == nullptr) {
    return absl::DataLossError(
        absl::StrCat("store at ", path, " has no \"", kContentColumnFamily,
                     "\" column family, which every format-2 store has: the store is damaged"));
  }
  rocksdb::Status s =
      db->Get(rocksdb::ReadOptions(), content_cf, fmt::EncodeContentMetaKey(), &value);
  if (s.IsNotFound()) {
    return absl::DataLossError(absl::StrCat("store at ", path,
                                            " has no content meta record (key 00 01), which "
                                            "every format-2 store has: the store is damaged"));
  }
  if (!s.ok()) return FromRocksDbStatus(s, "open store", path);
  absl::StatusOr<fmt::ContentMeta> have = fmt::DecodeContentMeta(value);
  if (!have.ok()) {
    return absl::DataLossError(absl::StrCat("store at ", path, ": ", have.status().message()));
  }
  const fmt::ContentMeta want = WantedContentMeta();
  if (*have == want) return absl::OkStatus();
  if (have->minhash_version == 0) {
    // Written before the record held the MinHash fields. Older formats
    // stored no signatures: any MinHash version reads them, and the
    // upgrade records this build's. Format 5 has always had them.
    fmt::ContentMeta with_minhash = *have;
    with_minhash.minhash_version = want.minhash_version;
    with_minhash.minhash_seed = want.minhash_seed;
    if (format_version < fmt::kStorageFormatVersion && with_minhash == want) {
      *rewrite = true;
      return absl::OkStatus();
    }
    if (format_version == fmt::kStorageFormatVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store at ", path,
          " is a storage format 5 store whose content meta record has no MinHash version "
          "(written by a development build before format 5 was released): its MinHash "
          "signatures cannot be checked against this build's (MinHash version ",
          want.minhash_version, "); rebuild the store from the source documents"));
    }
    *have = with_minhash;  // the other fields differ: reported below
  }
  if (have->minhash_version != want.minhash_version || have->minhash_seed != want.minhash_seed) {
    fmt::ContentMeta same_minhash = *have;
    same_minhash.minhash_version = want.minhash_version;
    same_minhash.minhash_seed = want.minhash_seed;
    if (same_minhash == want) {
      return absl::FailedPreconditionError(absl::StrCat(
          "store at ", path, " was written with MinHash version ", have->minhash_version,
          " and MinHash seed ", have->minhash_seed, "; this server uses ", want.minhash_version,
          " and ", want.minhash_seed,
          ": the stored MinHash signatures would not be comparable with this server's (serve "
          "it with the dedupd release that wrote it, or rebuild the store from the source "
          "documents)"));
    }
  }
  // Only the shingle size is a setting of this build; the versions and the
  // seed are fixed by the code that wrote the store.
  fmt::ContentMeta same_shingles = *have;
  same_shingles.shingle_words = want.shingle_words;
  const bool only_shingles_differ = same_shingles == want;
  return absl::FailedPreconditionError(
      absl::StrCat("store at ", path, " was written with text normalizer version ",
                   have->text_normalizer_version, ", SimHash version ", have->simhash_version, ", ",
                   have->shingle_words, "-word shingles and SimHash seed ", have->simhash_seed,
                   "; this server uses ", want.text_normalizer_version, ", ", want.simhash_version,
                   ", ", want.shingle_words, " and ", want.simhash_seed,
                   ": content hashes and fingerprints would not match (",
                   only_shingles_differ
                       ? "set --simhash_shingle_words to the store's value, or rebuild the store"
                       : "serve it with the dedupd release that wrote it, or rebuild the store "
                         "from the source documents",
                   ")"));
}

absl::StatusOr<uint64_t> RocksDbStore::Impl::LoadIndex(
    rocksdb::DB* db, absl::string_view action, const std::string& first, const std::string& end,
    const std::function<absl::StatusOr<SimHashIndex::Entry>(absl::string_view, absl::string_view)>&
        decode,
    SimHashIndex* into) {
  rocksdb::ReadOptions read;
  read.fill_cache = false;  // one sequential pass; keep the cache for claims
  read.readahead_size = 4 << 20;
  rocksdb::Slice upper(end);
  read.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, content_cf));
  std::vector<SimHashIndex::Entry> entries;
  uint64_t next = 0;
  for (it->Seek(first); it->Valid(); it->Next()) {
    absl::StatusOr<SimHashIndex::Entry> e =
        decode(absl::string_view(it->key().data(), it->key().size()),
               absl::string_view(it->value().data(), it->value().size()));
    if (!e.ok()) {
      return absl::DataLossError(
          absl::StrCat(action, " at ", options.path, ": ", e.status().message()));
    }
    entries.push_back(*e);
    next = uint64_t{e->id} + 1;  // keys ascend
  }
  if (!it->status().ok()) {
    return FromRocksDbStatus(it->status(), action, options.path);
  }
  into->BulkInsert(entries);
  return next;
}

absl::Status RocksDbStore::Impl::LoadSpace(rocksdb::DB* db, const std::string& prefix,
                                           SimHashIndex* into, MinHashNearIndex* near_into,
                                           SimHashIndex* chunk_into,
                                           MinHashNearIndex* chunk_near_into,
                                           ChunkTextIds* text_ids) {
  // Both decoders see the key without the namespace's prefix. The
  // signatures are collected and bulk-loaded (MinHashNearIndex::BulkLoad:
  // ~3.4 s at 10^7 against ~100 s inserted one by one).
  std::vector<LshIndex::Entry> signatures;
  DEDUPD_ASSIGN_OR_RETURN(
      uint64_t next_doc,
      LoadIndex(
          db, "load fingerprints of store", prefix + fmt::kTagFingerprint,
          prefix + static_cast<char>(fmt::kTagFingerprint + 1),
          [&prefix, &signatures](absl::string_view key,
                                 absl::string_view value) -> absl::StatusOr<SimHashIndex::Entry> {
            DEDUPD_ASSIGN_OR_RETURN(uint32_t id,
                                    fmt::DecodeFingerprintKey(key.substr(prefix.size())));
            DEDUPD_ASSIGN_OR_RETURN(fmt::FingerprintValue v, fmt::DecodeFingerprintValue(value));
            if (v.minhash.has_value()) signatures.push_back({*v.minhash, id});
            return SimHashIndex::Entry{v.simhash, id};
          },
          into));
  near_into->BulkLoad(std::move(signatures));
  signatures = {};
  DEDUPD_ASSIGN_OR_RETURN(
      uint64_t next_text,
      LoadIndex(
          db, "load chunk texts of store", prefix + fmt::ChunkTextByIdKeysBegin(),
          prefix + fmt::ChunkTextByIdKeysEnd(),
          [&prefix, text_ids, &signatures](absl::string_view key, absl::string_view value)
              -> absl::StatusOr<SimHashIndex::Entry> {
            DEDUPD_ASSIGN_OR_RETURN(uint32_t id,
                                    fmt::DecodeChunkTextByIdKey(key.substr(prefix.size())));
            DEDUPD_ASSIGN_OR_RETURN(fmt::ChunkTextByIdValue v,
                                    fmt::DecodeChunkTextByIdValue(value));
            text_ids->Insert(v.sha256, id);
            if (v.minhash.has_value()) signatures.push_back({*v.minhash, id});
            return SimHashIndex::Entry{v.simhash, id};
          },
          chunk_into));
  chunk_near_into->BulkLoad(std::move(signatures));
  // Ids are shared by every namespace: the next is past the largest of all.
  if (next_doc > next_doc_id.load()) next_doc_id.store(next_doc);
  if (next_text > next_text_id.load()) next_text_id.store(next_text);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::Impl::ConvertChunkTextsToIds(rocksdb::DB* db) {
  constexpr absl::string_view kConvert = "convert chunk texts of store";
  auto damaged = [&](absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(
        absl::StrCat(kConvert, " at ", options.path, ": ", what, ": ", why.message()));
  };
  const std::string begin = fmt::ChunkTextKeysBegin();
  const std::string end = fmt::ChunkTextKeysEnd();
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  read.readahead_size = 4 << 20;
  rocksdb::Slice upper(end);
  read.iterate_upper_bound = &upper;
  // Iterators read the state at their creation: the deletes below do not
  // disturb the pass.
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, content_cf));
  it->Seek(begin);
  if (!it->Valid()) {
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kConvert, options.path);
    return uint64_t{0};
  }
  constexpr size_t kTextsPerBatch = 10000;
  rocksdb::WriteOptions write;
  write.sync = true;  // a handful of batches per million texts
  rocksdb::WriteBatch batch;
  size_t in_batch = 0;
  uint64_t converted = 0;
  rocksdb::Status s;
  for (; it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    if (key.size() != 2 + 32) {
      return damaged(absl::StrCat("chunk text key of ", key.size(), " bytes"),
                     absl::DataLossError("not 05 02 + SHA-256"));
    }
    Sha256Digest sha{};
    std::memcpy(sha.data(), key.data() + 2, sha.size());
    absl::StatusOr<fmt::ChunkTextValue> v =
        fmt::DecodeChunkTextValue(absl::string_view(it->value().data(), it->value().size()));
    if (!v.ok()) return damaged("chunk text record of " + Sha256Hex(sha), v.status());
    fmt::ChunkTextByIdValue out{sha,          v->simhash,       v->holders, v->owner_added,
                                v->owner_url, v->owner_chunk_id};
    if (!v->has_owner) {
      // Format 2: every holder has a record; the oldest becomes the owner.
      const std::string prefix = fmt::EncodeChunkHolderPrefix(sha);
      std::unique_ptr<rocksdb::Iterator> h(db->NewIterator(rocksdb::ReadOptions(), content_cf));
      h->Seek(prefix);
      if (!h->Valid() || !h->key().starts_with(prefix)) {
        if (!h->status().ok()) return FromRocksDbStatus(h->status(), kConvert, options.path);
        return damaged("chunk text " + Sha256Hex(sha),
                       absl::DataLossError("a format-2 text record without holder records"));
      }
      const absl::string_view hk(h->key().data(), h->key().size());
      absl::StatusOr<fmt::ChunkHolderKey> owner = fmt::DecodeChunkHolderKey(hk);
      if (!owner.ok()) return damaged("chunk holder of " + Sha256Hex(sha), owner.status());
      out.owner_added = owner->added;
      out.owner_url = std::move(owner->document_url);
      out.owner_chunk_id = std::move(owner->chunk_id);
      if (s.ok()) s = batch.Delete(content_cf, h->key());
    }
    if (s.ok()) s = batch.Delete(content_cf, it->key());
    if (s.ok()) s = batch.Delete(content_cf, fmt::EncodeChunkFingerprintKey(v->text_id));
    if (s.ok()) {
      s = batch.Put(content_cf, fmt::EncodeChunkTextByIdKey(v->text_id),
                    fmt::EncodeChunkTextByIdValue(out));
    }
    if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
    ++converted;
    if (++in_batch == kTextsPerBatch) {
      s = db->Write(write, &batch);
      if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
      batch.Clear();
      in_batch = 0;
    }
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kConvert, options.path);
  if (in_batch > 0) {
    s = db->Write(write, &batch);
    if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
  }
  return converted;
}

absl::Status RocksDbStore::Close() {
  // A rebuild scan holds `mu` shared: cancel it before waiting for `mu`.
  if (impl_->url_front != nullptr) impl_->url_front->StopRebuilds();
  std::unique_ptr<rocksdb::DB> db;
  {
    // Exclusive: waits for every call in flight to finish.
    absl::MutexLock lifecycle(&impl_->mu);
    if (impl_->db != nullptr) {
      // Export cursors still open: their snapshots must go before the
      // database (their next call fails with FailedPrecondition).
      absl::MutexLock exports(&impl_->export_mu);
      for (const rocksdb::Snapshot* snapshot : impl_->export_snapshots) {
        impl_->db->ReleaseSnapshot(snapshot);
      }
      impl_->export_snapshots.clear();
    }
    db = std::move(impl_->db);
  }
  if (db == nullptr) return absl::OkStatus();
  // With writes stopped by a background error (a full disk), neither a
  // flush nor a WAL sync may be asked for: a flush request then makes
  // RocksDB's error fatal, and a sync of the failed log writer trips an
  // assertion of this RocksDB build (aborting the process). So one last
  // Resume, and when that fails, close without either: every acknowledged
  // write is in the WAL, which the next Open replays.
  if (!impl_->TryResume(db.get())) {
    rocksdb::Status error;
    {
      absl::MutexLock lock(&impl_->write_stop->mu);
      error = impl_->write_stop->error;
    }
    const absl::Status stopped = impl_->StopCause(error, "close store");
    const absl::Status closed = impl_->CloseDb(db.get(), /*sync_wal=*/false);
    return absl::Status(
        stopped.code(),
        absl::StrCat(stopped.message(),
                     " (writes were stopped by this error: closed without flushing; "
                     "the write-ahead log holds every acknowledged write and the "
                     "next open replays it",
                     closed.ok() ? "" : absl::StrCat("; closing failed too: ", closed.message()),
                     ")"));
  }
  // Flush every column family, so the next Open replays no WAL (replay
  // re-inserts every record into a memtable: seconds per 100 MB). A failed
  // flush loses nothing (the WAL still holds the data), so the close goes
  // on and reports the failure.
  absl::Status flushed;
  {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
    if (impl_->content_cf != nullptr) families.push_back(impl_->content_cf);
    flushed = FromRocksDbStatus(db->Flush(flush, families), "flush store", impl_->options.path);
  }
  // The URL filter, tagged with the store's last sequence number: the next
  // Open uses it only if no write happened since. Its loss costs a rebuild,
  // never a wrong answer, so a failure is logged, not returned.
  if (impl_->url_front != nullptr && flushed.ok()) {
    absl::Status persisted = impl_->url_front->Persist(db->GetLatestSequenceNumber());
    if (!persisted.ok()) {
      std::fprintf(stderr,
                   "dedupd: warning: URL filter not saved (the next start rebuilds it): %s\n",
                   persisted.ToString().c_str());
    }
  }
  // SyncWAL is one fsync; skip it when every write was synced already.
  absl::Status closed = impl_->CloseDb(db.get(), /*sync_wal=*/!impl_->options.sync_writes);
  return flushed.ok() ? closed : flushed;
}

const std::string& RocksDbStore::path() const { return impl_->options.path; }

absl::Time RocksDbStore::created() const { return impl_->created; }

}  // namespace dedupd
