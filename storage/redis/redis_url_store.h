// redis_url_store.h: a UrlStore on a Redis Cluster (Redis, Valkey,
// Kvrocks), so several stateless dedupd front ends share one seen-set
// (docs/design.md, "Scaling past one machine"; the key layout is
// docs/redis_format.md).
//
// Each distinct key of a batch is claimed by one Lua script on the node
// that owns the key's slot: the script reads the URL's record, decides
// (PlanUrlClaim's rules, storage/plan/url_planner.h) and writes, atomically
// with respect to every other client of the cluster; the scripts of a
// batch go through ClusterRouter::EvalBatch, pipelined per node. The
// script returns the record it read and the one it wrote, and the store
// answers from PlanUrlClaim over the record read, after checking that the
// planner would have written the same bytes (a mismatch is Internal,
// never a silent wrong answer).
//
// Example:
//   RedisUrlStoreOptions options;
//   options.router.seeds = {"10.0.0.5:6379"};
//   options.min_replicas_acked = 1;
//   absl::StatusOr<std::unique_ptr<RedisUrlStore>> store = RedisUrlStore::Open(options);
//   if (!store.ok()) return store.status();
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR((*store)->ClaimUrls({"http://a.example/"}, absl::Now(), &out));
//
// Thread safety: thread-safe (the router is; the store keeps no other
// mutable state).
#ifndef DEDUPD_STORAGE_REDIS_REDIS_URL_STORE_H_
#define DEDUPD_STORAGE_REDIS_REDIS_URL_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/redis/cluster_router.h"
#include "storage/redis/redis_url_format.h"
#include "storage/url_store.h"

namespace dedupd {

struct RedisUrlStoreOptions {
  // How to reach the cluster (seeds, AUTH, timeouts, retries). Default:
  // RouterOptions' defaults; seeds must be set.
  redis::RouterOptions router;
  // Prepended to every key (docs/redis_format.md), so that deployments
  // sharing a cluster never see each other's records. 1 to 64 bytes of
  // ASCII letters, digits, '.', '_', '-', ':'. Default: "dedupd:".
  std::string key_prefix = std::string(redis::kDefaultKeyPrefix);
  // Durability: > 0 makes Claim and Complete send `WAIT
  // min_replicas_acked replica_ack_timeout` to every node they wrote to,
  // after the batch's writes, and fail Unavailable unless every such node
  // reports at least that many replicas acknowledged the writes. Redis
  // replication is asynchronous: with 0, a NEW answered just before a
  // master dies may be lost in the failover (the window is the
  // replication lag, usually under a millisecond but unbounded under
  // load); with N, losing it takes losing the master and N replicas.
  // Default: 0 (no WAIT).
  int min_replicas_acked = 0;
  // How long one WAIT may block (its node's connection is held meanwhile:
  // other callers' commands to that node wait behind it). Default: 1 s.
  absl::Duration replica_ack_timeout = absl::Seconds(1);
  // The versions checked against (or, on an empty cluster, written to) the
  // meta record. Default: this build's (RedisMeta::ThisBuild).
  redis::RedisMeta meta = redis::RedisMeta::ThisBuild(absl::UnixEpoch());
};

class RedisUrlStore final : public UrlStore {
 public:
  // Open connects to the cluster and checks its meta record
  // (<prefix>meta): absent, it is written (SET NX, so of several front ends
  // opening an empty cluster at once exactly one writes it and the others
  // check it); present, its versions must equal options.meta's.
  // Errors: InvalidArgument for bad options (no seeds, a bad key prefix, a
  // negative min_replicas_acked; with min_replicas_acked > 0, a
  // replica_ack_timeout under 1 ms or not below router.command_timeout);
  // FailedPrecondition when the meta record is not a dedupd record, names
  // another format version or another algorithm version (the message says
  // which), or AUTH is refused;
  // Unavailable when no seed answers or the meta's node cannot be reached.
  static absl::StatusOr<std::unique_ptr<RedisUrlStore>> Open(RedisUrlStoreOptions options);

  RedisUrlStore(const RedisUrlStore&) = delete;
  RedisUrlStore& operator=(const RedisUrlStore&) = delete;

  // See UrlStore. One Lua script per distinct key (a repeat later in the
  // batch is answered SEEN from the record its first position left), all
  // sent in one EvalBatch, pipelined per node.
  //
  // Per-key failures: a key whose node failed gets Unavailable as its
  // (*results)[i].status (UrlClaim::status), the message naming the node
  // ("redis node 127.0.0.1:7001: connection refused"), and the call
  // answers every other key and returns OK. A node fails its keys when it
  // cannot be reached, its connection breaks or times out (the router's
  // command_timeout: a stopped node costs that long), a redirect or retry
  // outlasts the router's bounds, it answers LOADING, READONLY, BUSY,
  // MASTERDOWN or NOREPLICAS, or (with min_replicas_acked) its WAIT comes
  // back short or its connection was reopened before the WAIT: then only
  // the keys this call wrote on that node fail (a key it answered SEEN
  // there wrote nothing and keeps its answer). A repeat of a failed key
  // fails too.
  //
  // Retrying failed keys: a failed key may have been claimed all the same
  // (its script ran before the connection broke, or it ran and WAIT came
  // back short). Send it again with the same claim id (within the claim
  // id retention): it is answered as that claim was, NEW again, so a
  // claim is never lost and never handed to two callers; if the first
  // claim never reached the node, the retry claims it now. Without a claim
  // id the retry of a key that was recorded is SEEN (at most once, as
  // after a lost reply).
  //
  // Errors (the call fails as a whole; results unspecified): besides
  // UrlStore's InvalidArgument,
  //   DataLoss — a stored value is not a URL value (the key named).
  //   ResourceExhausted — a node is out of memory (maxmemory: OOM).
  //   Internal — the Lua script and the URL planner disagree (a bug), or a
  //     node answered an unexpected error.
  // Keys on other nodes may have been claimed then; the retry rule above
  // holds for them too.
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override;

