#include "storage/rocksdb/hash_vector_memtable.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/slice.h"
#include "rocksdb/version.h"

namespace dedupd {
namespace {

static_assert(ROCKSDB_MAJOR == 7 && ROCKSDB_MINOR == 8,
              "HashVectorMemTableRep reads rocksdb::LookupKey as RocksDB 7.8 lays it "
              "out: compare LookupKeyLayout with db/lookup_key.h of this RocksDB");

// rocksdb::LookupKey of RocksDB 7.8 (db/lookup_key.h, which is not
// installed, so MemTableRep::Get's argument is an incomplete type here):
// three pointers into its buffer, the memtable key (varint32 length +
// internal key), the internal key (user key + 8 bytes of sequence number
// and type), and the end. Its inline accessors compute the same slices.
struct LookupKeyLayout {
  const char* memtable_key;
  const char* internal_key;
  const char* end;
};

rocksdb::Slice InternalKeyOf(const rocksdb::LookupKey& key) {
  LookupKeyLayout layout;
  std::memcpy(&layout, &key, sizeof(layout));
  return rocksdb::Slice(layout.internal_key, static_cast<size_t>(layout.end - layout.internal_key));
}

// A memtable entry: varint32 length of the internal key, the internal key
// (user key + 8 bytes), varint32 length of the value, the value. Returns
// the user key (RocksDB's GetLengthPrefixedSlice, declared in
// memtablerep.h, reads the internal key).
absl::string_view UserKeyOf(const char* entry) {
  const rocksdb::Slice internal_key = rocksdb::GetLengthPrefixedSlice(entry);
  return absl::string_view(internal_key.data(), internal_key.size() - 8);
}

// "a before b" in the memtable's order (RocksDB's internal key order).
struct EntryLess {
  const rocksdb::MemTableRep::KeyComparator& cmp;
  bool operator()(const char* a, const char* b) const { return cmp(a, b) < 0; }
};

size_t HashUserKey(absl::string_view user_key) { return absl::Hash<absl::string_view>{}(user_key); }

// An entry in a shard's hash table, with its user key's hash: growing the
// table then moves 16-byte elements without reading any key (each key sits
// at a random place of the memtable: a cache miss), and a probe compares
// the hashes before it reads a key.
struct Indexed {
  size_t hash;
  const char* entry;
};
// What a lookup by user key probes with.
struct Probe {
  size_t hash;
  absl::string_view user_key;
};
struct IndexedHash {
  using is_transparent = void;
  size_t operator()(const Indexed& i) const { return i.hash; }
  size_t operator()(const Probe& p) const { return p.hash; }
};
struct IndexedEq {
  using is_transparent = void;
  static absl::string_view Key(const Indexed& i) { return UserKeyOf(i.entry); }
  static absl::string_view Key(const Probe& p) { return p.user_key; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return a.hash == b.hash && Key(a) == Key(b);
  }
};

using Entries = std::vector<const char*>;

// The 8 bytes of `key` at `depth`, big-endian, zero past its end: for two
// keys equal before `depth`, a smaller chunk means a bytewise smaller key
// (zero padding can only make different keys tie, never invert them).
uint64_t ChunkAt(absl::string_view key, size_t depth) {
  if (key.size() >= depth + 8) {
    uint64_t v;
    std::memcpy(&v, key.data() + depth, 8);
    return __builtin_bswap64(v);
  }
  uint64_t c = 0;
  for (size_t i = 0; i < 8; ++i) {
    c <<= 8;
    if (depth + i < key.size()) c |= static_cast<unsigned char>(key[depth + i]);
  }
  return c;
}

// Sorts `entries` in the order of `cmp`, which must order user keys
// bytewise (RocksDB's default comparator) and then by sequence number.
// Comparing whole keys through `cmp` reads both keys (each at a random
// place of the memtable: a cache miss) ~log2(n) times per entry; this
// sorts 8-byte chunks of the user keys held in a contiguous array
// instead, level by level for the runs that tie (URL keys share their
// scheme and often their host), and hands only the runs that tie to the
// end of their keys (a user key written more than once, or keys equal
// but for trailing zero bytes) to `cmp`. A sample of neighbours is then
// checked with `cmp`; should it disagree (a comparator that is not
// bytewise), the entries are sorted with `cmp` alone.
void SortEntries(const rocksdb::MemTableRep::KeyComparator& cmp, Entries* entries) {
  const EntryLess less{cmp};
  struct Keyed {
    uint64_t chunk;
    const char* entry;
    size_t length;  // of the user key
  };
  std::vector<Keyed> items(entries->size());
  for (size_t i = 0; i < items.size(); ++i) {
    items[i] = Keyed{0, (*entries)[i], UserKeyOf((*entries)[i]).size()};
  }
  constexpr size_t kSmall = 16;  // ranges this short go to `cmp` directly
  auto by_entry = [&less](const Keyed& a, const Keyed& b) { return less(a.entry, b.entry); };
  struct Range {
    size_t begin;
    size_t end;
    size_t depth;
  };
  std::vector<Range> todo = {{0, items.size(), 0}};
  while (!todo.empty()) {
    const Range r = todo.back();
    todo.pop_back();
    Keyed* const begin = items.data() + r.begin;
    Keyed* const end = items.data() + r.end;
    if (r.end - r.begin <= kSmall) {
      std::sort(begin, end, by_entry);
      continue;
    }
    for (Keyed* it = begin; it != end; ++it) it->chunk = ChunkAt(UserKeyOf(it->entry), r.depth);
    std::sort(begin, end, [](const Keyed& a, const Keyed& b) { return a.chunk < b.chunk; });
    for (Keyed* run = begin; run != end;) {
      Keyed* run_end = run + 1;
      while (run_end != end && run_end->chunk == run->chunk) ++run_end;
      if (run_end - run > 1) {
        const bool longer =
            std::any_of(run, run_end, [&r](const Keyed& k) { return k.length > r.depth + 8; });
        if (longer) {
          todo.push_back({static_cast<size_t>(run - items.data()),
                          static_cast<size_t>(run_end - items.data()), r.depth + 8});
        } else {
          std::sort(run, run_end, by_entry);
        }
      }
      run = run_end;
    }
  }
  for (size_t i = 0; i < items.size(); ++i) (*entries)[i] = items[i].entry;

  constexpr size_t kChecks = 1024;
  const size_t n = entries->size();
  const size_t step = std::max<size_t>(1, n / kChecks);
  for (size_t i = 0; i + 1 < n; i += step) {
    if (!less((*entries)[i], (*entries)[i + 1])) {
      std::sort(entries->begin(), entries->end(), less);
      return;
    }
  }
}

// Iterates a sorted run of entries, shared with the memtable (and other
// iterators) and never changed once built.
class SortedIterator final : public rocksdb::MemTableRep::Iterator {
 public:
  SortedIterator(const rocksdb::MemTableRep::KeyComparator& cmp,
                 std::shared_ptr<const Entries> entries)
      : cmp_(cmp), entries_(std::move(entries)), pos_(entries_->size()) {}

