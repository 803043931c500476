// bloom_url_store.cc: BloomUrlStore. Files, formats and recovery rules:
// docs/bloom_url_store.md.
//
// Why the claim path is correct: ClaimUrls tests, logs and sets bits under
// one mutex, so claims are totally ordered, and a key's bits are set only
// after its log record was written (and synced when asked): the in-memory
// filter never holds a bit that a restart would not rebuild. Snapshots
// copy the words after starting a new log under the same mutex: every key
// acknowledged before the rotation has its bits in the copy (Insert
// happened-before the mutex release that the rotation acquired), and every
// key acknowledged after it is in the new log, which the snapshot's tag
// says to replay. Keys set while the words are copied may be in both;
// replaying them again is harmless (setting bits is idempotent).
#include "storage/bloom/bloom_url_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "core/index/bloom_filter.h"
#include "storage/bloom/bloom_claim_log.h"

namespace dedupd {
namespace {

namespace log_format = ::dedupd::bloom_claim_log;

constexpr absl::string_view kSnapshotPrefix = "snapshot-";
constexpr absl::string_view kSnapshotSuffix = ".bloom";
constexpr absl::string_view kLogPrefix = "claims-";
constexpr absl::string_view kLogSuffix = ".log";
constexpr absl::string_view kTempSuffix = ".tmp";
// Snapshot files are written in pieces of this size.
constexpr size_t kWritePieceBytes = size_t{1} << 20;
// After a failed background snapshot, the next attempt waits this long.
constexpr absl::Duration kSnapshotRetryDelay = absl::Seconds(1);

std::string SnapshotName(uint64_t generation) {
  return absl::StrCat(kSnapshotPrefix, generation, kSnapshotSuffix);
}
std::string LogName(uint64_t generation) {
  return absl::StrCat(kLogPrefix, generation, kLogSuffix);
}

// Parses "<prefix><decimal><suffix>"; false for any other name.
bool ParseGenerationName(absl::string_view name, absl::string_view prefix, absl::string_view suffix,
                         uint64_t* generation) {
  if (!absl::ConsumePrefix(&name, prefix) || !absl::ConsumeSuffix(&name, suffix) || name.empty()) {
    return false;
  }
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  return absl::SimpleAtoi(name, generation);
}

using file_io::ErrnoStatus;
using file_io::ReadFile;
using file_io::RemoveFile;
using file_io::SyncDir;
using file_io::WriteAll;

// Prefixes a status's message, keeping its code.
absl::Status Annotate(const absl::Status& s, absl::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(prefix, ": ", s.message()));
}

// The generations of the snapshot and log files in `dir`, ascending, and
// the names of leftover temp files.
struct DirListing {
  std::vector<uint64_t> snapshots;
  std::vector<uint64_t> logs;
  std::vector<std::string> temps;
};

absl::StatusOr<DirListing> ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, dir, "list directory");
  DirListing listing;
  while (true) {
    errno = 0;
    const struct dirent* e = ::readdir(d);
    if (e == nullptr) {
      const int err = errno;
      ::closedir(d);
      if (err != 0) return ErrnoStatus(err, dir, "list directory");
      break;
    }
    const absl::string_view name = e->d_name;
    uint64_t generation = 0;
    if (ParseGenerationName(name, kSnapshotPrefix, kSnapshotSuffix, &generation)) {
      listing.snapshots.push_back(generation);
    } else if (ParseGenerationName(name, kLogPrefix, kLogSuffix, &generation)) {
      listing.logs.push_back(generation);
    } else if (absl::StartsWith(name, kSnapshotPrefix) && absl::EndsWith(name, kTempSuffix)) {
      listing.temps.emplace_back(name);
    }
  }
  std::sort(listing.snapshots.begin(), listing.snapshots.end());
  std::sort(listing.logs.begin(), listing.logs.end());
  return listing;
}

absl::Status CheckOptions(const BloomUrlStoreOptions& options) {
  if (options.path.empty()) {
    return absl::InvalidArgumentError("Bloom URL store: path is empty");
  }
  const std::string prefix = absl::StrCat(options.path, ": Bloom URL store: ");
  if (options.expected_urls == 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "expected_urls must be positive"));
  }
  if (!(options.false_positive_rate > 0 && options.false_positive_rate <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "false_positive_rate ", options.false_positive_rate, " is not in (0, 0.5]"));
  }
  if (options.memory_budget_bytes != 0) {
    const uint64_t blocks = options.memory_budget_bytes / (BloomFilter::kBlockBits / 8);
    if (blocks < 1 || blocks > BloomFilter::kMaxBlocks) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "memory_budget_bytes ", options.memory_budget_bytes,
                       " is outside [64, ", BloomFilter::kMaxBlocks * 64, "]"));
    }
  }
  return absl::OkStatus();
}