  // See UrlStore: pipelined GETs, no writes. Fails as a whole (Unavailable
  // naming the nodes and counting the failed keys) when a node fails;
  // LookupRecordsPerKey answers per key instead. Errors: as Claim.
  absl::Status LookupRecords(absl::string_view name_space, absl::Span<const std::string> keys,
                             std::vector<std::optional<UrlRecord>>* records) override;

  // See UrlStore: LookupRecords, with a per-key Unavailable (naming the
  // node) for the keys of a node that failed, as Claim. PeekUrls reads
  // through it, so a peek fails the same keys a claim would.
  absl::Status LookupRecordsPerKey(absl::string_view name_space, absl::Span<const std::string> keys,
                                   std::vector<std::optional<UrlRecord>>* records,
                                   std::vector<absl::Status>* statuses) override;

  // See UrlStore: one Lua script per distinct key (PlanUrlComplete's
  // rules), then WAIT as Claim. A repeated key is answered as if
  // confirmed again after its first position. Fails as a whole
  // (Unavailable naming the nodes) when a node fails (as Claim's per-key
  // failures), though the other keys are confirmed; CompletePerKey
  // answers per key instead. Errors: as Claim.
  absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                        absl::Span<const std::string> keys,
                        std::vector<UrlCompletion>* results) override;

  // See UrlStore: Complete, with a per-key Unavailable (naming the node)
  // for the keys of a node that failed, as Claim's. Confirming such a key
  // again is harmless (kAlreadyConfirmed when the first confirmation was
  // recorded).
  absl::Status CompletePerKey(absl::string_view name_space, uint64_t claim_id_hash,
                              absl::Span<const std::string> keys,
                              std::vector<UrlCompletion>* results,
                              std::vector<absl::Status>* statuses) override;

  // router returns the cluster connection (for readiness: SlotMapComplete,
  // and Stats). Lives as long as the store.
  redis::ClusterRouter& router() { return *router_; }
  const std::string& key_prefix() const { return options_.key_prefix; }
  // The versions Open checked the cluster's meta record against (equal to
  // the record's, `created` aside).
  const redis::RedisMeta& meta() const { return options_.meta; }

  // The durability step other stores on this cluster share (the content
  // store, RedisContentStore, writes through this store's router):
  // Reconnects snapshots each node's reconnect count (empty when
  // min_replicas_acked is 0: no WAIT will need it); take it before the
  // writes. WaitForReplicas then sends WAIT to the owner of each slot in
  // `slots` (one per node) when options.min_replicas_acked > 0;
  // Unavailable when a node acknowledged too few replicas, or its
  // connection was reopened since `reconnects` was taken.
  std::map<std::string, uint64_t> Reconnects() const;
  absl::Status WaitForReplicas(const std::vector<int>& slots,
                               const std::map<std::string, uint64_t>& reconnects);

 private:
  RedisUrlStore(RedisUrlStoreOptions options, std::unique_ptr<redis::ClusterRouter> router);

  // RunRecordScripts runs `script` once per call (one distinct key each)
  // and checks each run against the planner: `plan(c, old)` returns what
  // the planner writes for call c over the record the script read (and
  // records its answer); a script that wrote anything else is Internal.
  // Sets (*after)[c] to call c's record once run; then WAITs
  // (WaitForReplicas) for the nodes written. (*failed)[c] is OK, or the
  // Unavailable (naming the node) of a call whose node failed or whose
  // write was not acknowledged: its answer from `plan` must be dropped.
  // Errors: as Claim.
  absl::Status RunRecordScripts(
      const redis::Script& script, absl::string_view what,
      const std::vector<redis::ScriptCall>& calls,
      absl::FunctionRef<std::optional<UrlRecord>(size_t, const std::optional<UrlRecord>&)> plan,
      std::vector<std::optional<UrlRecord>>* after, std::vector<absl::Status>* failed);
  // WaitForReplicas, per slot: (*unacknowledged)[k] is OK, or Unavailable
  // (naming the node) when the owner of slots[k] could not be asked,
  // acknowledged too few replicas, or its connection was reopened since
  // `reconnects` was taken. Errors: Internal for an unexpected WAIT reply.
  absl::Status WaitForReplicas(const std::vector<int>& slots,
                               const std::map<std::string, uint64_t>& reconnects,
                               std::vector<absl::Status>* unacknowledged);

  const RedisUrlStoreOptions options_;
  const std::unique_ptr<redis::ClusterRouter> router_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_REDIS_REDIS_URL_STORE_H_
