// RocksDbStore: the write guard. Background errors that stop writes (a
// full disk), recovery through DB::Resume, and the errors writes fail with
// meanwhile.

#include <sys/statvfs.h>

#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "rocksdb/listener.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

namespace rocksdb_internal {
namespace {

// WriteStopListener records RocksDB's background errors in a WriteStop.
// RocksDB calls it with its own mutex held: it must not call the database.
class WriteStopListener final : public rocksdb::EventListener {
 public:
  explicit WriteStopListener(std::shared_ptr<WriteStop> stop) : stop_(std::move(stop)) {}

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override {
    if (error == nullptr || error->ok() ||
        error->severity() < rocksdb::Status::Severity::kHardError) {
      return;  // a soft error (e.g. a compaction short of space) stops nothing
    }
    absl::MutexLock lock(&stop_->mu);
    stop_->stopped = true;
    stop_->error = *error;
    ++stop_->generation;
    // The first recovery attempt comes write_resume_interval after the
    // error, not at once.
    stop_->last_resume = absl::Now();
    if (reason == rocksdb::BackgroundErrorReason::kWriteCallback) stop_->log_failed = true;
  }

  // RocksDB's own recovery from NoSpace waits until the volume's free space
  // reaches its reserved buffer (the whole memtable budget, 3 x
  // write_buffer_bytes: 192 MiB by default), which a small or shared volume
  // may never have, and makes DB::Resume answer Busy meanwhile. The store
  // resumes by itself instead (BeforeWrite), as soon as a flush fits.
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/, rocksdb::Status error,
                            bool* auto_recovery) override {
    if (error.IsNoSpace()) *auto_recovery = false;
  }

  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override {
    if (!info.new_bg_error.ok()) return;
    absl::MutexLock lock(&stop_->mu);
    if (stop_->needs_reopen) return;  // RocksDB's view; the log writer is still bad
    stop_->stopped = false;
    stop_->error = rocksdb::Status::OK();
  }

 private:
  const std::shared_ptr<WriteStop> stop_;
};

}  // namespace

std::shared_ptr<rocksdb::EventListener> NewWriteStopListener(std::shared_ptr<WriteStop> stop) {
  return std::make_shared<WriteStopListener>(std::move(stop));
}

}  // namespace rocksdb_internal

uint64_t RocksDbStore::Impl::MemtableBytes(rocksdb::DB* db) const {
  std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
  if (content_cf != nullptr) families.push_back(content_cf);
  uint64_t total = 0;
  for (rocksdb::ColumnFamilyHandle* cf : families) {
    uint64_t bytes = 0;
    if (db->GetIntProperty(cf, "rocksdb.cur-size-all-mem-tables", &bytes)) total += bytes;
  }
  return total;
}

bool RocksDbStore::Impl::FreeBytes(uint64_t* free_bytes) const {
  struct statvfs st {};
  if (::statvfs(options.path.c_str(), &st) != 0) return false;
  *free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  return true;
}

bool RocksDbStore::Impl::AllMemtablesEmpty(rocksdb::DB* db) const {
  std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
  if (content_cf != nullptr) families.push_back(content_cf);
  for (rocksdb::ColumnFamilyHandle* cf : families) {
    uint64_t entries = 0;
    if (!db->GetIntProperty(cf, "rocksdb.num-entries-active-mem-table", &entries) || entries != 0) {
      return false;  // unknown counts as "not empty": Resume as usual
    }
  }
  return true;
}

absl::Status RocksDbStore::Impl::StopCause(const rocksdb::Status& error,
                                           absl::string_view action) const {
  return FromRocksDbStatus(error.ok() ? rocksdb::Status::IOError("writes are stopped") : error,
                           action, options.path);
}

absl::Status RocksDbStore::Impl::StoppedError(const rocksdb::Status& error,
                                              absl::string_view action, bool needs_reopen) const {
  const absl::Status base = StopCause(error, action);
  if (needs_reopen) {
    return absl::Status(
        base.code(),
        absl::StrCat(base.message(),
                     " (the store stopped taking writes after this error; reads still "
                     "work; this failure needs a restart to clear (the failed "
                     "write-ahead log cannot be replaced in place): fix the cause",
                     error.IsNoSpace() ? " (free disk space)" : "", ", then restart dedupd)"));
  }
  return absl::Status(
      base.code(),
      absl::StrCat(base.message(),
                   " (the store stopped taking writes after this "
                   "error; reads still work; writes resume by themselves once the "
                   "cause is fixed",
                   error.IsNoSpace() ? ": free disk space" : "", "; recovery is tried every ",
                   absl::FormatDuration(options.write_resume_interval), ")"));
}