  bool Valid() const override { return pos_ < entries_->size(); }
  const char* key() const override { return (*entries_)[pos_]; }
  void Next() override { ++pos_; }
  void Prev() override { pos_ = pos_ == 0 ? entries_->size() : pos_ - 1; }
  void Seek(const rocksdb::Slice& internal_key, const char* memtable_key) override {
    pos_ = Bound(internal_key, memtable_key, /*upper=*/false);
  }
  void SeekForPrev(const rocksdb::Slice& internal_key, const char* memtable_key) override {
    const size_t after = Bound(internal_key, memtable_key, /*upper=*/true);
    pos_ = after == 0 ? entries_->size() : after - 1;
  }
  void SeekToFirst() override { pos_ = 0; }
  void SeekToLast() override { pos_ = entries_->empty() ? 0 : entries_->size() - 1; }

 private:
  // The position of the first entry not less than the target (lower
  // bound), or with `upper` of the first one greater than it (upper bound).
  // The target is the memtable key when RocksDB passes one, else the
  // internal key.
  size_t Bound(const rocksdb::Slice& internal_key, const char* memtable_key, bool upper) const {
    auto before = [&](const char* entry) {
      const int c = memtable_key != nullptr ? cmp_(entry, memtable_key) : cmp_(entry, internal_key);
      return upper ? c <= 0 : c < 0;
    };
    return static_cast<size_t>(std::partition_point(entries_->begin(), entries_->end(), before) -
                               entries_->begin());
  }

  const rocksdb::MemTableRep::KeyComparator& cmp_;
  const std::shared_ptr<const Entries> entries_;
  size_t pos_;
};

class HashVectorRep final : public rocksdb::MemTableRep {
 public:
  // `shards` >= 1 (the factory's).
  HashVectorRep(const KeyComparator& cmp, rocksdb::Allocator* allocator, int shards)
      : MemTableRep(allocator),
        cmp_(cmp),
        num_shards_(static_cast<size_t>(shards)),
        shards_(new Shard[num_shards_]),
        covered_(num_shards_, 0) {}

