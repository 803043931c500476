// redis_content_store.h: a ContentStore on a Redis Cluster, so that several
// stateless dedupd front ends share content claims (docs/design.md,
// "Scaling past one machine"; the keys and values are docs/redis_format.md,
// format 2).
//
// A batch is decided by the content planner (storage/plan/content_planner.h)
// over pipelined reads, then each distinct text is claimed by one Lua script
// on its slot (all of a text's records share the hash tag {SHA-256 hex}):
// the script creates the content record if it is still absent and adds the
// batch's URLs other than the owner to the alias set, atomically against
// every other front end. A text the planner saw absent but the script found
// claimed (another front end won the race) is answered as the exact
// duplicate the script saw: of all concurrent calls recording one text,
// exactly one gets kNew (or kNearDuplicate). The records in other slots
// (fingerprint, bucket sets, fetch records, seen URLs) are written after
// the scripts, idempotently; docs/redis_format.md ("Atomicity") says what a
// crash between the steps leaves.
//
// Example:
//   std::unique_ptr<RedisUrlStore> urls = ...;  // RedisUrlStore::Open
//   std::unique_ptr<RedisContentStore> content = RedisContentStore::Open(urls.get());
//   std::vector<ContentOutcome> out;
//   DEDUPD_RETURN_IF_ERROR(content->CheckContent({doc}, /*claim=*/true, ContentLimits{},
//                                                absl::Now(), &out));
//
// Thread safety: thread-safe (the router is; the store keeps no mutable
// state of its own).
#ifndef DEDUPD_STORAGE_REDIS_REDIS_CONTENT_STORE_H_
#define DEDUPD_STORAGE_REDIS_REDIS_CONTENT_STORE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/content_store.h"
#include "storage/plan/content_planner.h"
#include "storage/redis/redis_url_store.h"

namespace dedupd {

class RedisContentStore final : public ContentStore {
 public:
  // Open returns a content store writing through `urls`' router, under its
  // key prefix, with its durability settings (min_replicas_acked), and
  // the near distance its meta record names (meta().simhash_max_distance,
  // which RedisUrlStore::Open checked against the cluster's).
  // REQUIRES: `urls` outlives the store.
  static std::unique_ptr<RedisContentStore> Open(RedisUrlStore* urls);

  RedisContentStore(const RedisContentStore&) = delete;
  RedisContentStore& operator=(const RedisContentStore&) = delete;

  // See ContentStore. About seven pipelined rounds per batch (reads, doc
  // ids and buckets, fingerprints, candidates' owners; then the claim
  // scripts, the other slots' writes, the index marks), each one
  // round trip per node. Errors, besides ContentStore's:
  //   Unavailable — a node could not be reached (the message names it and
  //     counts the failed items), or a text the planner read was removed
  //     before its script ran. What was written before the failure is
  //     answered consistently by a retry (docs/redis_format.md,
  //     "Atomicity").
  //   DataLoss — a stored value is not what its key should hold.
  //   Internal — a Lua script and the planner disagree (a bug).
  absl::Status CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                            const ContentLimits& limits, absl::Time now,
                            std::vector<ContentOutcome>* outcomes) override;

  int max_near_distance() const override { return max_near_distance_; }

  // See ContentStore: pipelined GETs.
  absl::Status LookupFetches(absl::string_view name_space, absl::Span<const std::string> urls,
                             std::vector<std::optional<FetchRecord>>* fetches) override;

  // See ContentStore: forget_planner.h's decisions, per text. The texts are
  // found through the URL's hint set (written before every claim script
  // that may name the URL); each is read, planned (PlanTextForget) and
  // rewritten by a script that applies the plan only if the text is
  // unchanged since the read (else read again, up to 5 times). Then the
  // deleted texts' fingerprint records and bucket entries, and the URL's
  // seen-set record, fetch record and hint set, are deleted. Atomic per
  // text, not across texts: on error, the texts already done stay
  // forgotten and a retry does the rest (docs/redis_format.md, "Forget").
  // Errors: InvalidArgument for an empty URL; Unavailable (a node, or a
  // text that kept changing), DataLoss.
  absl::StatusOr<ForgetResult> Forget(const std::string& normalized_url, absl::Time now) override;

  // For tests: `hook` runs in every claim between the planning and the
  // claim scripts (a test claims texts through another front end there,
  // to make the race the scripts settle happen every time). Null: none.
  // REQUIRES: no CheckContent call is running.
  void SetBeforeClaimScriptsHookForTesting(std::function<void()> hook) {
    before_claim_scripts_ = std::move(hook);
  }

 private:
  class Reader;
  explicit RedisContentStore(RedisUrlStore* urls);
  redis::ClusterRouter& router();
  // Write records a claim batch's plan (steps 1-3 of docs/redis_format.md,
  // "Atomicity") and rewrites its answers for texts another front end
  // claimed first; then WAITs as the URL store does.
  absl::Status Write(absl::Span<const ContentDoc> docs, const ContentLimits& limits, absl::Time t,
                     const Reader& reader, ContentPlan* plan);

  RedisUrlStore* const urls_;
  const std::string prefix_;
  const int max_near_distance_;
  std::function<void()> before_claim_scripts_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_REDIS_REDIS_CONTENT_STORE_H_
