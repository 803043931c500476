// rocksdb_key_locks.h: per-key claim locks of RocksDbStore (private to
// storage/rocksdb/). A call registers every key it will read-then-write at
// once (waiting while another call holds any of them) and unregisters them
// when done, so the read that finds a key absent and the write that records
// it are one atomic step against every other call that locks that key,
// while calls with disjoint keys run in parallel.
//
// Example:
//   const KeyLocks locks(&impl->key_locks, {absl::string_view(key)});
//   // read `key`, write it, then `locks` goes out of scope.
//
// Thread safety: KeyLockTable is thread-safe. Deadlock-free as long as a
// call that already holds locks takes more only through the documented
// two-step orders of rocksdb_store.h (document key, then text keys). Its
// mutex is a leaf, held only inside Lock and Unlock: a caller may hold
// Impl::mu while it waits (key locks are acquired after mu), never the
// other way round.
#ifndef DEDUPD_STORAGE_ROCKSDB_ROCKSDB_KEY_LOCKS_H_
#define DEDUPD_STORAGE_ROCKSDB_ROCKSDB_KEY_LOCKS_H_

#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace dedupd::rocksdb_internal {

class KeyLockTable {
 public:
  // Lock registers `keys` once none of them is registered (by any caller).
  // The views must stay valid until Unlock.
  void Lock(absl::Span<const absl::string_view> keys);
  // Unlock unregisters `keys`. REQUIRES: Lock(keys) was called.
  void Unlock(absl::Span<const absl::string_view> keys);

 private:
  absl::Mutex mu_;
  // Views of keys owned by the registering call, which outlives the
  // registration.
  absl::flat_hash_set<absl::string_view> locked_ ABSL_GUARDED_BY(mu_);
};

// KeyLocks holds the locks of `keys` (none when empty) in `table` from its
// construction to its destruction. The views must outlive it.
class KeyLocks {
 public:
  KeyLocks(KeyLockTable* table, std::vector<absl::string_view> keys)
      : table_(table), keys_(std::move(keys)) {
    if (!keys_.empty()) table_->Lock(keys_);
  }
  ~KeyLocks() {
    if (!keys_.empty()) table_->Unlock(keys_);
  }
  KeyLocks(const KeyLocks&) = delete;
  KeyLocks& operator=(const KeyLocks&) = delete;

 private:
  KeyLockTable* const table_;
  const std::vector<absl::string_view> keys_;
};

}  // namespace dedupd::rocksdb_internal

#endif  // DEDUPD_STORAGE_ROCKSDB_ROCKSDB_KEY_LOCKS_H_