// The filter a new store starts with: sized from the options.
BloomFilter NewFilter(const BloomUrlStoreOptions& options) {
  if (options.memory_budget_bytes != 0) {
    const uint64_t blocks = options.memory_budget_bytes / (BloomFilter::kBlockBits / 8);
    const double bits_per_key = static_cast<double>(blocks) * BloomFilter::kBlockBits /
                                static_cast<double>(options.expected_urls);
    return BloomFilter(blocks, BloomFilter::OptimalProbes(bits_per_key));
  }
  const double bits_per_key = BloomFilter::BitsPerKeyFor(options.false_positive_rate);
  return BloomFilter(BloomFilter::BlocksFor(options.expected_urls, bits_per_key),
                     BloomFilter::OptimalProbes(bits_per_key));
}

absl::Time TruncateToMicros(absl::Time t) { return absl::FromUnixMicros(absl::ToUnixMicros(t)); }

}  // namespace

// CopyFilter copies the words of `filter` into a filter of their own,
// whose header (and words checksum) matches the copy: inserts may continue
// on `filter` meanwhile. `inserted` and `generation` go into the header.
absl::StatusOr<BloomFilter> CopyFilter(const BloomFilter& filter, uint64_t inserted,
                                       uint64_t generation, const std::string& dir) {
  BloomFilter::Header header;
  header.format_version = BloomFilter::kFormatVersion;
  header.num_probes = filter.num_probes();
  header.num_blocks = filter.num_blocks();
  header.inserted_keys = inserted;
  header.user_tag = generation;
  // Atomic word reads: Inserts run concurrently (a memcpy raced with them).
  const std::string words = filter.CopyWordBytes();
  header.words_checksum = BloomFilter::ChecksumWords(words);
  absl::StatusOr<BloomFilter> copy = BloomFilter::FromHeaderAndWords(header, words);
  if (!copy.ok()) {
    return absl::InternalError(
        absl::StrCat(dir, ": snapshot of a copied filter: ", copy.status().message()));
  }
  return copy;
}

// WriteSnapshotFile writes `copy` as snapshot `generation` of `dir`
// (written to a temporary name, fsynced, renamed, directory fsynced).
absl::Status WriteSnapshotFile(const std::string& dir, const BloomFilter& copy, uint64_t inserted,
                               uint64_t generation) {
  const std::string final_path = absl::StrCat(dir, "/", SnapshotName(generation));
  const std::string temp_path = absl::StrCat(final_path, kTempSuffix);
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, temp_path, "create snapshot");
  int err = WriteAll(fd, copy.EncodeHeader(inserted, generation));
  const absl::string_view words = copy.WordBytes();
  for (size_t pos = 0; err == 0 && pos < words.size(); pos += kWritePieceBytes) {
    err = WriteAll(fd, words.substr(pos, kWritePieceBytes));
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    err = errno;
  }
  if (err != 0) {
    ::unlink(temp_path.c_str());  // best effort; Open deletes leftovers
    return ErrnoStatus(err, temp_path, "write snapshot");
  }
  return SyncDir(dir);
}

struct BloomUrlStore::Impl {
  Impl(BloomUrlStoreOptions options_in, BloomFilter filter_in)
      : options(std::move(options_in)), filter(std::move(filter_in)) {}

  std::string Path(absl::string_view name) const { return absl::StrCat(options.path, "/", name); }

  // CreateLog creates log `generation` (which must not exist) and writes
  // its header; synced, with the directory, when sync_writes. Returns the
  // descriptor, open for appending.
  absl::StatusOr<int> CreateLog(uint64_t generation) const;

  // WriteSnapshot rotates the log and writes the snapshot that covers the
  // logs before the new one, then deletes them (see the header). With
  // `closing`, claims are refused from the rotation on.
  absl::Status WriteSnapshot(bool closing) ABSL_LOCKS_EXCLUDED(mu);

  // The background thread's body.
  void SnapshotLoop() ABSL_LOCKS_EXCLUDED(mu);

