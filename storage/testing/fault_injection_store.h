// fault_injection_store.h: a fake for failure tests (STYLE.md: fakes over
// mocks). FaultInjectionStore is a UrlStore, ContentStore and ChunkStore
// that forwards every call to real stores and makes the calls a test picks
// fail, with the status the test picks, until the test clears the fault:
// every call, the next N calls, or a seeded random share of them.
//
// Example:
//   RocksDbStore& db = ...;
//   FaultInjectionStore store(&db, &db, &db);
//   Engine engine(&normalizer, &store, &hasher, &store, &store, options);
//   StoreFault fault;
//   fault.ops = StoreOpSet::Writes();           // claims fail, peeks work
//   fault.code = absl::StatusCode::kUnavailable;
//   fault.message = "injected: disk unplugged";
//   const int id = store.InjectFault(fault).value();
//   ... CheckUrl(CLAIM) answers UNAVAILABLE, CheckUrl(PEEK) answers ...
//   store.ClearFault(id);                      // everything works again
//
// The two places a write can fail (StoreFault::When):
//   kBeforeCall  the wrapped store is not called: nothing was read or
//                recorded, as when the log append fails (EIO, ENOSPC). A
//                retry after the fault clears is the first claim: NEW.
//   kAfterCall   the wrapped store runs the call and records what it
//                records, then its answer is replaced by the error: the
//                write reached the log but its fsync failed, or the commit
//                happened and the acknowledgement did not. The caller must
//                treat nothing as recorded (UrlStore::Claim: "no key
//                may be treated as claimed"), yet the records exist: a
//                retry answers SEEN / EXACT_DUPLICATE for them, so nobody
//                is ever told NEW for those keys. That is the price of
//                never acknowledging a failed write: an indeterminate write
//                may lose its NEW, it never yields two.
//
// Thread safety: thread-safe. InjectFault, ClearFault and ClearFaults may
// run concurrently with store calls; a call decides under a mutex whether
// it fails, then runs the wrapped call outside it, so a fault injected or
// cleared while a call runs applies from the next call on.
#ifndef DEDUPD_STORAGE_TESTING_FAULT_INJECTION_STORE_H_
#define DEDUPD_STORAGE_TESTING_FAULT_INJECTION_STORE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/chunk_store.h"
#include "storage/content_store.h"
#include "storage/url_store.h"

namespace dedupd {

// StoreOp: one kind of store call, by layer and by whether it records.
enum class StoreOp : uint32_t {
  kUrlRead = 0,       // UrlStore::LookupRecords
  kUrlWrite = 1,      // UrlStore::Claim, UrlStore::Complete
  kContentRead = 2,   // ContentStore::CheckContent with claim = false
  kContentWrite = 3,  // ContentStore::CheckContent with claim = true; Forget
  kChunkRead = 4,     // ChunkStore::CheckChunks with claim = false
  kChunkWrite = 5,    // ChunkStore::CheckChunks with claim = true
};
inline constexpr size_t kStoreOpCount = 6;

// StoreOpName returns "url_read", "url_write", ..., for messages and test
// names.
const char* StoreOpName(StoreOp op);

// StoreOpSet: a set of StoreOps (a bit set). A value type.
class StoreOpSet {
 public:
  constexpr StoreOpSet() = default;
  constexpr StoreOpSet(StoreOp op)  // NOLINT: implicit, so {kUrlWrite} reads well
      : bits_(uint32_t{1} << static_cast<uint32_t>(op)) {}
  constexpr bool contains(StoreOp op) const { return (bits_ & StoreOpSet(op).bits_) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr StoreOpSet operator|(StoreOpSet other) const { return StoreOpSet(bits_ | other.bits_); }
  constexpr bool operator==(StoreOpSet other) const { return bits_ == other.bits_; }

  // Every read (LookupUrls, peeks), every write (claims), everything.
  static constexpr StoreOpSet Reads() {
    return StoreOpSet(StoreOp::kUrlRead) | StoreOp::kContentRead | StoreOp::kChunkRead;
  }
  static constexpr StoreOpSet Writes() {
    return StoreOpSet(StoreOp::kUrlWrite) | StoreOp::kContentWrite | StoreOp::kChunkWrite;
  }
  static constexpr StoreOpSet All() { return Reads() | Writes(); }

 private:
  constexpr explicit StoreOpSet(uint32_t bits) : bits_(bits) {}
  uint32_t bits_ = 0;
};

constexpr StoreOpSet operator|(StoreOp a, StoreOp b) { return StoreOpSet(a) | b; }

// StoreFault: which calls fail, how and when.
struct StoreFault {
  // The calls the fault applies to. Default: none (a fault that never fires).
  StoreOpSet ops;

  // The status a failing call returns. The code says what the caller should
  // do (STYLE.md "Errors"): kUnavailable for a transient failure (the
  // server answers UNAVAILABLE and clients retry), kResourceExhausted for a
  // full disk, kInternal / kDataLoss for failures a retry will not fix.
  // REQUIRES: not kOk. Default: kUnavailable, "injected store fault".
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  std::string message = "injected store fault";

