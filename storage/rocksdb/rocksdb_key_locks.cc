#include "storage/rocksdb/rocksdb_key_locks.h"

namespace dedupd::rocksdb_internal {

void KeyLockTable::Lock(absl::Span<const absl::string_view> keys) {
  absl::MutexLock lock(&mu_);
  auto all_free = [this, keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (absl::string_view k : keys) {
      if (locked_.contains(k)) return false;
    }
    return true;
  };
  // Waiting while holding nothing else cannot deadlock: a call registers
  // all its keys at once, and only after they are all free.
  mu_.Await(absl::Condition(&all_free));
  locked_.insert(keys.begin(), keys.end());
}

void KeyLockTable::Unlock(absl::Span<const absl::string_view> keys) {
  absl::MutexLock lock(&mu_);
  for (absl::string_view k : keys) locked_.erase(k);
}

}  // namespace dedupd::rocksdb_internal