  // Condition of SnapshotLoop's wait.
  bool SnapshotDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return stop ||
           (options.snapshot_every_keys > 0 &&
            logged_since_snapshot >= options.snapshot_every_keys) ||
           (interval_due && logged_since_snapshot > 0);
  }

  // Releases the log and the directory lock. Idempotent.
  void ReleaseFiles() ABSL_LOCKS_EXCLUDED(mu, snapshot_mu);

  const BloomUrlStoreOptions options;
  // Fixed size; Insert/MayContain are thread-safe on their own. Bits are
  // set only under `mu`, after the key is logged.
  BloomFilter filter;
  double design_false_positive_rate = 0;
  absl::Duration open_time;
  int lock_fd = -1;  // the flock'ed LOCK file; set before threads start

  // Serializes snapshots. Acquired before `mu`, never while holding it.
  absl::Mutex snapshot_mu ABSL_ACQUIRED_BEFORE(mu);
  // The claim mutex.
  mutable absl::Mutex mu;
  int log_fd ABSL_GUARDED_BY(mu) = -1;
  uint64_t log_generation ABSL_GUARDED_BY(mu) = 0;
  // Bytes of whole records (and the header) in the current log. A failed
  // append truncates the log back to it; when that fails too, log_dirty
  // says the next append must truncate first.
  uint64_t log_size ABSL_GUARDED_BY(mu) = 0;
  bool log_dirty ABSL_GUARDED_BY(mu) = false;
  uint64_t pending_log_bytes ABSL_GUARDED_BY(mu) = 0;
  uint64_t inserted ABSL_GUARDED_BY(mu) = 0;
  uint64_t logged_since_snapshot ABSL_GUARDED_BY(mu) = 0;
  absl::Time last_rotation ABSL_GUARDED_BY(mu);
  bool interval_due ABSL_GUARDED_BY(mu) = false;
  bool warned_capacity ABSL_GUARDED_BY(mu) = false;
  uint64_t snapshots_written ABSL_GUARDED_BY(mu) = 0;
  bool stop ABSL_GUARDED_BY(mu) = false;    // Close began
  bool closed ABSL_GUARDED_BY(mu) = false;  // claims refused
  // `closed`, for LookupUrls, which takes no lock.
  std::atomic<bool> closed_for_lookups{false};
  std::thread snapshot_thread;
};

absl::StatusOr<int> BloomUrlStore::Impl::CreateLog(uint64_t generation) const {
  const std::string path = Path(LogName(generation));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, path, "create claim log");
  log_format::LogHeader header;
  header.generation = generation;
  header.num_blocks = filter.num_blocks();
  header.num_probes = static_cast<uint32_t>(filter.num_probes());
  int err = WriteAll(fd, log_format::EncodeLogHeader(header));
  if (err == 0 && options.sync_writes && ::fdatasync(fd) != 0) err = errno;
  if (err != 0) {
    ::close(fd);
    ::unlink(path.c_str());  // best effort: a torn header is also recovered
    return ErrnoStatus(err, path, "write claim log header");
  }
  if (options.sync_writes) {
    if (absl::Status s = SyncDir(options.path); !s.ok()) {
      ::close(fd);
      ::unlink(path.c_str());
      return s;
    }
  }
  return fd;
}

