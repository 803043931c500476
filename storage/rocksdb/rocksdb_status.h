// rocksdb_status.h: the one conversion of a RocksDB status to an
// absl::Status, declared apart from rocksdb_store.h so that its test can
// call it. Internal to the RocksDB backend: only RocksDbStore's files
// (rocksdb_*.cc, through rocksdb_store_internal.h) and rocksdb_store_test.cc
// include this header. It forward-declares rocksdb::Status instead of
// including RocksDB.
//
// Example (inside RocksDbStore, e.g. rocksdb_url_records.cc):
//   return FromRocksDbStatus(db->Write(wo, &batch), "claim URLs in store",
//                            path);
//   // e.g. ResourceExhausted "claim URLs in store at /data: IO error: No
//   // space left on device"
//
// Thread safety: a pure function.
#ifndef DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STATUS_H_
#define DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rocksdb {
class Status;
}  // namespace rocksdb

namespace dedupd::rocksdb_internal {

// FromRocksDbStatus maps `s` by what the caller should do, with the message
// "<action> at <path>: <RocksDB's text>":
//   OK                                   → OK
//   LOCK held (IOError, by message)      → FailedPrecondition "data directory
//                                          <path> is in use by another
//                                          process (RocksDB LOCK held): ..."
//   NoSpace, SpaceLimit, MemoryLimit     → ResourceExhausted
//   Corruption                           → DataLoss
//   InvalidArgument                      → InvalidArgument
//   PathNotFound                         → FailedPrecondition
//   IOError (other), Busy, TimedOut,
//   TryAgain, ShutdownInProgress         → Unavailable (transient: retry)
//   anything else                        → Internal
absl::Status FromRocksDbStatus(const rocksdb::Status& s, absl::string_view action,
                               absl::string_view path);

}  // namespace dedupd::rocksdb_internal

#endif  // DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STATUS_H_