  void Insert(rocksdb::KeyHandle handle) override { Add(static_cast<const char*>(handle)); }
  void InsertConcurrently(rocksdb::KeyHandle handle) override {
    Add(static_cast<const char*>(handle));
  }

  bool Contains(const char* key) const override {
    for (const char* entry : EntriesOf(UserKeyOf(key))) {
      if (cmp_(entry, key) == 0) return true;
    }
    return false;
  }

  // Calls `callback` on the entries of the lookup key's user key, newest
  // first, from the first one not newer than the lookup's sequence number,
  // until it returns false. (The skip list would go on to the next user
  // key, where RocksDB's callbacks stop: they check the user key.)
  void Get(const rocksdb::LookupKey& k, void* callback_args,
           bool (*callback_func)(void* arg, const char* entry)) override {
    const rocksdb::Slice internal_key = InternalKeyOf(k);
    if (internal_key.size() < 8) return;
    const absl::string_view user_key(internal_key.data(), internal_key.size() - 8);
    for (const char* entry : EntriesOf(user_key)) {
      if (cmp_(entry, internal_key) < 0) continue;  // newer than the lookup
      if (!callback_func(callback_args, entry)) return;
    }
  }

  // Entries in [start_ikey, end_ikey), estimated from a sample of up to
  // kSamplePerShard evenly spaced entries per shard (exact for small
  // memtables): what RocksDB's size estimates of a key range (Stats'
  // bytes per record kind) use for the memtable's part.
  uint64_t ApproximateNumEntries(const rocksdb::Slice& start_ikey,
                                 const rocksdb::Slice& end_ikey) override {
    constexpr size_t kSamplePerShard = 128;
    uint64_t total = 0;
    uint64_t sampled = 0;
    uint64_t inside = 0;
    for (size_t s = 0; s < num_shards_; ++s) {
      Shard& shard = shards_[s];
      absl::ReaderMutexLock lock(&shard.mu);
      const size_t n = shard.entries.size();
      total += n;
      const size_t step = std::max<size_t>(1, n / kSamplePerShard);
      for (size_t i = 0; i < n; i += step) {
        const char* entry = shard.entries[i];
        ++sampled;
        if (cmp_(entry, start_ikey) >= 0 && cmp_(entry, end_ikey) < 0) ++inside;
      }
    }
    return sampled == 0 ? 0 : total * inside / sampled;
  }

  size_t ApproximateMemoryUsage() override { return bytes_.load(std::memory_order_relaxed); }

  Iterator* GetIterator(rocksdb::Arena* arena) override {
    std::shared_ptr<const Entries> sorted = Sorted();
    if (arena == nullptr) return new SortedIterator(cmp_, std::move(sorted));
    // With an arena, RocksDB only runs the iterator's destructor and leaves
    // its memory to the arena's owner, but rocksdb::Arena's interface is not
    // installed. Nor may the memory come from this memtable's allocator: an
    // immutable memtable's size must not change (RocksDB asserts it when
    // it frees the memtable). So it comes from the heap, kept until the
    // memtable goes: one small block (sizeof(SortedIterator)) per iterator
    // over the memtable's life; the sorted run it shares is released by
    // its destructor.
    absl::MutexLock lock(&slots_mu_);
    slots_.push_back(std::make_unique<Slot>());
    return new (slots_.back()->bytes) SortedIterator(cmp_, std::move(sorted));
  }

 private:
  struct alignas(64) Shard {
    absl::Mutex mu;
    // Every entry of the shard, in insertion order.
    Entries entries ABSL_GUARDED_BY(mu);
    // The first entry of each user key.
    absl::flat_hash_set<Indexed, IndexedHash, IndexedEq> first ABSL_GUARDED_BY(mu);
    // Every entry of each user key that has more than one (a record
    // deleted and written again while the memtable is live): rare.
    absl::flat_hash_map<absl::string_view, Entries> more ABSL_GUARDED_BY(mu);
    // The shard's bytes as last added to bytes_.
    size_t bytes ABSL_GUARDED_BY(mu) = 0;
  };

  // The entries of `user_key`, newest first (RocksDB's internal key order).
  absl::InlinedVector<const char*, 2> EntriesOf(absl::string_view user_key) const {
    const size_t hash = HashUserKey(user_key);
    Shard& shard = ShardOf(hash);
    absl::InlinedVector<const char*, 2> found;
    {
      absl::ReaderMutexLock lock(&shard.mu);
      auto first = shard.first.find(Probe{hash, user_key});
      if (first == shard.first.end()) return found;
      if (!shard.more.empty()) {
        auto more = shard.more.find(user_key);
        if (more != shard.more.end()) found.assign(more->second.begin(), more->second.end());
      }
      if (found.empty()) found.push_back(first->entry);
    }
    if (found.size() > 1) std::sort(found.begin(), found.end(), EntryLess{cmp_});
    return found;
  }