absl::Status BloomUrlStore::Impl::WriteSnapshot(bool closing) {
  absl::MutexLock snapshot_lock(&snapshot_mu);
  uint64_t generation = 0;
  uint64_t inserted_at_rotation = 0;
  // The log being replaced must be durable before the next one exists: a
  // torn tail is accepted only in the last log, so after a power loss an
  // earlier log must be whole. Sync most of it before taking the claim
  // mutex (log_fd changes only under snapshot_mu, which we hold), and the
  // few records appended meanwhile under the mutex.
  int old_fd = -1;
  uint64_t old_generation = 0;
  {
    absl::MutexLock lock(&mu);
    if (closed) {
      return absl::FailedPreconditionError(
          absl::StrCat(options.path, ": Bloom URL store is closed"));
    }
    old_fd = log_fd;
    old_generation = log_generation;
  }
  if (::fdatasync(old_fd) != 0) {
    return ErrnoStatus(errno, Path(LogName(old_generation)), "fsync claim log before rotation");
  }
  {
    // The cheap part, under the claim mutex: start log g+1.
    absl::MutexLock lock(&mu);
    if (closed) {
      return absl::FailedPreconditionError(
          absl::StrCat(options.path, ": Bloom URL store is closed"));
    }
    if (::fdatasync(log_fd) != 0) {
      return ErrnoStatus(errno, Path(LogName(log_generation)), "fsync claim log before rotation");
    }
    generation = log_generation + 1;
    absl::StatusOr<int> fd = CreateLog(generation);
    if (!fd.ok()) return fd.status();
    // The old log is synced; closing it loses nothing.
    ::close(log_fd);
    log_fd = *fd;
    log_generation = generation;
    log_size = log_format::kHeaderBytes;
    log_dirty = false;
    pending_log_bytes = log_format::kHeaderBytes;
    inserted_at_rotation = inserted;
    logged_since_snapshot = 0;
    last_rotation = absl::Now();
    interval_due = false;
    if (closing) {
      closed = true;
      closed_for_lookups.store(true);
    }
  }

  // The words as they are now: a superset of every bit acknowledged before
  // the rotation. Inserts continue meanwhile, so the checksum must be taken
  // over this copy, not over the live words; FromHeaderAndWords checks it
  // and gives a filter whose EncodeHeader is consistent with the copy.
  DEDUPD_ASSIGN_OR_RETURN(BloomFilter copy,
                          CopyFilter(filter, inserted_at_rotation, generation, options.path));
  DEDUPD_RETURN_IF_ERROR(WriteSnapshotFile(options.path, copy, inserted_at_rotation, generation));

  // The snapshot is durable: older logs and snapshots are redundant.
  absl::Status cleanup;
  absl::StatusOr<DirListing> listing = ListDir(options.path);
  if (!listing.ok()) {
    cleanup = listing.status();
  } else {
    for (uint64_t g : listing->logs) {
      if (g < generation) cleanup.Update(RemoveFile(Path(LogName(g))));
    }
    for (uint64_t g : listing->snapshots) {
      if (g < generation) cleanup.Update(RemoveFile(Path(SnapshotName(g))));
    }
  }
  // Counted once the whole procedure is done, so that a waiter
  // (WaitForSnapshots) sees the covered files gone.
  {
    absl::MutexLock lock(&mu);
    ++snapshots_written;
  }
  return cleanup;
}

void BloomUrlStore::Impl::SnapshotLoop() {
  absl::MutexLock lock(&mu);
  while (true) {
    const absl::Time deadline = options.snapshot_interval > absl::ZeroDuration() && !interval_due
                                    ? last_rotation + options.snapshot_interval
                                    : absl::InfiniteFuture();
    mu.AwaitWithDeadline(absl::Condition(this, &Impl::SnapshotDue), deadline);
    if (stop) return;
    if (!interval_due && options.snapshot_interval > absl::ZeroDuration() &&
        absl::Now() >= last_rotation + options.snapshot_interval) {
      // Snapshot at the next logged key (at once if there is one).
      interval_due = true;
    }
    if (!SnapshotDue()) continue;
    mu.Unlock();
    const absl::Status s = WriteSnapshot(/*closing=*/false);
    mu.Lock();
    if (!s.ok()) {
      std::fprintf(stderr, "dedupd: warning: background snapshot failed: %s\n",
                   std::string(s.message()).c_str());
      // Retry later, but wake at once for Close.
      mu.AwaitWithDeadline(absl::Condition(&stop), absl::Now() + kSnapshotRetryDelay);
      if (stop) return;
    }
  }
}

void BloomUrlStore::Impl::ReleaseFiles() {
  // Under snapshot_mu: WriteSnapshot syncs log_fd outside the claim mutex.
  absl::MutexLock snapshot_lock(&snapshot_mu);
  {
    absl::MutexLock lock(&mu);
    if (log_fd >= 0) ::close(log_fd);
    log_fd = -1;
  }
  // Closing the descriptor releases the flock.
  if (lock_fd >= 0) ::close(lock_fd);
  lock_fd = -1;
}

namespace {

// LockDir creates `dir` if needed and takes its LOCK file's flock. Returns
// the lock's descriptor (closing it releases the lock). FailedPrecondition
// when another store holds it.
absl::StatusOr<int> LockDir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, dir, "create directory");
  }
  const std::string lock_path = absl::StrCat(dir, "/LOCK");
  const int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd < 0) return ErrnoStatus(errno, lock_path, "open");
  // flock locks belong to the open file description, so a second Open in
  // this process conflicts too.
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, ": data directory is in use by another store (LOCK held)"));
    }
    return ErrnoStatus(err, lock_path, "flock");
  }
  return lock_fd;
}

// What Open recovers from a directory: the newest snapshot's filter (if
// any) with the claim logs replayed into it.
struct Recovered {
  std::optional<BloomFilter> filter;
  uint64_t inserted = 0;
  uint64_t first_log = 1;      // logs with generation >= this are replayed
  std::vector<uint64_t> logs;  // replayed, in order, without gaps
  uint64_t pending_log_bytes = 0;
  uint64_t replayed_keys = 0;
};

