// server.h: a running dedupd: store, engine, gRPC server with health
// checking and reflection.
//
// Example:
//   ServerOptions options;
//   options.listen = "127.0.0.1:0";
//   options.data_dir = "/var/lib/dedupd";
//   absl::StatusOr<std::unique_ptr<DedupServer>> server = DedupServer::Start(options);
//   ... (*server)->port() ...
//   (*server)->Shutdown(absl::Seconds(10));
#ifndef DEDUPD_SERVER_SERVER_H_
#define DEDUPD_SERVER_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace dedupd {

// Every option of the server; main.cc copies flags into it. Each default is
// the flag's default.
struct ServerOptions {
  // host:port to listen on; port 0 picks a free port. Default: 127.0.0.1:50051.
  std::string listen = "127.0.0.1:50051";
  // Where the records live:
  //   kRocksDb: the embedded RocksDB store in data_dir (every layer);
  //   kRedisCluster: a Redis Cluster (redis_nodes), shared by any number of
  //     front ends; it serves the URL layer only so far (CheckUrl,
  //     CompleteUrls; DedupResults needs no store): CheckContent,
  //     CheckChunks and the admin calls but Stats answer UNIMPLEMENTED, and
  //     no data_dir is used (docs/operations.md, "Redis Cluster mode").
  // Default: kRocksDb.
  enum class StoreKind { kRocksDb, kRedisCluster };
  StoreKind store = StoreKind::kRocksDb;
  // Directory of the embedded RocksDB store; created if missing. Default: ./data.
  std::string data_dir = "./data";
  // kRedisCluster: seed nodes ("host:port"; any one reachable is enough),
  // AUTH user (empty: `AUTH password` alone) and password (empty: no
  // AUTH), key prefix, and the WAIT durability setting (see
  // RedisUrlStoreOptions, storage/redis/redis_url_store.h). Defaults:
  // none, empty, empty, "dedupd:", 0 replicas, 1 s.
  std::vector<std::string> redis_nodes;
  std::string redis_user;
  std::string redis_password;
  std::string redis_key_prefix = "dedupd:";
  // kRedisCluster: TLS to every node (redis::TlsOptions,
  // storage/redis/redis_connection.h): the CA certificates the nodes'
  // certificates must chain to (PEM; empty: the system's trust store), the
  // client certificate chain and key for mutual TLS (PEM, both or neither),
  // and the name to verify instead of each node's address (empty: the
  // node's address). main.cc reads the PEM files. Defaults: off, empty.
  bool redis_tls = false;
  std::string redis_tls_ca_pem;
  std::string redis_tls_cert_pem;
  std::string redis_tls_key_pem;
  std::string redis_tls_server_name;
  int redis_min_replicas_acked = 0;
  absl::Duration redis_replica_ack_timeout = absl::Seconds(1);
  // kRedisCluster: how long a chunk claim holds its document's lease
  // (RedisChunkStoreOptions::lease). Default: 30 s.
  absl::Duration redis_chunk_lease = absl::Seconds(30);
  // Config file (protobuf text format, see README.md "Configuration"); empty for
  // the built-in defaults. Default: empty.
  std::string config_path;
  // Most items per request. Default: 10,000.
  size_t max_batch_items = 10000;
  // Largest request or response message, in bytes. Default: 16 MiB.
  size_t max_message_bytes = 16 << 20;
  // Most calls in flight; more get RESOURCE_EXHAUSTED. Default: 256.
  size_t max_concurrent_rpcs = 256;
  // Threads that run the calls' work (normalizing, store reads and writes),
  // off gRPC's callback threads. Default: 8.
  int worker_threads = 8;
  // fsync the WAL before answering each claim batch (power-loss durability).
  // Default: false (a process crash still loses no acknowledged claim).
  bool sync_writes = false;
  // RocksDB block cache, in bytes. Default: 256 MiB.
  size_t block_cache_bytes = 256 << 20;
  // Size of one RocksDB memtable, in bytes (RocksDbStoreOptions::
  // write_buffer_bytes). Default: 64 MiB.
  size_t write_buffer_bytes = size_t{64} << 20;
  // How the URL records' memtables are kept: a hash-indexed vector sorted
  // at flush, or RocksDB's skip list; passed to the store as is (see
  // RocksDbStoreOptions::UrlMemtable). Default: kHashVector.
  RocksDbStoreOptions::UrlMemtable url_memtable = RocksDbStoreOptions::UrlMemtable::kHashVector;
  // How the URL records' family is compacted: universal (tiered) or
  // leveled; passed to the store as is (see
  // RocksDbStoreOptions::Compaction). Default: kUniversal.
  RocksDbStoreOptions::Compaction url_compaction = RocksDbStoreOptions::Compaction::kUniversal;
  // How the content family (documents and chunk texts) is compacted;
  // passed to the store as is. Default: kLeveled.
  RocksDbStoreOptions::Compaction content_compaction = RocksDbStoreOptions::Compaction::kLeveled;
  // Largest text of one CheckContent item, in bytes. Default: 8 MiB.
  size_t max_text_bytes = size_t{8} << 20;
  // Words per SimHash shingle; persisted in the store (a store created with
  // another value is refused). Default: 3.
  int simhash_shingle_words = 3;
  // Largest Hamming distance the near-duplicate index answers exactly; the
  // per-item max_hamming_distance may not exceed it. Default: 3.
  int simhash_max_distance = 3;
  // Blocks of the near-duplicate index (RocksDbStoreOptions::
  // simhash_index_blocks): 0 = simhash_max_distance + 1, the smallest
  // layout; up to simhash_max_distance + 3 (at most 20 tables) for faster
  // queries at 10^8 fingerprints, at 2.5-5x the index memory. Not persisted.
  // Default: 0.
  int simhash_index_blocks = 0;
  // How long a claim id (CheckUrl, CheckContent, CheckChunks) answers its
  // retries with the same answer. Default: 24 h.
  absl::Duration claim_id_retention = absl::Hours(24);
  // Alias URLs and near matches listed per CheckContent result. Default: 10.
  size_t max_aliases_returned = 10;
  size_t max_near_matches = 10;
  // MinHash near matching (EngineOptions): the default min_jaccard of
  // CheckContent items and CheckChunks requests (0: off), and the lowest
  // one a request may ask for. Defaults: 0.85, 0.8, 0.8.
  double content_min_jaccard = 0.85;
  double chunk_min_jaccard = 0.8;
  double min_jaccard_floor = 0.8;