  // Where the failure happens relative to the wrapped call (see the file
  // comment). Default: kBeforeCall.
  enum class When { kBeforeCall, kAfterCall };
  When when = When::kBeforeCall;

  // When non-zero, the fault fails this many calls and is then removed
  // ("fail the next N"); calls the probability spares do not count.
  // 0: it fails calls until it is cleared. Default: 0.
  uint64_t count = 0;

  // Each call the fault applies to fails with this probability, drawn from
  // a generator of the fault's own seeded with `seed`: the same seed and
  // the same sequence of calls fail the same calls. 1: every call (no draw).
  // REQUIRES: 0 <= probability <= 1. Defaults: 1 and 0.
  double probability = 1.0;
  uint64_t seed = 0;
};

// FaultInjectionStore: see the file comment. Thread-safe.
class FaultInjectionStore final : public UrlStore, public ContentStore, public ChunkStore {
 public:
  // Wraps the three stores (often one object that is all three, as
  // RocksDbStore is). Any may be null when a test does not use that layer:
  // its calls then fail with FailedPrecondition.
  // REQUIRES: the stores outlive this object.
  FaultInjectionStore(UrlStore* urls, ContentStore* content, ChunkStore* chunks);

  // InjectFault activates `fault` and returns its id (for ClearFault). A
  // call fails when an active fault applies to it and fires; faults are
  // consulted in the order they were injected and the first that fires
  // decides the status (a later one neither fires nor counts).
  // Errors: InvalidArgument for a fault that breaks a REQUIRES of
  // StoreFault (code kOk; probability outside [0, 1] or NaN).
  absl::StatusOr<int> InjectFault(StoreFault fault);

  // ClearFault deactivates fault `id` (nothing when it is gone already, e.g.
  // a count fault that used up its count). ClearFaults deactivates all.
  // Calls that start afterwards pass through to the wrapped stores.
  void ClearFault(int id);
  void ClearFaults();

  // active_faults returns the number of active faults.
  size_t active_faults() const;

  // calls returns how many calls of kind `op` were made (failed or not);
  // injected returns how many of them failed by an injected fault (of
  // them, injected_after_call how many ran the wrapped call first).
  uint64_t calls(StoreOp op) const;
  uint64_t injected(StoreOp op) const;
  uint64_t injected_after_call(StoreOp op) const;

  // UrlStore, ContentStore and ChunkStore: the wrapped store's call, or the
  // injected status (see StoreFault::When). With kAfterCall the outputs
  // hold the wrapped call's answers (as a careless caller might read
  // them); a caller must never use the outputs of a failed call.
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override;
  absl::Status LookupRecords(absl::string_view name_space, absl::Span<const std::string> keys,
                             std::vector<std::optional<UrlRecord>>* records) override;
  // A write (kUrlWrite), like Claim.
  absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                        absl::Span<const std::string> keys,
                        std::vector<UrlCompletion>* results) override;
  // The wrapped URL store's (false without one).
  bool approximate() const override;

  absl::Status CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                            const ContentLimits& limits, absl::Time now,
                            std::vector<ContentOutcome>* outcomes) override;
  // Forget is a content write (StoreOp::kContentWrite).
  absl::StatusOr<ForgetResult> Forget(const std::string& normalized_url, absl::Time now) override;
  absl::Status CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                           ChunkAnswer* answer) override;

  // ContentStore and ChunkStore share this signature: the smaller of the
  // two wrapped stores' limits (so the wrapper never promises exact answers
  // beyond either), the one present when only one is wrapped, 0 with none.
  int max_near_distance() const override;
  // A read (kContentRead).
  absl::Status LookupFetches(absl::string_view name_space, absl::Span<const std::string> urls,
                             std::vector<std::optional<FetchRecord>>* fetches) override;

 private:
  struct ActiveFault {
    int id = 0;
    StoreFault fault;
    std::mt19937_64 rng;
    uint64_t fired = 0;
  };
  struct Decision {
    absl::Status status;
    StoreFault::When when = StoreFault::When::kBeforeCall;
  };
  // Counts the call; returns whether a fault fires, and then sets `*d`.
  bool Decide(StoreOp op, Decision* d);
  // Runs `call` under the decision for `op`.
  template <typename Call>
  absl::Status Run(StoreOp op, Call&& call);

  UrlStore* const urls_;
  ContentStore* const content_;
  ChunkStore* const chunks_;

  mutable absl::Mutex mu_;
  std::vector<ActiveFault> faults_ ABSL_GUARDED_BY(mu_);
  int next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::array<uint64_t, kStoreOpCount> calls_ ABSL_GUARDED_BY(mu_){};
  std::array<uint64_t, kStoreOpCount> injected_ ABSL_GUARDED_BY(mu_){};
  std::array<uint64_t, kStoreOpCount> injected_after_ ABSL_GUARDED_BY(mu_){};
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_TESTING_FAULT_INJECTION_STORE_H_