// LoadSnapshot: the starting point, the newest snapshot, when there is one.
// Only the newest is kept (older ones are deleted with the logs they
// cover), so a damaged one cannot be replaced: DataLoss.
absl::Status LoadSnapshot(const std::string& dir, const DirListing& listing, Recovered* r) {
  if (listing.snapshots.empty()) return absl::OkStatus();
  const uint64_t g = listing.snapshots.back();
  const std::string file = absl::StrCat(dir, "/", SnapshotName(g));
  DEDUPD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(file));
  absl::StatusOr<BloomFilter::Loaded> loaded = BloomFilter::Deserialize(bytes);
  if (!loaded.ok()) return Annotate(loaded.status(), file);
  if (loaded->header.user_tag != g) {
    return absl::DataLossError(absl::StrCat(file, ": snapshot tag ", loaded->header.user_tag,
                                            " does not match its file name"));
  }
  r->inserted = loaded->header.inserted_keys;
  r->filter.emplace(std::move(loaded->filter));
  r->first_log = g;
  return absl::OkStatus();
}

// SelectLogs: the logs to replay, first_log, first_log + 1, ... without
// gaps; DataLoss naming the missing one otherwise.
absl::Status SelectLogs(const std::string& dir, const DirListing& listing, Recovered* r) {
  for (uint64_t g : listing.logs) {
    if (g >= r->first_log) r->logs.push_back(g);
  }
  const std::vector<uint64_t>& logs = r->logs;
  if (!logs.empty() && logs.front() != r->first_log) {
    return absl::DataLossError(
        absl::StrCat(dir, ": ", LogName(r->first_log), " is missing (",
                     r->filter.has_value() ? SnapshotName(r->first_log) : "the store",
                     " needs it before ", LogName(logs.front()), ")"));
  }
  for (size_t i = 1; i < logs.size(); ++i) {
    if (logs[i] != logs[i - 1] + 1) {
      return absl::DataLossError(absl::StrCat(dir, ": ", LogName(logs[i - 1] + 1), " is missing"));
    }
  }
  return absl::OkStatus();
}

// CheckLogHeader: the log's header matches its file name and the filter
// (which the first log of a store without a snapshot creates: it fixes the
// size the store was created with; the options may have changed since).
absl::Status CheckLogHeader(const std::string& log_path, uint64_t generation,
                            const log_format::LogHeader& header,
                            std::optional<BloomFilter>* filter) {
  if (!filter->has_value()) {
    if (header.num_blocks < 1 || header.num_blocks > BloomFilter::kMaxBlocks ||
        header.num_probes < BloomFilter::kMinProbes ||
        header.num_probes > BloomFilter::kMaxProbes) {
      return absl::DataLossError(absl::StrCat(log_path,
                                              ": filter size out of range: ", header.num_blocks,
                                              " blocks, ", header.num_probes, " probes"));
    }
    filter->emplace(header.num_blocks, static_cast<int>(header.num_probes));
  }
  const BloomFilter& f = **filter;
  if (header.generation != generation || header.num_blocks != f.num_blocks() ||
      header.num_probes != static_cast<uint32_t>(f.num_probes())) {
    return absl::DataLossError(absl::StrCat(
        log_path, ": header says generation ", header.generation, ", ", header.num_blocks,
        " blocks, ", header.num_probes, " probes; expected generation ", generation, ", ",
        f.num_blocks(), " blocks, ", f.num_probes(), " probes"));
  }
  return absl::OkStatus();
}

// CutTornTail truncates the log to its whole records, so that it is whole
// once a newer one follows it. Synced: should the cut be lost, the log
// would be torn but no longer the last one.
absl::Status CutTornTail(const std::string& log_path, uint64_t valid_end) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, log_path, "open torn log");
  int err = 0;
  if (::ftruncate(fd, static_cast<off_t>(valid_end)) != 0 || ::fdatasync(fd) != 0) {
    err = errno;
  }
  ::close(fd);
  if (err != 0) return ErrnoStatus(err, log_path, "truncate torn tail");
  return absl::OkStatus();
}

