#include "storage/testing/fault_injection_store.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dedupd {

const char* StoreOpName(StoreOp op) {
  switch (op) {
    case StoreOp::kUrlRead:
      return "url_read";
    case StoreOp::kUrlWrite:
      return "url_write";
    case StoreOp::kContentRead:
      return "content_read";
    case StoreOp::kContentWrite:
      return "content_write";
    case StoreOp::kChunkRead:
      return "chunk_read";
    case StoreOp::kChunkWrite:
      return "chunk_write";
  }
  return "unknown";
}

FaultInjectionStore::FaultInjectionStore(UrlStore* urls, ContentStore* content, ChunkStore* chunks)
    : urls_(urls), content_(content), chunks_(chunks) {}

absl::StatusOr<int> FaultInjectionStore::InjectFault(StoreFault fault) {
  if (fault.code == absl::StatusCode::kOk) {
    return absl::InvalidArgumentError("InjectFault: the fault's code is OK");
  }
  // Written so that NaN fails too.
  if (!(fault.probability >= 0.0 && fault.probability <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("InjectFault: probability ", fault.probability, " is not in [0, 1]"));
  }
  absl::MutexLock lock(&mu_);
  ActiveFault active;
  active.id = next_id_++;
  active.rng.seed(fault.seed);
  active.fault = std::move(fault);
  faults_.push_back(std::move(active));
  return faults_.back().id;
}

void FaultInjectionStore::ClearFault(int id) {
  absl::MutexLock lock(&mu_);
  faults_.erase(std::remove_if(faults_.begin(), faults_.end(),
                               [id](const ActiveFault& f) { return f.id == id; }),
                faults_.end());
}

void FaultInjectionStore::ClearFaults() {
  absl::MutexLock lock(&mu_);
  faults_.clear();
}

size_t FaultInjectionStore::active_faults() const {
  absl::MutexLock lock(&mu_);
  return faults_.size();
}

uint64_t FaultInjectionStore::calls(StoreOp op) const {
  absl::MutexLock lock(&mu_);
  return calls_[static_cast<size_t>(op)];
}

uint64_t FaultInjectionStore::injected(StoreOp op) const {
  absl::MutexLock lock(&mu_);
  return injected_[static_cast<size_t>(op)];
}

uint64_t FaultInjectionStore::injected_after_call(StoreOp op) const {
  absl::MutexLock lock(&mu_);
  return injected_after_[static_cast<size_t>(op)];
}

bool FaultInjectionStore::Decide(StoreOp op, Decision* d) {
  const size_t i = static_cast<size_t>(op);
  absl::MutexLock lock(&mu_);
  ++calls_[i];
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    const StoreFault& f = it->fault;
    if (!f.ops.contains(op)) continue;
    if (f.probability < 1.0) {
      // 53 random bits as a double in [0, 1): the same on every platform,
      // unlike std::uniform_real_distribution.
      const double u = static_cast<double>(it->rng() >> 11) * 0x1.0p-53;
      if (u >= f.probability) continue;
    }
    d->status = absl::Status(f.code, f.message);
    d->when = f.when;
    ++injected_[i];
    if (f.when == StoreFault::When::kAfterCall) ++injected_after_[i];
    if (f.count != 0 && ++it->fired >= f.count) faults_.erase(it);
    return true;
  }
  return false;
}

template <typename Call>
absl::Status FaultInjectionStore::Run(StoreOp op, Call&& call) {
  Decision d;
  if (!Decide(op, &d)) return call();
  if (d.when == StoreFault::When::kAfterCall) {
    // The wrapped call runs and records what it records; its own status
    // (even an error) gives way to the injected one.
    absl::Status wrapped = call();
    wrapped.IgnoreError();  // why: the injected failure is the answer
  }
  return d.status;
}

namespace {

absl::Status NoStore(const char* layer) {
  return absl::FailedPreconditionError(
      absl::StrCat("FaultInjectionStore wraps no ", layer, " store"));
}

}  // namespace

absl::Status FaultInjectionStore::Claim(const UrlClaimOptions& options,
                                        absl::Span<const std::string> keys, absl::Time now,
                                        std::vector<UrlClaim>* results) {
  if (urls_ == nullptr) return NoStore("URL");
  return Run(StoreOp::kUrlWrite, [&] { return urls_->Claim(options, keys, now, results); });
}

absl::Status FaultInjectionStore::LookupRecords(absl::string_view name_space,
                                                absl::Span<const std::string> keys,
                                                std::vector<std::optional<UrlRecord>>* records) {
  if (urls_ == nullptr) return NoStore("URL");
  return Run(StoreOp::kUrlRead, [&] { return urls_->LookupRecords(name_space, keys, records); });
}

absl::Status FaultInjectionStore::Complete(absl::string_view name_space, uint64_t claim_id_hash,
                                           absl::Span<const std::string> keys,
                                           std::vector<UrlCompletion>* results) {
  if (urls_ == nullptr) return NoStore("URL");
  return Run(StoreOp::kUrlWrite,
             [&] { return urls_->Complete(name_space, claim_id_hash, keys, results); });
}

bool FaultInjectionStore::approximate() const { return urls_ != nullptr && urls_->approximate(); }

absl::Status FaultInjectionStore::CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                               const ContentLimits& limits, absl::Time now,
                                               std::vector<ContentOutcome>* outcomes) {
  if (content_ == nullptr) return NoStore("content");
  return Run(claim ? StoreOp::kContentWrite : StoreOp::kContentRead,
             [&] { return content_->CheckContent(docs, claim, limits, now, outcomes); });
}

absl::StatusOr<ForgetResult> FaultInjectionStore::Forget(const std::string& normalized_url,
                                                         absl::Time now) {
  if (content_ == nullptr) return NoStore("content");
  absl::StatusOr<ForgetResult> result;
  absl::Status s = Run(StoreOp::kContentWrite, [&] {
    result = content_->Forget(normalized_url, now);
    return result.status();
  });
  if (!s.ok()) return s;
  return result;
}

absl::Status FaultInjectionStore::CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                              ChunkAnswer* answer) {
  if (chunks_ == nullptr) return NoStore("chunk");
  return Run(claim ? StoreOp::kChunkWrite : StoreOp::kChunkRead,
             [&] { return chunks_->CheckChunks(doc, claim, now, answer); });
}

absl::Status FaultInjectionStore::LookupFetches(absl::string_view name_space,
                                                absl::Span<const std::string> urls,
                                                std::vector<std::optional<FetchRecord>>* fetches) {
  if (content_ == nullptr) return NoStore("content");
  return Run(StoreOp::kContentRead,
             [&] { return content_->LookupFetches(name_space, urls, fetches); });
}

int FaultInjectionStore::max_near_distance() const {
  if (content_ != nullptr && chunks_ != nullptr) {
    return std::min(content_->max_near_distance(), chunks_->max_near_distance());
  }
  if (content_ != nullptr) return content_->max_near_distance();
  if (chunks_ != nullptr) return chunks_->max_near_distance();
  return 0;
}

}  // namespace dedupd
