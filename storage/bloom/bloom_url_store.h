// bloom_url_store.h: the URL layer's approximate mode. The seen-set
// IS a Bloom filter: no per-URL record is kept, memory is fixed (about 1.2 GB
// for 10^9 URLs at 1%), and a false positive means a new URL is answered
// "probably seen" and skipped (an accepted loss, said in the verdict:
// SEEN_PROBABLY). For crawls too large for a record per URL.
//
// Durability: every key hash answered is_new is appended to a claim log
// (write(2) before the call returns; fsync too when sync_writes), so kill -9
// never loses an acknowledged NEW. The filter is snapshotted periodically
// (a new log is started, the words are copied and written to a new snapshot
// file, then older logs are deleted), so restart reads one snapshot and
// replays at most the log written since it. Files, the claim-log format,
// recovery rules and the snapshot procedure: docs/bloom_url_store.md (the
// filter's own serialized form: docs/bloom_filter.md).
//
// Example:
//   BloomUrlStoreOptions options;
//   options.path = "/data/dedupd/url-bloom";
//   options.expected_urls = 1'000'000'000;
//   options.false_positive_rate = 0.01;
//   DEDUPD_ASSIGN_OR_RETURN(std::unique_ptr<BloomUrlStore> store,
//                           BloomUrlStore::Open(options));
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR(store->ClaimUrls(keys, absl::Now(), &out));
//   // out[i].is_new: recorded now; otherwise "probably seen before".
//   DEDUPD_RETURN_IF_ERROR(store->Close());
#ifndef DEDUPD_STORAGE_BLOOM_BLOOM_URL_STORE_H_
#define DEDUPD_STORAGE_BLOOM_BLOOM_URL_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/url_store.h"

namespace dedupd {

struct BloomUrlStoreOptions {
  // The directory of the snapshot and claim-log files; created when
  // missing. One process at a time (a LOCK file is held with flock).
  // Required: non-empty.
  std::string path;

  // The design capacity: the number of URLs the filter is sized for. Past
  // it the false positive rate climbs above false_positive_rate; the store
  // keeps answering and stats() says so (over_capacity). Fixed when the
  // store is created: a later Open with another size keeps the stored one.
  // Default: 100,000,000 (about 120 MB at 1%).
  uint64_t expected_urls = 100'000'000;

  // The false positive rate at the design capacity: the share of new URLs
  // wrongly answered SEEN_PROBABLY when the filter holds expected_urls.
  // Default: 0.01. Range: (0, 0.5].
  double false_positive_rate = 0.01;

  // When non-zero, the filter's size in bytes instead of the size derived
  // from expected_urls and false_positive_rate (rounded down to whole
  // 64-byte blocks); expected_urls then only sets the capacity warning.
  // Default: 0.
  size_t memory_budget_bytes = 0;

  // fsync the claim log once per ClaimUrls batch that records a new key,
  // before answering (survives power loss). When false the log is still
  // written to the OS before the answer, which survives kill -9.
  // Default: false.
  bool sync_writes = false;

  // A snapshot is written once this many keys were logged since the last
  // one, which bounds the log replayed at restart (8 bytes per key plus 12
  // per batch record; docs/bloom_url_store.md). 0 disables count-triggered
  // snapshots.
  // Default: 10,000,000.
  uint64_t snapshot_every_keys = 10'000'000;

  // A snapshot is also written when this much time passed since the last
  // one and some key was logged. Zero or negative disables it.
  // Default: 10 minutes.
  absl::Duration snapshot_interval = absl::Minutes(10);
};

// BloomUrlStore: UrlStore whose seen-set is a BloomFilter.
//
// Thread safety: thread-safe. ClaimUrls calls are serialized by one mutex
// (test, log append, set bits: about 0.1 ms per 1,000-key batch), which is
// what makes "exactly one caller gets is_new" hold; LookupUrls takes no
// lock. Snapshots run on a background thread and block claims only while a
// new log file is started.
class BloomUrlStore final : public UrlStore {
 public:
  // Open loads the newest valid snapshot in options.path (if any) and
  // replays the claim logs written after it; a torn record at the end of
  // the last log (power loss mid-write) is dropped, since it was never
  // acknowledged. Errors: InvalidArgument for bad options;
  // FailedPrecondition when another process holds the directory or a file
  // has another format version; DataLoss for a damaged snapshot or log
  // record that is not the torn tail; Unavailable / ResourceExhausted for
  // I/O errors. Messages start with the path.
  static absl::StatusOr<std::unique_ptr<BloomUrlStore>> Open(const BloomUrlStoreOptions& options);