// ReplayLogs replays r->logs into r->filter in order (creating the filter
// from the first log when there was no snapshot). A last log whose
// creation was cut short is deleted (nothing was acknowledged in it); a
// torn record is cut off the last log and is DataLoss in any other.
absl::Status ReplayLogs(const std::string& dir, Recovered* r) {
  for (size_t i = 0; i < r->logs.size(); ++i) {
    const bool last = i + 1 == r->logs.size();
    const std::string log_path = absl::StrCat(dir, "/", LogName(r->logs[i]));
    DEDUPD_ASSIGN_OR_RETURN(std::string bytes, ReadFile(log_path));
    const bool all_zero = std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
    if (last && (bytes.size() < log_format::kHeaderBytes || all_zero)) {
      DEDUPD_RETURN_IF_ERROR(RemoveFile(log_path));
      r->logs.pop_back();
      break;
    }
    absl::StatusOr<log_format::ParsedLog> parsed = log_format::ParseLog(bytes);
    if (!parsed.ok()) return Annotate(parsed.status(), log_path);
    DEDUPD_RETURN_IF_ERROR(CheckLogHeader(log_path, r->logs[i], parsed->header, &r->filter));
    const uint64_t valid_end = log_format::kHeaderBytes + parsed->records.valid_bytes;
    if (parsed->records.torn_tail) {
      if (!last) {
        return absl::DataLossError(absl::StrCat(log_path, ": claim log record at offset ",
                                                valid_end,
                                                " is torn, but this is not the last log"));
      }
      DEDUPD_RETURN_IF_ERROR(CutTornTail(log_path, valid_end));
    }
    // Each key answered new is in exactly one log, and the snapshot's
    // inserted_keys counts exactly the keys logged before its log: so
    // every replayed hash counts, also one whose bits the snapshot already
    // has (logged while the words were copied).
    for (uint64_t h : parsed->records.key_hashes) r->filter->Insert(h);
    r->inserted += parsed->records.key_hashes.size();
    r->pending_log_bytes += valid_end;
    r->replayed_keys += parsed->records.key_hashes.size();
  }
  return absl::OkStatus();
}

