// RocksDbStore: the URL records. Claims, lookups and the URL filter's
// rebuild scan, which share the sorted batch, the Bloom front's probes and
// one MultiGet.

#include <atomic>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

namespace {

SortedBatch SortBatch(absl::Span<const std::string> keys) {
  std::vector<std::string> encoded;
  encoded.reserve(keys.size());
  for (const std::string& k : keys) encoded.push_back(fmt::EncodeUrlKey(k));
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable, so that among equal keys the earliest position comes first.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return encoded[a] < encoded[b]; });
  SortedBatch batch;
  batch.slot.resize(keys.size());
  for (size_t i : order) {
    if (batch.unique_keys.empty() || encoded[i] != batch.unique_keys.back()) {
      batch.unique_keys.push_back(std::move(encoded[i]));
      batch.first_position.push_back(i);
    }
    batch.slot[i] = batch.unique_keys.size() - 1;
  }
  batch.all.resize(batch.unique_keys.size());
  std::iota(batch.all.begin(), batch.all.end(), size_t{0});
  return batch;
}

}  // namespace

absl::Status RocksDbStore::Impl::MultiGet(rocksdb::DB* db, const SortedBatch& batch,
                                          absl::Span<const size_t> which, absl::string_view action,
                                          std::vector<std::optional<absl::Time>>* first_seen) {
  const size_t n = which.size();
  if (n == 0) return absl::OkStatus();
  std::vector<rocksdb::Slice> slices;
  slices.reserve(n);
  for (size_t u : which) slices.emplace_back(batch.unique_keys[u]);
  std::vector<rocksdb::PinnableSlice> values(n);
  std::vector<rocksdb::Status> statuses(n);
  db->MultiGet(rocksdb::ReadOptions(), db->DefaultColumnFamily(), n, slices.data(), values.data(),
               statuses.data(),
               /*sorted_input=*/true);
  for (size_t j = 0; j < n; ++j) {
    const size_t u = which[j];
    (*first_seen)[u] = std::nullopt;
    if (statuses[j].IsNotFound()) continue;
    if (!statuses[j].ok()) {
      return FromRocksDbStatus(statuses[j], action, options.path);
    }
    absl::StatusOr<absl::Time> t =
        fmt::DecodeUrlValue(absl::string_view(values[j].data(), values[j].size()));
    if (!t.ok()) {
      return absl::DataLossError(
          absl::StrCat(action, " at ", options.path, ": record of URL \"",
                       PrintableKey(absl::string_view(batch.unique_keys[u]).substr(1)),
                       "\": ", t.status().message()));
    }
    (*first_seen)[u] = *t;
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::ClaimUrls(absl::Span<const std::string> keys, absl::Time now,
                                     std::vector<UrlClaim>* results) {
  constexpr absl::string_view kAction = "claim URLs in store";
  results->assign(keys.size(), UrlClaim{});
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));

  // Everything that does not need the store happens before the locks.
  const absl::Time first_seen = absl::FromUnixMicros(absl::ToUnixMicros(now));
  const std::string new_value = fmt::EncodeUrlValue(first_seen);
  const SortedBatch batch = SortBatch(keys);
  const size_t n = batch.unique_keys.size();
  std::vector<std::optional<absl::Time>> stored(n);
  std::vector<bool> recorded(n, false);

  std::vector<uint64_t> hashes(n);
  std::vector<bool> hashed(n, false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  // 1. Read every key the URL filter may contain, without any claim lock
  //    (the others were never stored: no read). Records are never
  //    overwritten, so a key found here is SEEN with its final first-seen
  //    time; hits (re-crawled outlinks) then cost no serialized time, and
  //    their block reads run in parallel. Only Forget deletes a URL record,
  //    under the key's claim lock: a claim that found the key before the
  //    delete is ordered before that Forget (it answers SEEN as the store
  //    was when it read), one that did not finds it absent and claims it.
  {
    const std::vector<size_t> read = impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  }
  std::vector<size_t> absent;
  for (size_t u = 0; u < n; ++u) {
    if (!stored[u].has_value()) absent.push_back(u);
  }
  if (!absent.empty()) {
    // 2. With the absent keys locked, look again (a claim that finished
    //    since step 1 may have recorded some): through a fresh view of the
    //    filter, which holds every key recorded by a claim that released
    //    its locks, and the store for the keys it may contain. Record the
    //    rest in one WriteBatch, answer only after the WAL write, and hand
    //    the new keys to the filter before the locks are released.
    std::vector<absl::string_view> locked;
    locked.reserve(absent.size());
    for (size_t u : absent) locked.push_back(batch.unique_keys[u]);
    const KeyLocks locks(&impl_->key_locks, std::move(locked));
    const std::vector<size_t> read = impl_->KeysToRead(batch, absent, &hashes, &hashed);
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
    rocksdb::WriteBatch write_batch;
    std::vector<uint64_t> new_hashes;
    for (size_t u : absent) {
      if (stored[u].has_value()) continue;
      rocksdb::Status s = write_batch.Put(batch.unique_keys[u], new_value);
      if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
      recorded[u] = true;
    }
    if (write_batch.Count() > 0) {
      // Returns after the WAL write (and fsync when sync_writes): only then
      // may any key be answered new.
      DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
      rocksdb::Status s = db->Write(impl_->write_options, &write_batch);
      if (!s.ok()) return impl_->WriteFailed(s, kAction);
      new_hashes.reserve(write_batch.Count());
      for (size_t u : absent) {
        if (!recorded[u]) continue;
        if (!hashed[u]) hashes[u] = UrlFilterFront::KeyHash(batch.unique_keys[u]);
        new_hashes.push_back(hashes[u]);
      }
      impl_->url_front->Inserted(new_hashes);
    }
  }

  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t u = batch.slot[i];
    UrlClaim& out = (*results)[i];
    if (recorded[u]) {
      out.is_new = batch.first_position[u] == i;
      out.first_seen = first_seen;
    } else {
      out.first_seen = *stored[u];
    }
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::LookupUrls(absl::Span<const std::string> keys,
                                      std::vector<std::optional<absl::Time>>* results) {
  constexpr absl::string_view kAction = "look up URLs in store";
  results->assign(keys.size(), std::nullopt);
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));
  const SortedBatch batch = SortBatch(keys);
  std::vector<std::optional<absl::Time>> stored(batch.unique_keys.size());

  std::vector<uint64_t> hashes(batch.unique_keys.size());
  std::vector<bool> hashed(batch.unique_keys.size(), false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  // Keys the URL filter rules out were never stored: no read.
  const std::vector<size_t> read = impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  for (size_t i = 0; i < keys.size(); ++i) {
    (*results)[i] = stored[batch.slot[i]];
  }
  return absl::OkStatus();
}

UrlFilterFront::Stats RocksDbStore::url_filter_stats() const { return impl_->url_front->stats(); }

bool RocksDbStore::WaitForUrlFilter(absl::Duration timeout) const {
  return impl_->url_front->WaitForRebuild(timeout);
}

absl::Status RocksDbStore::Impl::ScanUrlKeys(const std::function<void(absl::string_view)>& emit,
                                             const std::atomic<bool>& cancel) {
  constexpr absl::string_view kAction = "rebuild the URL filter of store";
  absl::ReaderMutexLock lifecycle(&mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, LiveDb(kAction));
  const std::string first(1, fmt::kTagUrl);
  const std::string end(1, static_cast<char>(fmt::kTagUrl + 1));
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  read.fill_cache = false;  // a one-off pass must not evict the working set
  read.readahead_size = size_t{2} << 20;
  // The iterator's implicit snapshot is taken here, after the front
  // registered the filter being built (UrlFilterFront's rule).
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
  uint64_t n = 0;
  for (it->Seek(first); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    emit(absl::string_view(key.data(), key.size()));
    if ((++n & 4095) == 0 && cancel.load(std::memory_order_relaxed)) {
      return absl::CancelledError(
          absl::StrCat(kAction, " at ", options.path, ": cancelled by Close"));
    }
  }
  if (!it->status().ok()) {
    return FromRocksDbStatus(it->status(), kAction, options.path);
  }
  return absl::OkStatus();
}

}  // namespace dedupd