  Shard& ShardOf(size_t hash) const {
    // The top bits: the hash table inside the shard uses the low ones.
    return shards_[(hash >> 48) % num_shards_];
  }

  void Add(const char* entry) {
    const absl::string_view user_key = UserKeyOf(entry);
    const size_t hash = HashUserKey(user_key);
    Shard& shard = ShardOf(hash);
    absl::MutexLock lock(&shard.mu);
    shard.entries.push_back(entry);
    auto [first, inserted] = shard.first.insert(Indexed{hash, entry});
    if (!inserted) {
      Entries& all = shard.more[user_key];
      if (all.empty()) all.push_back(first->entry);
      all.push_back(entry);
    }
    const size_t bytes = shard.entries.capacity() * sizeof(const char*) +
                         shard.first.capacity() * (sizeof(Indexed) + 1) +
                         shard.more.capacity() * (sizeof(absl::string_view) + sizeof(Entries) + 1);
    if (bytes != shard.bytes) {
      bytes_.fetch_add(bytes - shard.bytes, std::memory_order_relaxed);
      shard.bytes = bytes;
    }
  }

  // Every entry inserted so far, sorted: the previous sorted run, merged
  // with the entries appended to the shards since (sorted on their own).
  // An immutable memtable is sorted once, at its first iterator.
  std::shared_ptr<const Entries> Sorted() {
    absl::MutexLock lock(&sort_mu_);
    Entries fresh;
    for (size_t s = 0; s < num_shards_; ++s) {
      Shard& shard = shards_[s];
      absl::ReaderMutexLock shard_lock(&shard.mu);
      fresh.insert(fresh.end(), shard.entries.begin() + static_cast<ptrdiff_t>(covered_[s]),
                   shard.entries.end());
      covered_[s] = shard.entries.size();
    }
    if (sorted_ != nullptr && fresh.empty()) return sorted_;
    const EntryLess less{cmp_};
    SortEntries(cmp_, &fresh);
    std::shared_ptr<Entries> run;
    if (sorted_ == nullptr || sorted_->empty()) {
      run = std::make_shared<Entries>(std::move(fresh));
    } else {
      const Entries& old = *sorted_;
      run = std::make_shared<Entries>();
      run->reserve(old.size() + fresh.size());
      if (fresh.size() * static_cast<size_t>(std::log2(old.size()) + 1) < old.size()) {
        // Few new entries (a scan page by page while claims go on): find
        // each one's place by binary search and copy the runs between
        // them, instead of comparing every old entry (each comparison
        // reads two keys at random places of the memtable).
        auto from = old.begin();
        for (const char* entry : fresh) {
          auto at = std::lower_bound(from, old.end(), entry, less);
          run->insert(run->end(), from, at);
          run->push_back(entry);
          from = at;
        }
        run->insert(run->end(), from, old.end());
      } else {
        std::merge(old.begin(), old.end(), fresh.begin(), fresh.end(), std::back_inserter(*run),
                   less);
      }
    }
    // Not added to bytes_: an immutable memtable's size must not change.
    sorted_ = std::move(run);
    return sorted_;
  }

  // Memory for one iterator created with an arena (see GetIterator).
  struct Slot {
    alignas(SortedIterator) unsigned char bytes[sizeof(SortedIterator)];
  };

  const KeyComparator& cmp_;
  const size_t num_shards_;
  const std::unique_ptr<Shard[]> shards_;
  std::atomic<size_t> bytes_{0};

  // Taken before any shard's mu.
  absl::Mutex sort_mu_;
  std::shared_ptr<const Entries> sorted_ ABSL_GUARDED_BY(sort_mu_);
  // covered_[s]: how many of shard s's entries sorted_ holds.
  std::vector<size_t> covered_ ABSL_GUARDED_BY(sort_mu_);

  absl::Mutex slots_mu_;
  std::vector<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(slots_mu_);
};

}  // namespace

HashVectorMemTableRepFactory::HashVectorMemTableRepFactory(int shards)
    : shards_(std::max(shards, 1)) {}

rocksdb::MemTableRep* HashVectorMemTableRepFactory::CreateMemTableRep(
    const rocksdb::MemTableRep::KeyComparator& cmp, rocksdb::Allocator* allocator,
    const rocksdb::SliceTransform* /*prefix_extractor*/, rocksdb::Logger* /*logger*/) {
  return new HashVectorRep(cmp, allocator, shards_);
}

}  // namespace dedupd