  // How CheckUrl keeps the URL seen-set:
  //   kExact: a record per URL in RocksDB, with an in-memory Bloom front
  //     (url_filter) that skips the store read for URLs never seen;
  //   kApproximate: no record; a Bloom filter in <data_dir>/url-bloom IS the
  //     seen-set (fixed memory; a false positive answers a new URL
  //     SEEN_PROBABLY and it is skipped). CheckContent's URLs go there too.
  // Default: kExact.
  enum class UrlSeenMode { kExact, kApproximate };
  UrlSeenMode url_seen_mode = UrlSeenMode::kExact;
  // Exact mode: put the Bloom front in front of the URL records.
  // Default: true.
  bool url_filter = true;
  // The filter's design size in URLs: in exact mode the first front's size
  // (it grows past it); in approximate mode the capacity, fixed when the
  // filter is created (past it the false positive rate climbs and the
  // server warns). Default: 10,000,000.
  uint64_t url_filter_expected_urls = 10'000'000;
  // False positive rate at the design size. Default: 0.01.
  double url_filter_false_positive_rate = 0.01;
  // When non-zero, the filter's size in bytes instead (rounded down to
  // 64-byte blocks). Default: 0.
  size_t url_filter_memory_bytes = 0;
  // Approximate mode: snapshot the filter after this many new URLs, or
  // after this long with some new URL (bounds the claim log replayed at
  // restart). Defaults: 10,000,000 and 10 minutes.
  uint64_t url_snapshot_every_urls = 10'000'000;
  absl::Duration url_snapshot_interval = absl::Minutes(10);
  // host:port of the Prometheus /metrics endpoint (HTTP); port 0 picks a
  // free one (logged as "metrics on HOST:PORT"). Empty: off. Default: empty.
  std::string metrics_listen;
  // After SIGTERM: how long health answers NOT_SERVING while calls are still
  // accepted and served, so load balancers and readiness probes see the
  // change before the port closes; then the drain starts. Default: 0.
  absl::Duration shutdown_delay = absl::ZeroDuration();