// Recover: the filter and logs of `dir`, after deleting unfinished
// snapshots (never renamed, so never relied on).
absl::StatusOr<Recovered> Recover(const std::string& dir) {
  DEDUPD_ASSIGN_OR_RETURN(DirListing listing, ListDir(dir));
  for (const std::string& temp : listing.temps) {
    DEDUPD_RETURN_IF_ERROR(RemoveFile(absl::StrCat(dir, "/", temp)));
  }
  Recovered r;
  DEDUPD_RETURN_IF_ERROR(LoadSnapshot(dir, listing, &r));
  DEDUPD_RETURN_IF_ERROR(SelectLogs(dir, listing, &r));
  DEDUPD_RETURN_IF_ERROR(ReplayLogs(dir, &r));
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<BloomUrlStore>> BloomUrlStore::Open(
    const BloomUrlStoreOptions& options) {
  const absl::Time start = absl::Now();
  DEDUPD_RETURN_IF_ERROR(CheckOptions(options));
  const std::string& dir = options.path;
  DEDUPD_ASSIGN_OR_RETURN(const int lock_fd, LockDir(dir));
  // From here on, every error path must release the lock.
  auto fail = [lock_fd](absl::Status s) {
    ::close(lock_fd);
    return s;
  };
  absl::StatusOr<Recovered> recovered = Recover(dir);
  if (!recovered.ok()) return fail(recovered.status());
  Recovered& r = *recovered;
  if (!r.filter.has_value()) r.filter.emplace(NewFilter(options));

  auto impl = std::make_unique<Impl>(options, *std::move(r.filter));
  impl->lock_fd = lock_fd;
  impl->design_false_positive_rate = BloomFilter::BlockedFalsePositiveRate(
      options.expected_urls, impl->filter.num_blocks(), impl->filter.num_probes());
  const uint64_t next_generation = r.logs.empty() ? r.first_log : r.logs.back() + 1;
  {
    absl::MutexLock lock(&impl->mu);
    absl::StatusOr<int> log_fd = impl->CreateLog(next_generation);
    if (!log_fd.ok()) return fail(log_fd.status());
    impl->log_fd = *log_fd;
    impl->log_generation = next_generation;
    impl->log_size = log_format::kHeaderBytes;
    impl->pending_log_bytes = r.pending_log_bytes + log_format::kHeaderBytes;
    impl->inserted = r.inserted;
    // Replayed keys count toward the next snapshot: a restart now would
    // replay them again.
    impl->logged_since_snapshot = r.replayed_keys;
    impl->last_rotation = absl::Now();
    if (r.inserted > options.expected_urls) {
      impl->warned_capacity = true;
      std::fprintf(stderr,
                   "dedupd: warning: %s: the Bloom URL store holds %llu URLs, "
                   "over its capacity of %llu: false positives exceed %g\n",
                   dir.c_str(), static_cast<unsigned long long>(r.inserted),
                   static_cast<unsigned long long>(options.expected_urls),
                   options.false_positive_rate);
    }
  }
  Impl* raw = impl.get();
  impl->snapshot_thread = std::thread([raw] { raw->SnapshotLoop(); });
  impl->open_time = absl::Now() - start;
  return std::unique_ptr<BloomUrlStore>(new BloomUrlStore(std::move(impl)));
}

BloomUrlStore::BloomUrlStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

BloomUrlStore::~BloomUrlStore() {
  bool closed;
  {
    absl::MutexLock lock(&impl_->mu);
    closed = impl_->stop;
  }
  if (closed) return;
  if (absl::Status s = Close(); !s.ok()) {
    std::fprintf(stderr, "dedupd: error: closing Bloom URL store: %s\n",
                 std::string(s.message()).c_str());
  }
}

uint64_t BloomUrlStore::KeyHash(absl::string_view name_space, absl::string_view key) {
  if (name_space.empty()) return BloomFilter::KeyHash(key);
  return BloomFilter::KeyHash(absl::StrCat(name_space, absl::string_view("\0", 1), key));
}

absl::Status BloomUrlStore::Claim(const UrlClaimOptions& options,
                                  absl::Span<const std::string> keys, absl::Time now,
                                  std::vector<UrlClaim>* results) {
  UrlClaim probably_seen;
  probably_seen.first_seen = absl::InfinitePast();
  probably_seen.last_claim = absl::InfinitePast();
  results->assign(keys.size(), probably_seen);
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(options.name_space));
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));
  if (options.lease > absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "a lease needs the exact URL mode: the Bloom URL store keeps no records to expire");
  }
  std::vector<uint64_t> hashes(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    hashes[i] = KeyHash(options.name_space, keys[i]);
  }
  Impl& m = *impl_;
  std::vector<size_t> new_positions;
  std::vector<uint64_t> new_hashes;
  {
    absl::MutexLock lock(&m.mu);
    if (m.closed) {
      return absl::FailedPreconditionError(
          absl::StrCat(m.options.path, ": Bloom URL store is closed"));
    }
    absl::flat_hash_set<uint64_t> batch;
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (m.filter.MayContain(hashes[i])) continue;
      if (!batch.insert(hashes[i]).second) continue;  // repeated in the batch
      new_positions.push_back(i);
      new_hashes.push_back(hashes[i]);
    }
    if (!new_hashes.empty()) {
      std::string records;
      bloom_claim_log::AppendRecords(new_hashes, &records);
      const std::string log_path = m.Path(LogName(m.log_generation));
      if (m.log_dirty) {
        if (::ftruncate(m.log_fd, static_cast<off_t>(m.log_size)) != 0) {
          return ErrnoStatus(errno, log_path, "truncate a failed claim log append");
        }
        m.log_dirty = false;
      }
      int err = WriteAll(m.log_fd, records);
      if (err == 0 && m.options.sync_writes && ::fdatasync(m.log_fd) != 0) {
        err = errno;
      }
      if (err != 0) {
        // Part of the batch may be in the file: cut it off, so that the
        // next append does not follow a torn record and no unacknowledged
        // key comes back at restart.
        if (::ftruncate(m.log_fd, static_cast<off_t>(m.log_size)) != 0) {
          m.log_dirty = true;
        }
        return ErrnoStatus(err, log_path, "append claim log");
      }
      m.log_size += records.size();
      m.pending_log_bytes += records.size();
      // Only now, with the record written: the filter never holds a bit
      // that a restart would not rebuild.
      for (uint64_t h : new_hashes) m.filter.Insert(h);
      m.inserted += new_hashes.size();
      m.logged_since_snapshot += new_hashes.size();
      if (!m.warned_capacity && m.inserted > m.options.expected_urls) {
        m.warned_capacity = true;
        std::fprintf(stderr,
                     "dedupd: warning: %s: the Bloom URL store passed its capacity of "
                     "%llu URLs: false positives now exceed %g and keep rising\n",
                     m.options.path.c_str(),
                     static_cast<unsigned long long>(m.options.expected_urls),
                     m.options.false_positive_rate);
      }
    }
  }
  UrlClaim claimed;
  claimed.is_new = true;
  claimed.first_seen = TruncateToMicros(now);
  claimed.last_claim = claimed.first_seen;
  for (size_t i : new_positions) (*results)[i] = claimed;
  return absl::OkStatus();
}