  BloomUrlStore(const BloomUrlStore&) = delete;
  BloomUrlStore& operator=(const BloomUrlStore&) = delete;
  // Closes if Close was not called, logging a failure to stderr.
  ~BloomUrlStore() override;

  // See UrlStore. is_new: the key's bits were not all set, and it is now
  // logged and set; first_seen is `now` truncated to microseconds.
  // Otherwise the key was probably claimed before: a false positive is
  // possible, and first_seen is absl::InfinitePast() (no time is kept). Repeated keys in one batch:
  // new at most at their first position. Errors: InvalidArgument for an empty key,
  // FailedPrecondition after Close, Unavailable / ResourceExhausted when the log write fails (then
  // no key of the batch is set or answered new). A key of a namespace is
  // the hash of the namespace, a NUL byte and the key (KeyHash); the claim
  // id is not kept (a retry is answered as probably seen), and a lease is
  // InvalidArgument (nothing to expire: the filter keeps no records).
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override;

  // See UrlStore. A probably-seen key's record has InfinitePast times and
  // nothing else. Takes no lock. Errors: InvalidArgument for an empty key
  // or a bad namespace, FailedPrecondition after Close.
  absl::Status LookupRecords(absl::string_view name_space, absl::Span<const std::string> keys,
                             std::vector<std::optional<UrlRecord>>* records) override;

  // Unimplemented: the filter keeps no leases to confirm.
  absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                        absl::Span<const std::string> keys,
                        std::vector<UrlCompletion>* results) override;

  // KeyHash returns the filter hash of `key` in `name_space`: for the
  // empty namespace BloomFilter::KeyHash(key) (as every build before
  // namespaces), otherwise that of name_space + "\0" + key.
  static uint64_t KeyHash(absl::string_view name_space, absl::string_view key);

  // approximate: true; see UrlStore.
  bool approximate() const override { return true; }

  struct Stats {
    uint64_t capacity_urls = 0;  // the design capacity (expected_urls)
    uint64_t inserted_urls = 0;  // keys answered is_new, ever
    bool over_capacity = false;  // inserted_urls > capacity_urls
    double design_false_positive_rate = 0;
    // BloomFilter::BlockedFalsePositiveRate at inserted_urls.
    double estimated_false_positive_rate = 0;
    uint64_t memory_bytes = 0;       // the filter's bit array
    uint64_t log_bytes = 0;          // claim-log bytes since the last snapshot
    uint64_t snapshots_written = 0;  // by this process
    absl::Duration last_open_time;   // how long Open took (load + replay)
  };
  Stats stats() const;

  // WaitForSnapshots blocks until this process has written at least `n`
  // snapshots (each counted after the files it covers were deleted) or
  // `timeout` passes; returns whether it has. For tests.
  bool WaitForSnapshots(uint64_t n, absl::Duration timeout) const;

  // Snapshot writes a snapshot now and deletes the logs it covers. Blocks
  // claims only while the next log is created; holds two extra copies of
  // the filter's words for a moment (the copy and a filter built from it). Errors:
  // FailedPrecondition after Close; Unavailable / ResourceExhausted for I/O errors (the claims stay
  // safe in the logs).
  absl::Status Snapshot();

  // BackupTo writes the seen-set as it is now into `directory` (created;
  // it must not exist) as a store directory of its own: one snapshot file
  // holding every key answered is_new before the call, no claim log.
  // BloomUrlStore::Open of that directory gives the same answers. Holds the
  // claim mutex while the filter's words are copied (a memcpy of
  // memory_bytes). Errors: InvalidArgument for an empty path;
  // FailedPrecondition when `directory` exists or after Close; Unavailable /
  // ResourceExhausted / PermissionDenied-like errors for I/O.
  absl::Status BackupTo(const std::string& directory);

  // Close stops the snapshot thread, writes a final snapshot (so the next
  // Open replays nothing) and releases the directory. Idempotent; later
  // calls fail with FailedPrecondition.
  absl::Status Close();

 private:
  struct Impl;
  explicit BloomUrlStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_BLOOM_BLOOM_URL_STORE_H_
