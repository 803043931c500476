// memory_content_store.h: an in-memory ContentStore, the fake engine and
// server tests use, and the reference the content conformance suite
// (content_store_conformance.h) holds the RocksDB backend to. Nothing is
// persisted.
//
// Example:
//   MemoryUrlStore urls;
//   MemoryContentStore store(&urls, /*max_near_distance=*/3);
//   std::vector<ContentOutcome> out;
//   DEDUPD_RETURN_IF_ERROR(store.CheckContent(docs, /*claim=*/true,
//                                             ContentLimits{}, absl::Now(), &out));
//
// Thread safety: thread-safe. A claim batch holds one exclusive lock for
// the whole batch (and Forget for the whole call); peeks share it.
#ifndef DEDUPD_STORAGE_MEMORY_MEMORY_CONTENT_STORE_H_
#define DEDUPD_STORAGE_MEMORY_MEMORY_CONTENT_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "core/index/simhash_index.h"
#include "storage/content_store.h"
#include "storage/memory/memory_url_store.h"
#include "storage/minhash_near_index.h"
#include "storage/plan/content_planner.h"

namespace dedupd {

class MemoryContentStore final : public ContentStore {
 public:
  // `urls`, when not null, is the URL seen-set claims add identity and
  // fetched URLs to; it must outlive this store.
  // `index_blocks` is the near-duplicate index's number of blocks
  // (SimHashIndex's `blocks`; 0: its default).
  // REQUIRES: SimHashIndex::IsValidLayout(max_near_distance, index_blocks).
  explicit MemoryContentStore(MemoryUrlStore* urls, int max_near_distance = 3,
                              int index_blocks = 0);
  MemoryContentStore(const MemoryContentStore&) = delete;
  MemoryContentStore& operator=(const MemoryContentStore&) = delete;

  // See ContentStore. Errors: InvalidArgument (CheckContentDocs).
  absl::Status CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                            const ContentLimits& limits, absl::Time now,
                            std::vector<ContentOutcome>* outcomes) override;
  int max_near_distance() const override;

  // See ContentStore.
  absl::Status LookupFetches(absl::string_view name_space, absl::Span<const std::string> urls,
                             std::vector<std::optional<FetchRecord>>* fetches) override;

  // See ContentStore (the empty namespace's URL). The URL's seen-set record is erased from `urls`
  // (when not null); this store holds no chunks, so the chunk fields of the
  // result stay zero. Errors: InvalidArgument for an empty URL.
  // Complexity: O(texts) (a scan of every text and alias list).
  absl::StatusOr<ForgetResult> Forget(const std::string& normalized_url, absl::Time now) override;

 private:
  class Reader;
  // The records of one namespace.
  struct Space {
    Space(int max_distance, int blocks) : index(max_distance, blocks) {}
    // Synchronized by itself; written only with mu_ held exclusively.
    SimHashIndex index;
    // The texts recorded with a MinHash signature. Synchronized by itself.
    MinHashNearIndex near;
    absl::flat_hash_map<std::string, ContentRecord> contents;
    absl::flat_hash_map<std::string, absl::btree_set<std::string>> aliases;
    absl::flat_hash_map<std::string, FetchRecord> fetches;
    // When each alias was added, by (text, alias URL): Forget's promotion
    // picks the oldest.
    absl::flat_hash_map<std::pair<std::string, std::string>, absl::Time> alias_added;
  };
  // The namespace's records; nullptr when none was ever recorded.
  const Space* FindSpace(absl::string_view name_space) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Space* GetSpace(absl::string_view name_space) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  MemoryUrlStore* const urls_;
  const int index_blocks_;
  // What a namespace without records reads as.
  const Space no_records_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<Space>> spaces_ ABSL_GUARDED_BY(mu_);
  // Doc ids are dense over every namespace.
  std::vector<FingerprintRecord> fingerprints_ ABSL_GUARDED_BY(mu_);  // by doc id
  // Doc ids of texts Forget deleted (their fingerprints_ slot stays, since
  // ids index it densely).
  absl::flat_hash_set<uint32_t> forgotten_ids_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_MEMORY_MEMORY_CONTENT_STORE_H_
