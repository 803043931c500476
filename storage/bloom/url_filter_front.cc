#include "storage/bloom/url_filter_front.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/file_io.h"
#include "core/text/stable_hash.h"

namespace dedupd {
namespace {

// The file header (docs/storage_format.md, "URL filter file"): magic,
// version (u32), segment count (u32), file length in bytes (u64), the first
// segment's false positive rate (IEEE 754 double bits, u64), and
// StableHash64 of those 32 bytes (u64); little-endian, like the filters.
constexpr absl::string_view kFileMagic("DDURLSEG", 8);
constexpr uint32_t kFileVersion = 1;
constexpr uint64_t kFileHeaderSeed = 0x5552'4c53'4547'0001;  // "URLSEG" 1
// A serialized BloomFilter starts with this: a file that does is the
// one-filter file of the builds before segments.
constexpr absl::string_view kBloomMagic("DDBLOOM\0", 8);

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

}  // namespace

std::string UrlFilterFront::EncodeFileHeader(uint32_t segments, uint64_t file_bytes,
                                             double first_rate) {
  std::string h(kFileHeaderBytes, '\0');
  std::memcpy(&h[0], kFileMagic.data(), kFileMagic.size());
  EncodeFixed32LE(&h[8], kFileVersion);
  EncodeFixed32LE(&h[12], segments);
  EncodeFixed64LE(&h[16], file_bytes);
  uint64_t rate_bits = 0;
  std::memcpy(&rate_bits, &first_rate, sizeof(rate_bits));
  EncodeFixed64LE(&h[24], rate_bits);
  EncodeFixed64LE(&h[32], StableHash64(absl::string_view(h).substr(0, 32), kFileHeaderSeed));
  return h;
}

absl::StatusOr<UrlFilterFront::FileContents> UrlFilterFront::ParseFile(absl::string_view bytes,
                                                                       uint64_t store_tag,
                                                                       uint64_t* hint) {
  *hint = 0;
  if (bytes.empty()) return absl::DataLossError("empty filter file");
  // How many segments follow, where they start, and the first one's rate
  // (0: not in the file, a bare filter of an earlier build).
  uint64_t want_segments = 1;
  double first_rate = 0;
  absl::string_view rest = bytes;
  if (absl::StartsWith(bytes, kFileMagic)) {
    if (bytes.size() < kFileHeaderBytes) {
      return absl::DataLossError(
          absl::StrCat("filter file of ", bytes.size(), " bytes, shorter than its header"));
    }
    if (DecodeFixed64LE(bytes.data() + 32) != StableHash64(bytes.substr(0, 32), kFileHeaderSeed)) {
      return absl::DataLossError("filter file header checksum mismatch");
    }
    const uint64_t version = DecodeFixed32LE(bytes.data() + 8);
    if (version != kFileVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("filter file version ", version, ", this build reads ", kFileVersion));
    }
    want_segments = DecodeFixed32LE(bytes.data() + 12);
    const uint64_t file_bytes = DecodeFixed64LE(bytes.data() + 16);
    if (want_segments == 0) return absl::DataLossError("filter file of 0 segments");
    if (file_bytes != bytes.size()) {
      return absl::DataLossError(
          absl::StrCat("filter file of ", bytes.size(), " bytes, its header says ", file_bytes));
    }
    const uint64_t rate_bits = DecodeFixed64LE(bytes.data() + 24);
    std::memcpy(&first_rate, &rate_bits, sizeof(first_rate));
    if (!(first_rate > 0 && first_rate <= 0.5)) {
      return absl::DataLossError(
          absl::StrCat("filter file's first segment rate ", first_rate, " is outside (0, 0.5]"));
    }
    rest.remove_prefix(kFileHeaderBytes);
  } else if (!absl::StartsWith(bytes, kBloomMagic)) {
    return absl::DataLossError("not a URL filter file (unknown magic)");
  }
  // Every segment's header and the lengths first (they give the hint even
  // when a segment turns out stale or damaged), then tags and checksums.
  std::vector<BloomFilter::Header> headers;
  std::vector<absl::string_view> words;
  for (uint64_t index = 0; index < want_segments; ++index) {
    absl::StatusOr<BloomFilter::Header> header = BloomFilter::ParseHeader(rest);
    if (!header.ok()) {
      return absl::Status(header.status().code(),
                          absl::StrCat("segment ", index, ": ", header.status().message()));
    }
    *hint += header->inserted_keys;
    rest.remove_prefix(BloomFilter::kHeaderBytes);
    // ParseHeader bounds num_blocks (kMaxBlocks), so this cannot overflow.
    const uint64_t word_bytes = header->num_blocks * (BloomFilter::kBlockBits / 8);
    if (word_bytes > rest.size()) {
      return absl::DataLossError(absl::StrCat("segment ", index, ": ", rest.size(),
                                              " bytes of bit array left, its header says ",
                                              word_bytes));
    }
    headers.push_back(*header);
    words.push_back(rest.substr(0, word_bytes));
    rest.remove_prefix(word_bytes);
  }
  if (!rest.empty()) {
    return absl::DataLossError(
        absl::StrCat(rest.size(), " bytes after the last of ", want_segments, " segments"));
  }
  for (const BloomFilter::Header& h : headers) {
    if (h.user_tag != store_tag) {
      return absl::FailedPreconditionError(
          absl::StrCat("stale filter file (written at store state ", h.user_tag,
                       ", the store is at ", store_tag, ": the process did not stop cleanly)"));
    }
  }
  FileContents chain;
  chain.first_rate = first_rate;
  for (size_t i = 0; i < headers.size(); ++i) {
    absl::StatusOr<BloomFilter> filter = BloomFilter::FromHeaderAndWords(headers[i], words[i]);
    if (!filter.ok()) {
      return absl::Status(filter.status().code(),
                          absl::StrCat("segment ", i, ": ", filter.status().message()));
    }
    chain.filters.push_back(*std::move(filter));
    chain.keys.push_back(headers[i].inserted_keys);
  }
  return chain;
}