  // TLS of the gRPC port (--listen): PEM certificate chain and private key,
  // both or neither (neither: plaintext). Checked at Start: a missing,
  // unreadable or unparsable file, or a key that does not match, fails the
  // start. Default: empty (plaintext).
  std::string tls_cert_file;
  std::string tls_key_file;
  // Mutual TLS: when set, every client must present a certificate signed by
  // a CA in this PEM file. REQUIRES: the two above. Default: empty.
  std::string tls_client_ca_file;
  // Bearer-token auth: when non-empty, every call but grpc.health.v1 needs
  // metadata "authorization: Bearer <auth_token>" (else UNAUTHENTICATED).
  // Default: empty (no auth).
  std::string auth_token;
  // When non-empty, calls of /dedupd.v1.Admin/ need this token instead (the
  // normal token gets PERMISSION_DENIED there). Default: empty (admin calls
  // need auth_token).
  std::string admin_token;
  // A new connection must finish its handshake (TLS, when on) and send
  // the HTTP/2 preface and its first SETTINGS frame within this long, or
  // the server closes it: a client that connects and stalls holds a file
  // descriptor for at most this long (gRPC's own default is 120 s).
  // Default: 20 s.
  absl::Duration handshake_timeout = absl::Seconds(20);
  // HTTP/2 streams (calls) one connection may have open at once
  // (SETTINGS_MAX_CONCURRENT_STREAMS); a client's further calls wait in
  // the client for a free stream. Bounds the server memory one connection
  // can tie up (gRPC's own default is unlimited: 10,000 calls on 4
  // connections grew the server's peak RSS by 75-168 MiB, against 16-21 MiB
  // with 100). Default: 100.
  int max_concurrent_streams = 100;
  // A connection with no call for this long is closed (GOAWAY; then the
  // connection is closed even if the client does not answer): clients that
  // connect, send a broken frame the server ignores and then wait, or
  // forget a channel, do not hold a file descriptor forever. A gRPC client
  // reconnects on its next call. Default: 5 minutes.
  absl::Duration max_connection_idle = absl::Minutes(5);
  // Memory gRPC may use for its buffers (connections, calls, messages being
  // received), in bytes (grpc::ResourceQuota): past it the server reclaims
  // memory by refusing new connections and cancelling calls. gRPC 1.51
  // refuses a message over max_message_bytes only once all of it has
  // arrived (grpc/grpc#43012), so this is what bounds a client announcing
  // a 4 GiB message. 0: no cap. Default: 1 GiB.
  size_t grpc_memory_quota_bytes = size_t{1} << 30;
  // host:port of an extra plaintext port that serves only grpc.health.v1
  // (for Kubernetes gRPC probes, which speak no TLS); port 0 picks a free
  // one (logged as "health on HOST:PORT"). Empty: off. Default: empty.
  std::string health_listen;
};

// DedupServer: Listen then OpenStore (or Start, both), then Shutdown once,
// from one thread (the destructor shuts down without draining if Shutdown
// was not called). Health (service "" and "dedupd.v1.Dedup"): NOT_SERVING
// from Listen until OpenStore succeeds, SERVING then, NOT_SERVING again from
// the start of Shutdown. With StoreKind::kRedisCluster, also NOT_SERVING
// while the cluster's slot map is incomplete (checked every second).
class DedupServer {
 public:
  // Listen loads the config and starts the gRPC server (health, reflection,
  // the Dedup service answering UNAVAILABLE "store is opening") and the
  // metrics endpoint, without opening the store. Errors: InvalidArgument
  // (bad config or listen address), Unavailable (port in use).
  static absl::StatusOr<std::unique_ptr<DedupServer>> Listen(const ServerOptions& options);

  // OpenStore opens the store, builds the engine and turns health SERVING.
  // Errors carry context ("open store at ./data: ...") and the code of the
  // cause: FailedPrecondition (store in use or of another version), ...;
  // the caller then shuts the server down. With kRedisCluster, a cluster
  // that cannot be reached (Unavailable) is tried again every second for
  // up to kRedisOpenRetryWindow, health NOT_SERVING meanwhile.
  // REQUIRES: called once, after Listen.
  absl::Status OpenStore();

  // Start is Listen then OpenStore. TLS files are checked by Listen
  // (InvalidArgument: see MakeServerCredentials in server/auth.h).
  static absl::StatusOr<std::unique_ptr<DedupServer>> Start(const ServerOptions& options);

  ~DedupServer();

  // The port actually bound (the chosen one when listening on port 0).
  int port() const;

  // The host:port actually bound.
  std::string address() const;

  // The port --health_listen bound; 0 when it is off.
  int health_port() const;

  // Shutdown marks health NOT_SERVING, keeps serving for
  // options.shutdown_delay, stops accepting calls, waits up to `drain` for
  // calls in flight (then cancels them), and closes the store.
  void Shutdown(absl::Duration drain);

  // How long OpenStore keeps trying a Redis Cluster that does not answer.
  static constexpr absl::Duration kRedisOpenRetryWindow = absl::Seconds(60);

  struct Impl;

 private:
  explicit DedupServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_SERVER_H_
