#include "storage/url_filter_front.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/file_io.h"

namespace dedupd {
namespace {

// The design size of a filter: the keys it holds at `rate`.
uint64_t DesignKeys(const BloomFilter& filter, double rate) {
  return static_cast<uint64_t>(static_cast<double>(filter.num_bits()) /
                               BloomFilter::BitsPerKeyFor(rate));
}

// The false positive rate of segment `index` (0 = oldest) of a chain whose
// first segment has `rate`: rate / 2^index.
double SegmentRate(double rate, size_t index) {
  return std::ldexp(rate, -static_cast<int>(std::min<size_t>(index, 1000)));
}

// A filter file's segments and their key counts, oldest first.
struct LoadedChain {
  std::vector<BloomFilter> filters;
  std::vector<uint64_t> keys;
};

// LoadFilterFile returns the segments saved in `file` when they are usable
// for a store at `store_tag`, else an error whose message says why not
// (missing, unreadable, damaged, other version, stale). `hint` is set to
// the key count of the segments whose headers parse.
absl::StatusOr<LoadedChain> LoadFilterFile(const std::string& file, uint64_t store_tag,
                                           uint64_t* hint) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return absl::NotFoundError("no filter file");
  absl::StatusOr<std::string> bytes = file_io::ReadFile(file);
  if (!bytes.ok()) return bytes.status();
  absl::string_view rest = *bytes;
  if (rest.empty()) return absl::DataLossError("empty filter file");
  LoadedChain chain;
  for (size_t index = 0; !rest.empty(); ++index) {
    absl::StatusOr<BloomFilter::Header> header = BloomFilter::ParseHeader(rest);
    if (!header.ok()) {
      return absl::Status(header.status().code(),
                          absl::StrCat("segment ", index, ": ", header.status().message()));
    }
    *hint += header->inserted_keys;
    if (header->user_tag != store_tag) {
      return absl::FailedPreconditionError(absl::StrCat(
          "stale filter file (written at store state ", header->user_tag,
          ", the store is at ", store_tag, ": the process did not stop cleanly)"));
    }
    rest.remove_prefix(BloomFilter::kHeaderBytes);
    // ParseHeader bounds num_blocks (kMaxBlocks), so this cannot overflow.
    const uint64_t word_bytes = header->num_blocks * (BloomFilter::kBlockBits / 8);
    if (word_bytes > rest.size()) {
      return absl::DataLossError(absl::StrCat("segment ", index, ": ", rest.size(),
                                              " bytes of bit array left, its header says ",
                                              word_bytes));
    }
    absl::StatusOr<BloomFilter> filter =
        BloomFilter::FromHeaderAndWords(*header, rest.substr(0, word_bytes));
    if (!filter.ok()) {
      return absl::Status(filter.status().code(),
                          absl::StrCat("segment ", index, ": ", filter.status().message()));
    }
    rest.remove_prefix(word_bytes);
    chain.filters.push_back(*std::move(filter));
    chain.keys.push_back(header->inserted_keys);
  }
  return chain;
}

}  // namespace

UrlFilterFront::UrlFilterFront(const UrlFilterOptions& options, ScanFn scan,
                               std::string file)
    : options_(options), scan_(std::move(scan)), file_(std::move(file)) {}

UrlFilterFront::~UrlFilterFront() { StopRebuilds(); }

UrlFilterFront::Segment UrlFilterFront::NewSegment(uint64_t design_keys, double rate,
                                                   bool first) const {
  const double bits_per_key = BloomFilter::BitsPerKeyFor(rate);
  const uint64_t blocks =
      first && options_.memory_budget_bytes > 0
          ? std::clamp<uint64_t>(options_.memory_budget_bytes / (BloomFilter::kBlockBits / 8),
                                 1, BloomFilter::kMaxBlocks)
          : BloomFilter::BlocksFor(std::max<uint64_t>(design_keys, 1), bits_per_key);
  Segment seg;
  seg.filter = std::make_shared<BloomFilter>(blocks, BloomFilter::OptimalProbes(bits_per_key));
  seg.design_keys = DesignKeys(*seg.filter, rate);
  seg.rate = rate;
  return seg;
}

void UrlFilterFront::Start(uint64_t store_tag) {
  absl::MutexLock lock(&mu_);
  if (!options_.enabled) {
    load_result_ = "disabled";
    return;
  }
  uint64_t hint = 0;
  absl::StatusOr<LoadedChain> loaded = LoadFilterFile(file_, store_tag, &hint);
  if (loaded.ok()) {
    auto chain = std::make_shared<Chain>();
    for (size_t i = 0; i < loaded->filters.size(); ++i) {
      Segment seg;
      seg.filter = std::make_shared<BloomFilter>(std::move(loaded->filters[i]));
      seg.rate = SegmentRate(options_.false_positive_rate, i);
      seg.design_keys = DesignKeys(*seg.filter, seg.rate);
      chain->segments.push_back(std::move(seg));
    }
    chain->sealed_keys.assign(loaded->keys.begin(), loaded->keys.end() - 1);
    newest_keys_ = loaded->keys.back();
    active_ = std::move(chain);
    load_result_ = "loaded";
    return;
  }
  const absl::string_view why = loaded.status().message();
  load_result_ = absl::StrCat("rebuilding: ", why);
  // One segment with room for twice the URLs the file held.
  StartRebuildLocked(std::max(options_.expected_urls, 2 * hint));
}