namespace {

// LoadFilterFile is ParseFile of the file at `file`; NotFound when there is
// none.
absl::StatusOr<UrlFilterFront::FileContents> LoadFilterFile(const std::string& file,
                                                            uint64_t store_tag, uint64_t* hint) {
  *hint = 0;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return absl::NotFoundError("no filter file");
  absl::StatusOr<std::string> bytes = file_io::ReadFile(file);
  if (!bytes.ok()) return bytes.status();
  return UrlFilterFront::ParseFile(*bytes, store_tag, hint);
}

}  // namespace

UrlFilterFront::UrlFilterFront(const UrlFilterOptions& options, ScanFn scan, std::string file)
    : options_(options), scan_(std::move(scan)), file_(std::move(file)) {}

UrlFilterFront::~UrlFilterFront() { StopRebuilds(); }

UrlFilterFront::Segment UrlFilterFront::NewSegment(uint64_t design_keys, double rate,
                                                   bool first) const {
  const double bits_per_key = BloomFilter::BitsPerKeyFor(rate);
  const uint64_t blocks =
      first && options_.memory_budget_bytes > 0
          ? std::clamp<uint64_t>(options_.memory_budget_bytes / (BloomFilter::kBlockBits / 8), 1,
                                 BloomFilter::kMaxBlocks)
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
  absl::StatusOr<FileContents> loaded = LoadFilterFile(file_, store_tag, &hint);
  if (loaded.ok()) {
    auto chain = std::make_shared<Chain>();
    // The rates the segments were built with (a bare filter of an earlier
    // build has none: it was built at the setting of its time, taken to be
    // this one).
    const double first_rate =
        loaded->first_rate > 0 ? loaded->first_rate : options_.false_positive_rate;
    for (size_t i = 0; i < loaded->filters.size(); ++i) {
      Segment seg;
      seg.filter = std::make_shared<BloomFilter>(std::move(loaded->filters[i]));
      seg.rate = SegmentRate(first_rate, i);
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
  // Room for twice the URLs the file held, in one segment if that was
  // right; the scan adds segments if the store holds more.
  StartRebuildLocked(std::max(options_.expected_urls, 2 * hint));
}

void UrlFilterFront::StartRebuildLocked(uint64_t design_keys) {
  if (rebuild_thread_.joinable()) {
    // The last rebuild has finished (building_ is null): its thread no
    // longer needs mu_.
    rebuild_thread_.join();
  }
  auto chain = std::make_shared<Chain>();
  chain->segments.push_back(NewSegment(design_keys, options_.false_positive_rate, /*first=*/true));
  building_ = std::move(chain);
  building_newest_keys_ = 0;
  rebuild_thread_ = std::thread([this] { RunRebuild(); });
}

void UrlFilterFront::RunRebuild() {
  const absl::Time start = absl::Now();
  // The chain is registered in building_ (so Inserted feeds it) before the
  // scan takes its snapshot: a key written before the snapshot is in the
  // scan, one written after it is inserted. Scanned keys go in batches,
  // through the same path as inserts, so the chain grows as it fills.
  std::vector<uint64_t> batch;
  constexpr size_t kBatch = 4096;
  batch.reserve(kBatch);
  const absl::Status s = scan_(
      [&](absl::string_view key) {
        batch.push_back(KeyHash(key));
        if (batch.size() == kBatch) {
          AddScanned(batch);
          batch.clear();
        }
      },
      cancel_);
  if (s.ok() && !cancel_) AddScanned(batch);
  absl::MutexLock lock(&mu_);
  if (s.ok() && !cancel_) {
    active_ = std::move(building_);
    newest_keys_ = building_newest_keys_.load();
    ++rebuilds_;
    last_rebuild_time_ = absl::Now() - start;
  } else if (!cancel_) {
    // The store stays exact without a filter; the failure is reported
    // once here.
    std::fprintf(stderr,
                 "dedupd: warning: URL filter rebuild failed, claims read the "
                 "store for every key: %s\n",
                 s.ToString().c_str());
  }
  building_ = nullptr;
  building_newest_keys_ = 0;
}

void UrlFilterFront::AddScanned(absl::Span<const uint64_t> key_hashes) {
  // Split at the newest segment's design size, so that a small first
  // segment is not overfilled by a whole batch (claims' inserts may still
  // overfill it by a batch each).
  while (!key_hashes.empty() && !cancel_) {
    std::shared_ptr<const Chain> full;
    {
      absl::ReaderMutexLock lock(&mu_);
      if (building_ == nullptr) return;
      const uint64_t design = building_->segments.back().design_keys;
      const uint64_t keys = building_newest_keys_.load(std::memory_order_relaxed);
      const size_t room =
          keys < design ? static_cast<size_t>(std::min<uint64_t>(design - keys, key_hashes.size()))
                        : 0;
      if (room == 0) {
        full = building_;
      } else {
        full = InsertLocked(Which::kBuilding, key_hashes.subspan(0, room));
        key_hashes.remove_prefix(room);
      }
    }
    // Another call may be adding the segment (Grow returns at once then):
    // let it run, and the next round sees its room.
    if (full != nullptr && !Grow(Which::kBuilding, full)) std::this_thread::yield();
  }
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
  std::shared_ptr<const Chain> full_active, full_building;
  {
    // Both chains under one shared lock: a rebuild that ends in between
    // (building_ becoming active_) would otherwise leave a key in neither.
    // Shared is enough: inserts are atomic, and Grow publishes a new chain
    // only under the exclusive lock, so no insert lands in a segment after
    // it was sealed and its count taken.
    absl::ReaderMutexLock lock(&mu_);
    full_active = InsertLocked(Which::kActive, key_hashes);
    full_building = InsertLocked(Which::kBuilding, key_hashes);
  }
  if (full_active != nullptr) Grow(Which::kActive, full_active);
  if (full_building != nullptr) Grow(Which::kBuilding, full_building);
}

std::shared_ptr<const UrlFilterFront::Chain> UrlFilterFront::InsertLocked(
    Which which, absl::Span<const uint64_t> key_hashes) {
  const std::shared_ptr<const Chain>& chain = ChainOf(which);
  if (chain == nullptr || key_hashes.empty()) return nullptr;
  std::atomic<uint64_t>& newest_keys = NewestKeysOf(which);
  const Segment& newest = chain->segments.back();
  for (uint64_t h : key_hashes) newest.filter->Insert(h);
  const uint64_t keys =
      newest_keys.fetch_add(key_hashes.size(), std::memory_order_relaxed) + key_hashes.size();
  return keys > newest.design_keys ? chain : nullptr;
}

bool UrlFilterFront::Grow(Which which, const std::shared_ptr<const Chain>& full) {
  bool idle = false;
  if (!growing_.compare_exchange_strong(idle, true)) return false;
  // Released however this returns (an allocation may throw).
  struct Release {
    std::atomic<bool>* flag;
    ~Release() { *flag = false; }
  } release{&growing_};
  {
    // A call that lost the race allocates nothing (at 10^9 URLs a segment
    // is gigabytes).
    absl::ReaderMutexLock lock(&mu_);
    if (ChainOf(which) != full) return true;
  }
  const Segment& last = full->segments.back();
  // Allocated (and zeroed) before taking the lock: claims wait for nothing
  // but the pointer swap.
  Segment next = NewSegment(2 * last.design_keys, last.rate / 2, /*first=*/false);
  absl::MutexLock lock(&mu_);
  std::shared_ptr<const Chain>& chain = ChainOf(which);
  if (chain == full) {  // else the rebuild ended meanwhile
    std::atomic<uint64_t>& newest_keys = NewestKeysOf(which);
    auto grown = std::make_shared<Chain>(*full);
    grown->sealed_keys.push_back(newest_keys.load(std::memory_order_relaxed));
    grown->segments.push_back(std::move(next));
    newest_keys = 0;
    chain = std::move(grown);
  }
  return true;
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

  uint64_t file_bytes = kFileHeaderBytes;
  for (const Segment& seg : chain->segments) {
    file_bytes += BloomFilter::kHeaderBytes + seg.filter->memory_bytes();
  }
  const std::string tmp = file_ + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return file_io::ErrnoStatus(errno, tmp, "create URL filter file");
  int err = file_io::WriteAll(fd, EncodeFileHeader(static_cast<uint32_t>(chain->segments.size()),
                                                   file_bytes, chain->segments.front().rate));
  // Then the segments, oldest first, each in BloomFilter's serialized form
  // with its own key count and the store's tag.
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
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return building_ == nullptr; };
  mu_.AwaitWithTimeout(absl::Condition(&idle), timeout);
  return active_ != nullptr;
}

UrlFilterFront::Stats UrlFilterFront::stats() const {
  Stats st;
  std::shared_ptr<const Chain> active;
  std::shared_ptr<const Chain> building;
  uint64_t newest_keys = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    st.enabled = options_.enabled;
    st.ready = active_ != nullptr;
    st.rebuilding = building_ != nullptr;
    st.rebuilds = rebuilds_;
    st.load_result = load_result_;
    st.last_rebuild_time = last_rebuild_time_;
    active = active_;
    building = building_;
    newest_keys = newest_keys_.load(std::memory_order_relaxed);
  }
  // The rate estimates (Poisson sums) run outside the lock.
  if (active != nullptr) {
    double pass_none = 1;  // the chance a new key passes no segment
    for (size_t i = 0; i < active->segments.size(); ++i) {
      const Segment& seg = active->segments[i];
      const uint64_t keys = i < active->sealed_keys.size() ? active->sealed_keys[i] : newest_keys;
      st.keys += keys;
      st.design_keys += seg.design_keys;
      st.memory_bytes += seg.filter->memory_bytes();
      pass_none *= 1 - BloomFilter::BlockedFalsePositiveRate(keys, seg.filter->num_blocks(),
                                                             seg.filter->num_probes());
    }
    st.segments = active->segments.size();
    st.estimated_false_positive_rate = 1 - pass_none;
  }
  if (building != nullptr) {
    for (const Segment& seg : building->segments) st.memory_bytes += seg.filter->memory_bytes();
  }
  st.keys_skipped = keys_skipped_.load(std::memory_order_relaxed);
  st.keys_read = keys_read_.load(std::memory_order_relaxed);
  return st;
}

}  // namespace dedupd
