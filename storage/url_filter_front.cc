#include "storage/url_filter_front.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dedupd {
namespace {

// The design size of a filter: the keys it holds at `rate`.
uint64_t DesignKeys(const BloomFilter& filter, double rate) {
  return static_cast<uint64_t>(static_cast<double>(filter.num_bits()) /
                               BloomFilter::BitsPerKeyFor(rate));
}

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  const std::string message =
      absl::StrCat(what, " ", path, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::UnavailableError(message);
}

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("write", path, errno);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Reads the whole file at `path` into `out`; false when it does not exist
// or cannot be read (with the reason in `why`).
bool ReadFile(const std::string& path, std::string* out, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = errno == ENOENT ? "no filter file"
                           : absl::StrCat("cannot open ", path, ": ",
                                          std::strerror(errno));
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    *why = absl::StrCat("cannot stat ", path, ": ", std::strerror(errno));
    ::close(fd);
    return false;
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd, out->data() + done, out->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *why = absl::StrCat("cannot read ", path, ": ",
                          n < 0 ? std::strerror(errno) : "short file");
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
}

}  // namespace

UrlFilterFront::UrlFilterFront(const UrlFilterOptions& options, ScanFn scan,
                               std::string file)
    : options_(options), scan_(std::move(scan)), file_(std::move(file)) {}

UrlFilterFront::~UrlFilterFront() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    cancel_ = true;
  }
  JoinRebuild();
}

std::shared_ptr<BloomFilter> UrlFilterFront::NewFilter(uint64_t design_keys,
                                                       bool first) const {
  if (first && options_.memory_budget_bytes > 0) {
    const uint64_t blocks = std::clamp<uint64_t>(
        options_.memory_budget_bytes / (BloomFilter::kBlockBits / 8), 1,
        BloomFilter::kMaxBlocks);
    const double bits_per_key = BloomFilter::BitsPerKeyFor(options_.false_positive_rate);
    return std::make_shared<BloomFilter>(blocks,
                                         BloomFilter::OptimalProbes(bits_per_key));
  }
  const double bits_per_key = BloomFilter::BitsPerKeyFor(options_.false_positive_rate);
  return std::make_shared<BloomFilter>(
      BloomFilter::BlocksFor(std::max<uint64_t>(design_keys, 1), bits_per_key),
      BloomFilter::OptimalProbes(bits_per_key));
}

void UrlFilterFront::Start(uint64_t store_tag) {
  absl::MutexLock lock(&mu_);
  if (!options_.enabled) {
    load_result_ = "disabled";
    return;
  }
  std::string bytes;
  std::string why;
  uint64_t hint = 0;
  if (ReadFile(file_, &bytes, &why)) {
    absl::StatusOr<BloomFilter::Header> header = BloomFilter::ParseHeader(bytes);
    if (!header.ok()) {
      why = std::string(header.status().message());
    } else {
      hint = header->inserted_keys;
      if (header->user_tag != store_tag) {
        why = absl::StrCat("stale filter file (written at store state ",
                           header->user_tag, ", the store is at ", store_tag,
                           ": the process did not stop cleanly)");
      } else {
        absl::StatusOr<BloomFilter> filter = BloomFilter::FromHeaderAndWords(
            *header, absl::string_view(bytes).substr(BloomFilter::kHeaderBytes));
        if (!filter.ok()) {
          why = std::string(filter.status().message());
        } else {
          auto loaded = std::make_shared<BloomFilter>(std::move(*filter));
          active_design_keys_ = DesignKeys(*loaded, options_.false_positive_rate);
          active_ = std::move(loaded);
          active_keys_ = header->inserted_keys;
          load_result_ = "loaded";
          return;
        }
      }
    }
  }
  bytes.clear();
  bytes.shrink_to_fit();
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
  building_design_keys_ = building_->num_bits() == 0
                              ? 0
                              : DesignKeys(*building_, options_.false_positive_rate);
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
  if (fd < 0) return ErrnoError("create URL filter file", tmp, errno);
  absl::Status s = WriteAll(fd, filter->EncodeHeader(keys, store_tag), tmp);
  if (s.ok()) s = WriteAll(fd, filter->WordBytes(), tmp);
  if (s.ok() && ::fsync(fd) != 0) s = ErrnoError("fsync", tmp, errno);
  ::close(fd);
  if (s.ok() && std::rename(tmp.c_str(), file_.c_str()) != 0) {
    s = ErrnoError("rename URL filter file to", file_, errno);
  }
  if (!s.ok()) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    return s;
  }
  // The rename is durable once the directory is synced.
  const std::string dir = std::filesystem::path(file_).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    if (::fsync(dfd) != 0) s = ErrnoError("fsync directory", dir, errno);
    ::close(dfd);
  }
  return s;
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