absl::Status BloomUrlStore::LookupRecords(absl::string_view name_space,
                                          absl::Span<const std::string> keys,
                                          std::vector<std::optional<UrlRecord>>* records) {
  records->assign(keys.size(), std::nullopt);
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(name_space));
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));
  if (impl_->closed_for_lookups.load()) {
    return absl::FailedPreconditionError(
        absl::StrCat(impl_->options.path, ": Bloom URL store is closed"));
  }
  UrlRecord probable;
  probable.first_seen = absl::InfinitePast();
  probable.last_claim = absl::InfinitePast();
  for (size_t i = 0; i < keys.size(); ++i) {
    if (impl_->filter.MayContain(KeyHash(name_space, keys[i]))) (*records)[i] = probable;
  }
  return absl::OkStatus();
}

absl::Status BloomUrlStore::Complete(absl::string_view, uint64_t, absl::Span<const std::string>,
                                     std::vector<UrlCompletion>*) {
  return absl::UnimplementedError(
      "the approximate URL mode keeps no leases: CompleteUrls needs --url_seen_mode=exact");
}

bool BloomUrlStore::WaitForSnapshots(uint64_t n, absl::Duration timeout) const {
  Impl& m = *impl_;
  absl::MutexLock lock(&m.mu);
  auto done = [&m, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(m.mu) { return m.snapshots_written >= n; };
  return m.mu.AwaitWithTimeout(absl::Condition(&done), timeout);
}

BloomUrlStore::Stats BloomUrlStore::stats() const {
  const Impl& m = *impl_;
  Stats s;
  s.capacity_urls = m.options.expected_urls;
  s.design_false_positive_rate = m.design_false_positive_rate;
  s.memory_bytes = m.filter.memory_bytes();
  s.last_open_time = m.open_time;
  {
    absl::MutexLock lock(&m.mu);
    s.inserted_urls = m.inserted;
    s.log_bytes = m.pending_log_bytes;
    s.snapshots_written = m.snapshots_written;
  }
  s.over_capacity = s.inserted_urls > s.capacity_urls;
  s.estimated_false_positive_rate = BloomFilter::BlockedFalsePositiveRate(
      s.inserted_urls, m.filter.num_blocks(), m.filter.num_probes());
  return s;
}

absl::Status BloomUrlStore::BackupTo(const std::string& directory) {
  if (directory.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(impl_->options.path, ": back up Bloom URL store: empty directory"));
  }
  if (::mkdir(directory.c_str(), 0755) != 0) {
    if (errno == EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat(
          impl_->options.path, ": back up Bloom URL store: ", directory, " already exists"));
    }
    return ErrnoStatus(errno, directory, "create backup directory");
  }
  uint64_t inserted = 0;
  uint64_t generation = 0;
  absl::StatusOr<BloomFilter> copy;
  {
    // Bits are set only under `mu`: the copy holds exactly the keys of the
    // claims answered before this point, and `inserted` counts them.
    absl::MutexLock lock(&impl_->mu);
    if (impl_->closed) {
      return absl::FailedPreconditionError(
          absl::StrCat(impl_->options.path, ": Bloom URL store is closed"));
    }
    inserted = impl_->inserted;
    generation = impl_->log_generation;
    copy = CopyFilter(impl_->filter, inserted, generation, impl_->options.path);
  }
  if (!copy.ok()) return copy.status();
  // As snapshot `generation`: it covers every log before the current one
  // and the current one's records so far; Open of the backup finds no log
  // to replay and starts log `generation` afresh.
  return WriteSnapshotFile(directory, *copy, inserted, generation);
}

absl::Status BloomUrlStore::Snapshot() { return impl_->WriteSnapshot(/*closing=*/false); }

absl::Status BloomUrlStore::Close() {
  Impl& m = *impl_;
  {
    absl::MutexLock lock(&m.mu);
    if (m.stop) {
      return absl::FailedPreconditionError(
          absl::StrCat(m.options.path, ": Bloom URL store is closed"));
    }
    m.stop = true;  // wakes the snapshot thread (its wait condition)
  }
  if (m.snapshot_thread.joinable()) m.snapshot_thread.join();
  absl::Status s = m.WriteSnapshot(/*closing=*/true);
  {
    absl::MutexLock lock(&m.mu);
    m.closed = true;  // also when the final snapshot failed
    m.closed_for_lookups.store(true);
  }
  m.ReleaseFiles();
  return s;
}

}  // namespace dedupd
