#include "storage/url_filter_front.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/file_io.h"

namespace dedupd {
namespace {

// The design size of a filter: the keys it holds at `rate`.
uint64_t DesignKeys(const BloomFilter& filter, double rate) {
  return static_cast<uint64_t>(static_cast<double>(filter.num_bits()) /
                               BloomFilter::BitsPerKeyFor(rate));
}

// LoadFilterFile returns the filter saved in `file` when it is usable for a
// store at `store_tag`, else an error whose message says why not (missing,
// unreadable, damaged, other version, stale). `hint` is set to the file's
// key count whenever its header parses.
absl::StatusOr<BloomFilter::Loaded> LoadFilterFile(const std::string& file,
                                                   uint64_t store_tag, uint64_t* hint) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return absl::NotFoundError("no filter file");
  absl::StatusOr<std::string> bytes = file_io::ReadFile(file);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<BloomFilter::Header> header = BloomFilter::ParseHeader(*bytes);
  if (!header.ok()) return header.status();
  *hint = header->inserted_keys;
  if (header->user_tag != store_tag) {
    return absl::FailedPreconditionError(absl::StrCat(
        "stale filter file (written at store state ", header->user_tag,
        ", the store is at ", store_tag, ": the process did not stop cleanly)"));
  }
  absl::StatusOr<BloomFilter> filter = BloomFilter::FromHeaderAndWords(
      *header, absl::string_view(*bytes).substr(BloomFilter::kHeaderBytes));
  if (!filter.ok()) return filter.status();
  return BloomFilter::Loaded{*std::move(filter), *header};
}

}  // namespace

UrlFilterFront::UrlFilterFront(const UrlFilterOptions& options, ScanFn scan,
                               std::string file)
    : options_(options), scan_(std::move(scan)), file_(std::move(file)) {}

UrlFilterFront::~UrlFilterFront() { StopRebuilds(); }

std::shared_ptr<BloomFilter> UrlFilterFront::NewFilter(uint64_t design_keys,
                                                       bool first) const {
  const double bits_per_key = BloomFilter::BitsPerKeyFor(options_.false_positive_rate);
  const uint64_t blocks =
      first && options_.memory_budget_bytes > 0
          ? std::clamp<uint64_t>(options_.memory_budget_bytes / (BloomFilter::kBlockBits / 8),
                                 1, BloomFilter::kMaxBlocks)
          : BloomFilter::BlocksFor(std::max<uint64_t>(design_keys, 1), bits_per_key);
  return std::make_shared<BloomFilter>(blocks, BloomFilter::OptimalProbes(bits_per_key));
}

void UrlFilterFront::Start(uint64_t store_tag) {
  absl::MutexLock lock(&mu_);
  if (!options_.enabled) {
    load_result_ = "disabled";
    return;
  }
  uint64_t hint = 0;
  absl::StatusOr<BloomFilter::Loaded> loaded = LoadFilterFile(file_, store_tag, &hint);
  if (loaded.ok()) {
    active_ = std::make_shared<BloomFilter>(std::move(loaded->filter));
    active_design_keys_ = DesignKeys(*active_, options_.false_positive_rate);
    active_keys_ = loaded->header.inserted_keys;
    load_result_ = "loaded";
    return;
  }
  const absl::string_view why = loaded.status().message();
  load_result_ = absl::StrCat("rebuilding: ", why);
  // Room for twice the URLs the last filter held, like a growth rebuild.
  StartRebuildLocked(std::max(options_.expected_urls, 2 * hint));
}

void UrlFilterFront::StartRebuildLocked(uint64_t design_keys) {
  if (rebuild_thread_.joinable()) {
    // The last rebuild has finished (rebuilding_ is false): its thread no
    // longer needs mu_.
    rebuild_thread_.join();
  }
  building_ = NewFilter(design_keys, /*first=*/active_ == nullptr);
  building_design_keys_ = DesignKeys(*building_, options_.false_positive_rate);
  building_keys_ = 0;
  rebuilding_ = true;
  rebuild_thread_ = std::thread([this] { RunRebuild(); });
}