absl::Status RocksDbStore::Impl::WriteFailed(const rocksdb::Status& s, absl::string_view action) {
  {
    absl::MutexLock lock(&write_stop->mu);
    if (write_stop->stopped) return StoppedError(s, action, write_stop->needs_reopen);
  }
  return FromRocksDbStatus(s, action, options.path);
}

absl::Status RocksDbStore::Impl::BeforeWrite(rocksdb::DB* db, absl::string_view action) {
  WriteStop& st = *write_stop;
  uint64_t generation = 0;
  bool log_failed = false;
  {
    absl::MutexLock lock(&st.mu);
    if (!st.stopped) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (st.needs_reopen || st.resuming || now - st.last_resume < options.write_resume_interval) {
      return StoppedError(st.error, action, st.needs_reopen);
    }
    st.resuming = true;
    st.last_resume = now;
    generation = st.generation;
    log_failed = st.log_failed;
  }
  // RocksDB 7.8's Resume replaces the write-ahead-log writer only by
  // switching memtables, which it does only for a memtable that holds
  // something. After a failed log write with every memtable empty (the
  // first write after Open or after a flush failed), Resume "succeeds",
  // keeps the failed writer, and the next write trips an assertion of this
  // RocksDB build (the process aborts; a build without assertions fails
  // every later write instead; facebook/rocksdb#11643). Then writes stay
  // stopped until the store is reopened (a restart), reads go on.
  if (log_failed && AllMemtablesEmpty(db)) {
    absl::MutexLock lock(&st.mu);
    st.resuming = false;
    st.needs_reopen = true;
    return StoppedError(st.error, action, /*needs_reopen=*/true);
  }
  // Resume flushes the memtables. On a disk without room for that, the
  // flush fails and rolls its memtable back, and a later Resume can then
  // wait forever for that memtable's flush (RocksDB 7.8; seen in
  // rocksdb_full_disk_test). So after a NoSpace error, Resume only once
  // the volume has room for every memtable plus a margin.
  {
    bool no_space = false;
    {
      absl::MutexLock lock(&st.mu);
      no_space = st.error.IsNoSpace();
    }
    uint64_t free_bytes = 0;
    const bool known = FreeBytes(&free_bytes);
    const uint64_t need = MemtableBytes(db) + kResumeMarginBytes;
    if (no_space && known && free_bytes < need) {
      absl::MutexLock lock(&st.mu);
      st.resuming = false;
      const absl::Status stopped = StoppedError(st.error, action, st.needs_reopen);
      return absl::Status(stopped.code(), absl::StrCat(stopped.message(), "; waiting for ", need,
                                                       " bytes free, ", free_bytes, " now"));
    }
  }
  // Without st.mu: RocksDB calls the listener (which takes it) from Resume.
  const rocksdb::Status resumed = db->Resume();
  absl::MutexLock lock(&st.mu);
  st.resuming = false;
  if (resumed.ok() && st.generation == generation) {
    st.stopped = false;
    st.log_failed = false;
    st.error = rocksdb::Status::OK();
  }
  if (!st.stopped) return absl::OkStatus();
  // A failed flush during Resume records its own error through the
  // listener; Busy (RocksDB's own recovery runs) leaves the first one.
  if (!resumed.ok() && !resumed.IsBusy() && st.generation == generation) {
    st.error = resumed;
  }
  return StoppedError(st.error, action, st.needs_reopen);
}

bool RocksDbStore::Impl::TryResume(rocksdb::DB* db) {
  {
    absl::MutexLock lock(&write_stop->mu);
    if (!write_stop->stopped) return true;
    write_stop->last_resume = absl::InfinitePast();
  }
  return BeforeWrite(db, "resume writes").ok();
}

absl::Status RocksDbStore::write_status() const {
  absl::MutexLock lock(&impl_->write_stop->mu);
  if (!impl_->write_stop->stopped) return absl::OkStatus();
  return impl_->StoppedError(impl_->write_stop->error, "write to store",
                             impl_->write_stop->needs_reopen);
}

}  // namespace dedupd
