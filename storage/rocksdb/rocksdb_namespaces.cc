// RocksDbStore: named namespaces as key ranges (tag 0x08): DropNamespace
// and the listing Stats reports.

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

absl::StatusOr<bool> RocksDbStore::DropNamespace(absl::string_view name) {
  constexpr absl::string_view kAction = "drop a namespace of store";
  if (name.empty()) {
    return absl::InvalidArgumentError(
        "namespace: the empty namespace cannot be dropped (it is not one key range): forget its "
        "URLs, or start a new store");
  }
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(name));
  const std::string begin = fmt::NamespacePrefix(name);
  const std::string end = fmt::PrefixEnd(begin);
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  bool found = false;
  for (rocksdb::ColumnFamilyHandle* family : {db->DefaultColumnFamily(), impl_->content_cf}) {
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
    it->Seek(begin);
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
    found = found || it->Valid();
  }
  if (!found) return false;
  // Content and chunk calls of the namespace hold its lock shared while
  // they use its indexes: with it held exclusively, none is under way, and
  // the next one finds the records gone and the indexes empty.
  Impl::NamedSpace* space = impl_->FindSpace(name, /*create=*/false);
  std::optional<absl::WriterMutexLock> space_lock;
  if (space != nullptr) space_lock.emplace(&space->mu);
  rocksdb::WriteBatch batch;
  for (rocksdb::ColumnFamilyHandle* family : {db->DefaultColumnFamily(), impl_->content_cf}) {
    rocksdb::Status s = batch.DeleteRange(family, begin, end);
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
  }
  DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
  rocksdb::Status s = db->Write(impl_->write_options, &batch);
  if (!s.ok()) return impl_->WriteFailed(s, kAction);
  if (space != nullptr) {
    space->index = std::make_unique<SimHashIndex>(impl_->options.simhash_max_distance,
                                                  impl_->options.simhash_index_blocks);
    space->near = std::make_unique<MinHashNearIndex>();
    space->chunk_index = std::make_unique<SimHashIndex>(impl_->options.simhash_max_distance,
                                                        impl_->options.simhash_index_blocks);
    space->chunk_near = std::make_unique<MinHashNearIndex>();
    space->chunk_text_ids = std::make_unique<ChunkTextIds>();
  }
  return true;
}

absl::Status RocksDbStore::Impl::ForEachNamespace(
    rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family, const rocksdb::Snapshot* snapshot,
    absl::string_view action, const std::function<absl::Status(const std::string&)>& fn) {
  // A skip scan of the family's namespace range: one seek per namespace,
  // to the end of the one before. Every key of the range starts with a
  // namespace prefix (tag, length, name); what follows depends on the
  // record kind.
  const std::string stop(1, static_cast<char>(fmt::kTagNamespace + 1));
  const rocksdb::Slice upper(stop);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot;
  read.iterate_upper_bound = &upper;
  read.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
  std::string next(1, fmt::kTagNamespace);
  for (it->Seek(next); it->Valid(); it->Seek(next)) {
    const absl::string_view k(it->key().data(), it->key().size());
    if (k.size() < 2 || k[1] == 0 || k.size() < size_t{2} + static_cast<uint8_t>(k[1])) {
      return absl::DataLossError(absl::StrCat(action, " at ", options.path,
                                              ": a namespace key is shorter than its prefix"));
    }
    const std::string name(k.substr(2, static_cast<uint8_t>(k[1])));
    absl::Status s = fn(name);
    if (absl::IsCancelled(s)) return absl::OkStatus();
    DEDUPD_RETURN_IF_ERROR(s);
    next = fmt::PrefixEnd(fmt::NamespacePrefix(name));
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), action, options.path);
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::LoadNamedSpaces(rocksdb::DB* db) {
  // The content family's namespaces, each loaded as the empty one is:
  // its fingerprint and chunk text ranges under its prefix.
  return ForEachNamespace(db, content_cf, /*snapshot=*/nullptr,
                          "load the namespaces' fingerprints of store",
                          [&](const std::string& name) {
                            NamedSpace* space = FindSpace(name, /*create=*/true);
                            return LoadSpace(db, fmt::NamespacePrefix(name), space->index.get(),
                                             space->near.get(), space->chunk_index.get(),
                                             space->chunk_near.get(), space->chunk_text_ids.get());
                          });
}

absl::Status RocksDbStore::Impl::ListNamespaces(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                                StoreStats* st) {
  constexpr absl::string_view kAction = "list the namespaces of store";
  // A skip scan: one seek per namespace, to the end of the one before.
  // Every named namespace has URL records or content-family records, so
  // both families are walked, merged by name.
  std::vector<std::string> names;
  for (rocksdb::ColumnFamilyHandle* family : {db->DefaultColumnFamily(), content_cf}) {
    DEDUPD_RETURN_IF_ERROR(
        ForEachNamespace(db, family, snapshot, kAction, [&](const std::string& name) {
          names.push_back(name);
          // Enough to list and to know there are more: stop the scan.
          return names.size() > 2 * StoreStats::kMaxListedNamespaces ? absl::CancelledError()
                                                                     : absl::OkStatus();
        }));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  st->more_namespaces = names.size() > StoreStats::kMaxListedNamespaces;
  if (st->more_namespaces) names.resize(StoreStats::kMaxListedNamespaces);
  rocksdb::SizeApproximationOptions size_options;
  size_options.include_memtables = true;
  size_options.include_files = true;
  for (std::string& name : names) {
    StoreStats::Namespace ns;
    ns.name = std::move(name);
    const std::string begin = fmt::NamespacePrefix(ns.name);
    const std::string end = fmt::PrefixEnd(begin);
    const rocksdb::Range range(begin, end);
    for (rocksdb::ColumnFamilyHandle* family : {db->DefaultColumnFamily(), content_cf}) {
      uint64_t bytes = 0;
      rocksdb::Status s = db->GetApproximateSizes(size_options, family, &range, 1, &bytes);
      if (!s.ok()) return FromRocksDbStatus(s, kAction, options.path);
      ns.estimated_bytes += bytes;
    }
    st->namespaces.push_back(std::move(ns));
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::CountNamespaceUrls(rocksdb::DB* db,
                                                    const rocksdb::Snapshot* snapshot,
                                                    StoreStats* st) {
  for (StoreStats::Namespace& ns : st->namespaces) {
    const std::string begin = fmt::NamespacePrefix(ns.name) + fmt::kTagUrl;
    const std::string end = fmt::PrefixEnd(begin);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.snapshot = snapshot;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, db->DefaultColumnFamily()));
    uint64_t n = 0;
    for (it->Seek(begin); it->Valid(); it->Next()) ++n;
    if (!it->status().ok()) {
      return FromRocksDbStatus(it->status(), "count the URLs of a namespace of store",
                               options.path);
    }
    ns.exact_url_count = n;
  }
  return absl::OkStatus();
}

}  // namespace dedupd