void UrlFilterFront::StartRebuildLocked(uint64_t design_keys) {
  if (rebuild_thread_.joinable()) {
    // The last rebuild has finished (rebuilding_ is false): its thread no
    // longer needs mu_.
    rebuild_thread_.join();
  }
  building_ = NewSegment(design_keys, options_.false_positive_rate, /*first=*/true);
  building_keys_ = 0;
  rebuilding_ = true;
  rebuild_thread_ = std::thread([this] { RunRebuild(); });
}

void UrlFilterFront::RunRebuild() {
  const absl::Time start = absl::Now();
  std::shared_ptr<BloomFilter> target;
  {
    absl::MutexLock lock(&mu_);
    target = building_.filter;
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
    auto chain = std::make_shared<Chain>();
    chain->segments.push_back(std::move(building_));
    active_ = std::move(chain);
    newest_keys_ = scanned + building_keys_;
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
  building_ = Segment{};
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
  view.chain_ = active_;
  return view;
}

void UrlFilterFront::Inserted(absl::Span<const uint64_t> key_hashes) {
  if (key_hashes.empty()) return;
  std::shared_ptr<const Chain> full;
  {
    // Shared: inserts are atomic. Grow publishes a new chain only under
    // the exclusive lock, so no insert lands in a segment after it was
    // sealed and its count taken.
    absl::ReaderMutexLock lock(&mu_);
    if (active_ != nullptr) {
      const Segment& newest = active_->segments.back();
      for (uint64_t h : key_hashes) newest.filter->Insert(h);
      const uint64_t keys =
          newest_keys_.fetch_add(key_hashes.size(), std::memory_order_relaxed) +
          key_hashes.size();
      if (keys > newest.design_keys) full = active_;
    }
    if (building_.filter != nullptr) {
      for (uint64_t h : key_hashes) building_.filter->Insert(h);
      building_keys_.fetch_add(key_hashes.size(), std::memory_order_relaxed);
    }
  }
  if (full != nullptr) Grow(full);
}

void UrlFilterFront::Grow(const std::shared_ptr<const Chain>& full) {
  const Segment& last = full->segments.back();
  // Allocated (and zeroed) before taking the lock: claims wait for nothing
  // but the pointer swap.
  Segment next = NewSegment(2 * last.design_keys, last.rate / 2, /*first=*/false);
  absl::MutexLock lock(&mu_);
  if (active_ != full) return;  // another call grew it first
  auto chain = std::make_shared<Chain>(*full);
  chain->sealed_keys.push_back(newest_keys_.load(std::memory_order_relaxed));
  chain->segments.push_back(std::move(next));
  newest_keys_ = 0;
  active_ = std::move(chain);
}

void UrlFilterFront::StopRebuilds() {
  {
    absl::MutexLock lock(&mu_);
    cancel_ = true;
  }
  JoinRebuild();
}

absl::Status UrlFilterFront::Persist(uint64_t store_tag) {
  StopRebuilds();
  std::shared_ptr<const Chain> chain;
  uint64_t newest_keys = 0;
  {
    absl::MutexLock lock(&mu_);
    chain = active_;
    newest_keys = newest_keys_;
  }
  if (chain == nullptr) return absl::OkStatus();

  const std::string tmp = file_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return file_io::ErrnoStatus(errno, tmp, "create URL filter file");
  int err = 0;
  // The segments back to back, oldest first, each in BloomFilter's
  // serialized form with its own key count and the store's tag.
  for (size_t i = 0; i < chain->segments.size() && err == 0; ++i) {
    const BloomFilter& f = *chain->segments[i].filter;
    const uint64_t keys = i < chain->sealed_keys.size() ? chain->sealed_keys[i] : newest_keys;
    err = file_io::WriteAll(fd, f.EncodeHeader(keys, store_tag));
    if (err == 0) err = file_io::WriteAll(fd, f.WordBytes());
  }
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
  if (active_ != nullptr) {
    double pass_none = 1;  // the chance a new key passes no segment
    for (size_t i = 0; i < active_->segments.size(); ++i) {
      const Segment& seg = active_->segments[i];
      const uint64_t keys = i < active_->sealed_keys.size()
                                ? active_->sealed_keys[i]
                                : newest_keys_.load(std::memory_order_relaxed);
      st.keys += keys;
      st.design_keys += seg.design_keys;
      st.memory_bytes += seg.filter->memory_bytes();
      pass_none *= 1 - BloomFilter::BlockedFalsePositiveRate(
                           keys, seg.filter->num_blocks(), seg.filter->num_probes());
    }
    st.segments = active_->segments.size();
    st.estimated_false_positive_rate = 1 - pass_none;
  }
  if (building_.filter != nullptr) st.memory_bytes += building_.filter->memory_bytes();
  st.keys_skipped = keys_skipped_.load(std::memory_order_relaxed);
  st.keys_read = keys_read_.load(std::memory_order_relaxed);
  st.last_rebuild_time = last_rebuild_time_;
  return st;
}

}  // namespace dedupd