void UrlFilterFront::RunRebuild() {
  const absl::Time start = absl::Now();
  std::shared_ptr<BloomFilter> target;
  {
    absl::MutexLock lock(&mu_);
    target = building_;
  }
  // The filter is registered in building_ (so Inserted feeds it) before the
  // scan takes its snapshot: a key written before the snapshot is in the
  // scan, one written after it is inserted.
  uint64_t scanned = 0;
  const absl::Status s = scan_(
      [&](absl::string_view key) {
        target->Insert(KeyHash(key));
        ++scanned;
      },
      cancel_);
  absl::MutexLock lock(&mu_);
  if (s.ok() && !cancel_) {
    active_ = std::move(building_);
    active_design_keys_ = building_design_keys_;
    active_keys_ = scanned + building_keys_;
    ++rebuilds_;
    last_rebuild_time_ = absl::Now() - start;
  } else if (!cancel_) {
    // The store stays exact without a filter (or with the old one); the
    // failure is reported once here.
    std::fprintf(stderr,
                 "dedupd: warning: URL filter rebuild failed, claims read the "
                 "store for every key: %s\n",
                 s.ToString().c_str());
  }
  building_ = nullptr;
  building_keys_ = 0;
  rebuilding_ = false;
}

void UrlFilterFront::JoinRebuild() {
  std::thread t;
  {
    absl::MutexLock lock(&mu_);
    t = std::move(rebuild_thread_);
  }
  if (t.joinable()) t.join();
}

UrlFilterFront::View UrlFilterFront::Acquire() const {
  View view;
  absl::ReaderMutexLock lock(&mu_);
  view.filter_ = active_;
  return view;
}

void UrlFilterFront::Inserted(absl::Span<const uint64_t> key_hashes) {
  if (key_hashes.empty()) return;
  bool grow = false;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (active_ != nullptr) {
      for (uint64_t h : key_hashes) active_->Insert(h);
      const uint64_t keys =
          active_keys_.fetch_add(key_hashes.size(), std::memory_order_relaxed) +
          key_hashes.size();
      grow = !rebuilding_ && !stopped_ && keys > active_design_keys_;
    }
    if (building_ != nullptr) {
      for (uint64_t h : key_hashes) building_->Insert(h);
      building_keys_.fetch_add(key_hashes.size(), std::memory_order_relaxed);
    }
  }
  if (grow) {
    absl::MutexLock lock(&mu_);
    if (!rebuilding_ && !stopped_ && active_ != nullptr &&
        active_keys_ > active_design_keys_) {
      // The old filter keeps answering (exactly: it gets every insert) while
      // one for twice the count is built.
      StartRebuildLocked(2 * active_keys_);
    }
  }
}

void UrlFilterFront::StopRebuilds() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    cancel_ = true;
  }
  JoinRebuild();
}

absl::Status UrlFilterFront::Persist(uint64_t store_tag) {
  StopRebuilds();
  std::shared_ptr<BloomFilter> filter;
  uint64_t keys = 0;
  {
    absl::MutexLock lock(&mu_);
    filter = active_;
    keys = active_keys_;
  }
  // A filter whose growth rebuild was cancelled may be over its design
  // size; it is still correct, so it is kept: the next Start grows it.
  if (filter == nullptr) return absl::OkStatus();

  const std::string tmp = file_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return file_io::ErrnoStatus(errno, tmp, "create URL filter file");
  int err = file_io::WriteAll(fd, filter->EncodeHeader(keys, store_tag));
  if (err == 0) err = file_io::WriteAll(fd, filter->WordBytes());
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  ::close(fd);
  absl::Status s;
  if (err != 0) {
    s = file_io::ErrnoStatus(err, tmp, "write URL filter file");
  } else if (std::rename(tmp.c_str(), file_.c_str()) != 0) {
    s = file_io::ErrnoStatus(errno, file_, "rename URL filter file");
  }
  if (!s.ok()) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return s;
  }
  // The rename is durable once the directory is synced.
  const std::string dir = std::filesystem::path(file_).parent_path().string();
  return file_io::SyncDir(dir.empty() ? "." : dir);
}

bool UrlFilterFront::WaitForRebuild(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !rebuilding_; };
  mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
  return active_ != nullptr;
}

UrlFilterFront::Stats UrlFilterFront::stats() const {
  Stats st;
  absl::ReaderMutexLock lock(&mu_);
  st.enabled = options_.enabled;
  st.ready = active_ != nullptr;
  st.rebuilding = rebuilding_;
  st.rebuilds = rebuilds_;
  st.load_result = load_result_;
  st.keys = active_keys_.load(std::memory_order_relaxed);
  st.design_keys = active_design_keys_;
  if (active_ != nullptr) {
    st.memory_bytes += active_->memory_bytes();
    st.estimated_false_positive_rate = BloomFilter::BlockedFalsePositiveRate(
        st.keys, active_->num_blocks(), active_->num_probes());
  }
  if (building_ != nullptr) st.memory_bytes += building_->memory_bytes();
  st.keys_skipped = keys_skipped_.load(std::memory_order_relaxed);
  st.keys_read = keys_read_.load(std::memory_order_relaxed);
  st.last_rebuild_time = last_rebuild_time_;
  return st;
}

}  // namespace dedupd
