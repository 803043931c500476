// RocksDbStore: the URL records. Claims, lookups and the URL filter's
// rebuild scan, which share the sorted batch, the Bloom front's probes and
// one MultiGet.

#include <atomic>
#include <functional>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "storage/plan/url_planner.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

namespace {

SortedBatch SortBatch(absl::string_view name_space, absl::Span<const std::string> keys) {
  std::vector<std::string> encoded;
  encoded.reserve(keys.size());
  for (const std::string& k : keys) encoded.push_back(fmt::EncodeUrlKey(name_space, k));
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

absl::Status CheckInput(absl::string_view name_space, absl::Span<const std::string> keys) {
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(name_space));
  return CheckUrlKeys(keys);
}

}  // namespace

absl::Status RocksDbStore::Impl::MultiGet(rocksdb::DB* db, const SortedBatch& batch,
                                          absl::Span<const size_t> which, absl::string_view action,
                                          std::vector<std::optional<UrlRecord>>* records) {
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
    (*records)[u] = std::nullopt;
    if (statuses[j].IsNotFound()) continue;
    if (!statuses[j].ok()) {
      return FromRocksDbStatus(statuses[j], action, options.path);
    }
    absl::StatusOr<UrlRecord> r =
        fmt::DecodeUrlRecord(absl::string_view(values[j].data(), values[j].size()));
    if (!r.ok()) {
      absl::StatusOr<fmt::UrlKey> key = fmt::DecodeAnyUrlKey(batch.unique_keys[u]);
      return absl::DataLossError(absl::StrCat(
          action, " at ", options.path, ": record of URL \"",
          PrintableKey(key.ok() ? key->url : absl::string_view(batch.unique_keys[u])), "\"",
          key.ok() && !key->name_space.empty() ? absl::StrCat(" in namespace ", key->name_space)
                                               : "",
          ": ", r.status().message()));
    }
    (*records)[u] = *std::move(r);
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                                 absl::Time now, std::vector<UrlClaim>* results) {
  constexpr absl::string_view kAction = "claim URLs in store";
  results->assign(keys.size(), UrlClaim{});
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckInput(options.name_space, keys));

  // Everything that does not need the store happens before the locks.
  const SortedBatch batch = SortBatch(options.name_space, keys);
  const size_t n = batch.unique_keys.size();
  std::vector<std::optional<UrlRecord>> stored(n);
  std::vector<UrlPlan> plans(n);
  std::vector<bool> inserted(n, false);  // a record that was absent is written
  auto plan = [&](size_t u) {
    const size_t i = batch.first_position[u];
    plans[u] = PlanUrlClaim(stored[u], options, RevisitAfter(options, i), now);
  };

  std::vector<uint64_t> hashes(n);
  std::vector<bool> hashed(n, false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  // 1. Read every key the URL filter may contain, without any claim lock
  //    (the others were never stored: no read), and plan each. A key whose
  //    plan writes nothing (SEEN, or a retry of its claim id) is answered
  //    from this read: every rewrite of a record (a reclaim, a DUE, a
  //    confirmation) and its one delete (Forget) happen under the key's
  //    claim lock, so the read is ordered before or after each of them,
  //    and the answer is the one the store gave at that point.
  {
    const std::vector<size_t> read = impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  }
  std::vector<size_t> writes;
  for (size_t u = 0; u < n; ++u) {
    plan(u);
    if (plans[u].write.has_value()) writes.push_back(u);
  }
  if (!writes.empty()) {
    // 2. With those keys locked, look again (a claim that finished since
    //    step 1 may have written some): through a fresh view of the
    //    filter, which holds every key recorded by a claim that released
    //    its locks, and the store for the keys it may contain. Plan them
    //    again and write the records that change in one WriteBatch; answer
    //    only after the WAL write, and hand the new keys to the filter
    //    before the locks are released.
    std::vector<absl::string_view> locked;
    locked.reserve(writes.size());
    for (size_t u : writes) locked.push_back(batch.unique_keys[u]);
    const KeyLocks locks(&impl_->key_locks, std::move(locked));
    const std::vector<size_t> read = impl_->KeysToRead(batch, writes, &hashes, &hashed);
    for (size_t u : writes) stored[u].reset();  // absent unless read again
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
    rocksdb::WriteBatch write_batch;
    for (size_t u : writes) {
      plan(u);
      if (!plans[u].write.has_value()) continue;
      inserted[u] = !stored[u].has_value();
      rocksdb::Status s =
          write_batch.Put(batch.unique_keys[u], fmt::EncodeUrlRecord(*plans[u].write));
      if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    }
    if (write_batch.Count() > 0) {
      // Returns after the WAL write (and fsync when sync_writes): only then
      // may any key be answered new.
      DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
      rocksdb::Status s = db->Write(impl_->write_options, &write_batch);
      if (!s.ok()) return impl_->WriteFailed(s, kAction);
      std::vector<uint64_t> new_hashes;
      for (size_t u : writes) {
        if (!inserted[u]) continue;
        if (!hashed[u]) hashes[u] = UrlFilterFront::KeyHash(batch.unique_keys[u]);
        new_hashes.push_back(hashes[u]);
      }
      impl_->url_front->Inserted(new_hashes);
    }
  }

  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t u = batch.slot[i];
    const UrlPlan& p = plans[u];
    if (batch.first_position[u] == i) {
      (*results)[i] = p.answer;
    } else {
      (*results)[i] = SeenAnswer(p.write.has_value() ? *p.write : *stored[u]);
    }
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::LookupRecords(absl::string_view name_space,
                                         absl::Span<const std::string> keys,
                                         std::vector<std::optional<UrlRecord>>* records) {
  constexpr absl::string_view kAction = "look up URLs in store";
  records->assign(keys.size(), std::nullopt);
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckInput(name_space, keys));
  const SortedBatch batch = SortBatch(name_space, keys);
  std::vector<std::optional<UrlRecord>> stored(batch.unique_keys.size());

  std::vector<uint64_t> hashes(batch.unique_keys.size());
  std::vector<bool> hashed(batch.unique_keys.size(), false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  // Keys the URL filter rules out were never stored: no read.
  const std::vector<size_t> read = impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  for (size_t i = 0; i < keys.size(); ++i) {
    (*records)[i] = stored[batch.slot[i]];
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Complete(absl::string_view name_space, uint64_t claim_id_hash,
                                    absl::Span<const std::string> keys,
                                    std::vector<UrlCompletion>* results) {
  constexpr absl::string_view kAction = "confirm URLs in store";
  results->assign(keys.size(), UrlCompletion::kNotClaimed);
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckInput(name_space, keys));
  const SortedBatch batch = SortBatch(name_space, keys);
  const size_t n = batch.unique_keys.size();
  std::vector<std::optional<UrlRecord>> stored(n);
  std::vector<UrlCompletePlan> plans(n);
  std::vector<uint64_t> hashes(n);
  std::vector<bool> hashed(n, false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  std::vector<absl::string_view> locked(batch.unique_keys.begin(), batch.unique_keys.end());
  const KeyLocks locks(&impl_->key_locks, std::move(locked));
  const std::vector<size_t> read = impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  rocksdb::WriteBatch write_batch;
  for (size_t u = 0; u < n; ++u) {
    plans[u] = PlanUrlComplete(stored[u], claim_id_hash);
    if (!plans[u].write.has_value()) continue;
    rocksdb::Status s =
        write_batch.Put(batch.unique_keys[u], fmt::EncodeUrlRecord(*plans[u].write));
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
  }
  if (write_batch.Count() > 0) {
    DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
    rocksdb::Status s = db->Write(impl_->write_options, &write_batch);
    if (!s.ok()) return impl_->WriteFailed(s, kAction);
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t u = batch.slot[i];
    // A repeat in the batch: the first position confirmed it.
    const bool repeat = batch.first_position[u] != i;
    (*results)[i] = repeat && plans[u].outcome == UrlCompletion::kConfirmed
                        ? UrlCompletion::kAlreadyConfirmed
                        : plans[u].outcome;
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
  uint64_t n = 0;
  // The URL records of the empty namespace (tag kTagUrl), then those of
  // the named ones (kTagNamespace: the default family holds no other
  // namespaced record).
  for (const char tag : {fmt::kTagUrl, fmt::kTagNamespace}) {
    const std::string first(1, tag);
    const std::string end(1, static_cast<char>(tag + 1));
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;  // a one-off pass must not evict the working set
    read.readahead_size = size_t{2} << 20;
    // The iterator's implicit snapshot is taken here, after the front
    // registered the filter being built (UrlFilterFront's rule).
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
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
  }
  return absl::OkStatus();
}

}  // namespace dedupd
