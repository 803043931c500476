// admin.h: the logic of the dedupd.v1.Admin calls (Stats, Backup, Export,
// Forget),
// free of gRPC like Engine, plus RestoreBackup for `dedupd --restore_from`.
// The gRPC adapter is admin_service.h.
//
// Example:
//   AdminOps admin(store.get(), /*url_bloom=*/nullptr, &normalizer, absl::Now());
//   v1::StatsResponse stats;
//   DEDUPD_RETURN_IF_ERROR(admin.Stats(v1::StatsRequest(), &stats));
//   v1::BackupRequest backup;
//   backup.set_directory("/backups/dedupd-2026-12-01");
//   v1::BackupResponse done;
//   DEDUPD_RETURN_IF_ERROR(admin.Backup(backup, &done));
//   // later, in a fresh process:
//   DEDUPD_RETURN_IF_ERROR(RestoreBackup("/backups/dedupd-2026-12-01", "/data"));
#ifndef DEDUPD_SERVER_ADMIN_H_
#define DEDUPD_SERVER_ADMIN_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/admin.pb.h"
#include "storage/bloom/bloom_url_store.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace dedupd {

class RedisUrlStore;  // storage/redis/redis_url_store.h

// The subdirectory of a backup (and of a data directory) that holds the
// approximate URL mode's seen-set (BloomUrlStore).
inline constexpr char kUrlBloomDirName[] = "url-bloom";

// Export messages are cut after about this many bytes of records.
inline constexpr size_t kExportMessageBytes = size_t{1} << 20;

// URLs per Forget call at most: each is a scan of every content and alias
// record (0.55-0.78 s per million texts measured), so a full batch on a
// store of a million texts takes about a minute.
inline constexpr int kMaxForgetUrls = 100;

// AdminOps: thread-safe. Backups run one at a time.
class AdminOps {
 public:
  // REQUIRES: `store` (and `url_bloom`, null in exact URL mode) and
  // `normalizer` (the one CheckUrl uses, so that Forget removes the same
  // keys) outlive this object. `started`: when the server started, for the
  // uptime.
  AdminOps(RocksDbStore* store, BloomUrlStore* url_bloom, const UrlNormalizer* normalizer,
           absl::Time started);
  // A Redis Cluster front end's (--store=redis_cluster): Stats reports the
  // store kind, the meta's versions, the cluster's health and each
  // master's key count and memory; Forget runs on `content` (the cluster's
  // content store, which also removes the URL's seen-set record);
  // DropNamespace scans the masters (redis::DropNamespace); Backup and
  // Export answer Unimplemented, naming what to use instead.
  // REQUIRES: `redis`, `content` and `normalizer` outlive this object.
  AdminOps(RedisUrlStore* redis, ContentStore* content, const UrlNormalizer* normalizer,
           absl::Time started);

  // Stats fills `response` from RocksDbStore::Stats(request.exact()) (see
  // admin.proto for each field), or, on a Redis Cluster, from the store's
  // meta and its router (never fails then). Errors: as RocksDbStore::Stats.
  absl::Status Stats(const v1::StatsRequest& request, v1::StatsResponse* response) const;

  // Backup checkpoints the store into request.directory() and, in
  // approximate URL mode, writes the seen-set to its url-bloom
  // subdirectory. A failed backup removes what it wrote.
  // Errors: InvalidArgument for an empty or relative directory (the path is
  // on the server; a relative one would depend on its working directory);
  // FailedPrecondition when it exists or its parent does not; Unavailable
  // while another backup runs; the store's I/O errors otherwise;
  // Unimplemented on a Redis Cluster (back up its nodes instead).
  absl::Status Backup(const v1::BackupRequest& request, v1::BackupResponse* response);

  // StartExport opens a cursor over one snapshot of the store (see
  // RocksDbStore::NewExport). Errors: FailedPrecondition after Close;
  // Unimplemented on a Redis Cluster (no snapshot to list in key order).
  absl::StatusOr<std::unique_ptr<ExportCursor>> StartExport(const v1::ExportRequest& request) const;

  // NextExport fills `response` (cleared first) with the cursor's next
  // records, about kExportMessageBytes at most, and sets *done after the
  // last. Errors: as ExportCursor::Next.
  static absl::Status NextExport(ExportCursor* cursor, v1::ExportResponse* response, bool* done);

  // Forget normalizes each request URL and calls RocksDbStore::Forget for
  // it, one after another, filling one result per URL in request order (see
  // admin.proto). A URL that does not normalize gets its result's `error`;
  // the others are still forgotten. In approximate URL mode a result says
  // whether the seen-set still answers "probably seen" for the URL.
  // Errors: InvalidArgument for no URL or more than kMaxForgetUrls (nothing
  // forgotten); the store's errors, naming the URL (the URLs before it stay
  // forgotten, `response` then holds their results); Cancelled when
  // `cancelled` (may be null) returns true before a URL (checked between
  // URLs: the client gave up, the rest is not worth the scans).
  absl::Status Forget(const v1::ForgetRequest& request, v1::ForgetResponse* response,
                      const std::function<bool()>& cancelled = nullptr);

  // DropNamespace calls RocksDbStore::DropNamespace (see admin.proto), or
  // on a Redis Cluster redis::DropNamespace under the store's key prefix
  // (not atomic: docs/redis_format.md, "Dropping a namespace"); `found` is
  // whether it deleted any key. Errors: as those; FailedPrecondition in
  // approximate URL mode; on a Redis Cluster, Cancelled when `cancelled`
  // (may be null; asked between SCAN pages) returns true — the keys
  // deleted so far stay deleted, and running the drop again finishes it.
  absl::Status DropNamespace(const v1::DropNamespaceRequest& request,
                             v1::DropNamespaceResponse* response,
                             const std::function<bool()>& cancelled = nullptr);

 private:
  absl::Status RedisStats(v1::StatsResponse* response) const;

  RocksDbStore* const store_;  // null on a Redis Cluster
  BloomUrlStore* const url_bloom_;
  RedisUrlStore* const redis_ = nullptr;  // null on RocksDB
  // What Forget runs on: store_ on RocksDB, the Redis content store on a
  // cluster.
  ContentStore* const content_;
  const UrlNormalizer* const normalizer_;
  const absl::Time started_;
  absl::Mutex backup_mu_;
};

// RestoreBackup copies the backup in `backup_dir` (made by Admin.Backup)
// into `data_dir`, which must not exist or be empty: the copy is made in
// `data_dir`.restore-tmp and renamed into place, so a failed restore leaves
// no half-filled data directory. Run it before the store is opened.
// Errors: InvalidArgument for empty paths; FailedPrecondition when
// `backup_dir` is not a backup (no RocksDB CURRENT file), `data_dir` is not
// empty, or the temporary directory exists; Unavailable/ResourceExhausted
// for I/O errors. Messages name the paths.
absl::Status RestoreBackup(const std::string& backup_dir, const std::string& data_dir);

}  // namespace dedupd

#endif  // DEDUPD_SERVER_ADMIN_H_
