// redis_chunk_store.h: a ChunkStore on a Redis Cluster, so that several
// stateless dedupd front ends share chunk claims (docs/design.md, "Scaling
// past one machine"; the keys, values, scripts and what is atomic are
// docs/redis_format.md, "Chunk records").
//
// Every decision is the chunk planner's (storage/plan/chunk_planner.h) over
// the records as read; the store only reads and applies. A claim of a
// document takes the document's lease (one claim per document at a time,
// across front ends), writes a journal of what it will change, changes each
// text's holders with one Lua script on the text's slot (all of a text's
// records share the hash tag {SHA-256 hex}; of all concurrent calls
// recording one text exactly one finds it absent and creates it, and is
// answered kNew), indexes the texts it created, then commits the manifest
// and drops the journal and lease in one script on the document's slot. A
// text the planner saw without another document's holder but whose script
// found one (another front end recorded it first) is answered as the exact
// duplicate the script saw. A claim that finds a journal (its writer
// stopped between steps) replays it first: the scripts are idempotent.
//
// Example:
//   std::unique_ptr<RedisUrlStore> urls = ...;  // RedisUrlStore::Open
//   std::unique_ptr<RedisChunkStore> chunks = RedisChunkStore::Open(urls.get());
//   ChunkAnswer answer;
//   DEDUPD_RETURN_IF_ERROR(chunks->CheckChunks(doc, /*claim=*/true, absl::Now(), &answer));
//
// Thread safety: thread-safe (the router is; the store keeps no mutable
// state of its own but the test hook).
#ifndef DEDUPD_STORAGE_REDIS_REDIS_CHUNK_STORE_H_
#define DEDUPD_STORAGE_REDIS_REDIS_CHUNK_STORE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "storage/chunk_store.h"
#include "storage/plan/chunk_planner.h"
#include "storage/redis/redis_chunk_format.h"
#include "storage/redis/redis_url_store.h"

namespace dedupd {

struct RedisChunkStoreOptions {
  // How long a claim's document lease lasts (PX). A front end that dies
  // mid-claim blocks claims of that document this long; the next claim
  // then replays its journal. A claim that outlives its lease fails
  // Unavailable at its commit. Default: 30 s.
  absl::Duration lease = absl::Seconds(30);
  // How long a claim waits for another front end's lease on the same
  // document before failing Unavailable. Default: 10 s.
  absl::Duration lease_wait = absl::Seconds(10);
};

class RedisChunkStore final : public ChunkStore {
 public:
  // Open returns a chunk store writing through `urls`' router, under its
  // key prefix, with its durability settings (min_replicas_acked) and the
  // near distance its meta record names.
  // REQUIRES: `urls` outlives the store.
  static std::unique_ptr<RedisChunkStore> Open(RedisUrlStore* urls,
                                               RedisChunkStoreOptions options = {});

  RedisChunkStore(const RedisChunkStore&) = delete;
  RedisChunkStore& operator=(const RedisChunkStore&) = delete;

  // See ChunkStore. A peek reads (manifest, texts, buckets, candidates) in
  // a few pipelined rounds; a claim adds the lease, the journal, the text
  // scripts (one round), the index writes and the commit. Errors, besides
  // ChunkStore's:
  //   Unavailable — a node could not be reached; another front end held
  //     the document's lease for all of lease_wait; a peek found a claim of
  //     the document under way; the claim outlived its lease. What was
  //     written is replayed or answered consistently by a retry
  //     (docs/redis_format.md, "Chunk atomicity").
  //   DataLoss — a stored value is not what its key should hold.
  absl::Status CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                           ChunkAnswer* answer) override;

  int max_near_distance() const override { return max_near_distance_; }

  // For tests: `hook` runs in every claim after its journal is written
  // and before its text scripts. A hook returning an error stops the claim
  // there (as a front end dying would: journal and lease stay); a hook may
  // also record texts through another front end (the race the scripts
  // settle). Null: none. REQUIRES: no CheckChunks call is running.
  void SetBeforeTextScriptsHookForTesting(std::function<absl::Status()> hook) {
    before_text_scripts_ = std::move(hook);
  }

 private:
  class Reader;
  struct Applied;
  RedisChunkStore(RedisUrlStore* urls, RedisChunkStoreOptions options);
  redis::ClusterRouter& router();
  absl::Status Claim(const ChunkDocument& doc, absl::Time t, ChunkAnswer* answer);
  // Apply runs the journal's text scripts, indexes the texts they created
  // (or found index pending) and unindexes the ones they deleted; returns
  // what each script saw and the manifest with the times the scripts kept.
  absl::Status Apply(const std::string& name_space, const redis::ChunkJournal& journal,
                     std::vector<Applied>* applied, std::optional<ChunkManifest>* manifest,
                     std::vector<int>* written_slots);

  RedisUrlStore* const urls_;
  const std::string prefix_;
  const int max_near_distance_;
  const RedisChunkStoreOptions options_;
  std::function<absl::Status()> before_text_scripts_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_REDIS_REDIS_CHUNK_STORE_H_
