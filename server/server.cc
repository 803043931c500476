#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "core/url/url_normalizer.h"
#include "grpc/grpc.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "server/admin.h"
#include "server/admin_service.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/engine.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/rpc_observer.h"
#include "server/service.h"
#include "server/worker_pool.h"
#include "storage/bloom/bloom_url_store.h"
#include "storage/redis/redis_chunk_store.h"
#include "storage/redis/redis_content_store.h"
#include "storage/redis/redis_url_store.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace dedupd {

struct DedupServer::Impl {
  ServerOptions options;
  std::string host;
  int port = 0;
  std::unique_ptr<UrlNormalizer> normalizer;
  RevisitPolicy revisit_policy;
  std::unique_ptr<SimHasher> hasher;
  // --store=rocksdb's store; null with --store=redis_cluster.
  std::unique_ptr<RocksDbStore> store;
  // The approximate mode's seen-set; null in exact mode.
  std::unique_ptr<BloomUrlStore> url_bloom;
  // --store=redis_cluster's URL store; null with --store=rocksdb.
  std::unique_ptr<RedisUrlStore> redis;
  // --store=redis_cluster's content store, on `redis`'s router; declared
  // after it, so destroyed first.
  std::unique_ptr<RedisContentStore> redis_content;
  // --store=redis_cluster's chunk store, on `redis`'s router too.
  std::unique_ptr<RedisChunkStore> redis_chunks;
  // Redis mode: the thread that turns health NOT_SERVING while the slot
  // map is incomplete (RedisReadiness); stopped by `stop_readiness`.
  std::thread readiness;
  absl::Notification stop_readiness;
  // True once the stores above are set (release/acquire: the metrics
  // scrape reads them from its own thread).
  std::atomic<bool> store_open{false};
  std::unique_ptr<Engine> engine;
  // The server's counters; null when --metrics_listen is empty.
  std::unique_ptr<ServerMetrics> server_metrics;
  std::unique_ptr<RpcObserver> observer;
  std::unique_ptr<WorkerPool> workers;
  // The bearer-token rule; null without tokens. Declared before the service
  // and the servers that use it, so it outlives them.
  std::shared_ptr<const CallAuthorizer> authorizer;
  std::unique_ptr<DedupService> service;
  // dedupd.v1.Admin (Stats, Backup, Export).
  // Null until OpenStore; the service answers UNAVAILABLE until then.
  std::unique_ptr<AdminOps> admin;
  std::unique_ptr<AdminService> admin_service;
  // When Listen began: the uptime Admin.Stats reports.
  absl::Time started = absl::Now();
  std::unique_ptr<grpc::Server> server;
  // The plaintext health-only server of --health_listen; null when off.
  std::unique_ptr<grpc::Server> health_server;
  int health_port = 0;
  // The /metrics endpoint; null when --metrics_listen is empty. Destroyed
  // before the stores it reads.
  std::unique_ptr<MetricsExporter> metrics;
  bool shut_down = false;
};

namespace {

// SplitHostPort splits "host:port" and "[v6]:port"; the host keeps its
// brackets. InvalidArgument when there is no numeric port.
absl::Status SplitHostPort(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  int p = -1;
  if (colon == std::string::npos || colon == 0 || !absl::SimpleAtoi(listen.substr(colon + 1), &p) ||
      p < 0 || p > 65535 || (listen[0] == '[' && listen[colon - 1] != ']')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", listen, ": want host:port (e.g. 127.0.0.1:50051, [::1]:0, 0.0.0.0:50051)"));
  }
  *host = listen.substr(0, colon);
  *port = p;
  return absl::OkStatus();
}

// The URL tier's figures, read from the stores at each scrape.
// REQUIRES: impl.store_open.
std::vector<MetricSample> UrlTierSamples(const DedupServer::Impl& impl) {
  std::vector<MetricSample> out;
  auto gauge = [&out](const char* name, const char* help, double v) {
    out.push_back({name, help, MetricKind::kGauge, v});
  };
  auto counter = [&out](const char* name, const char* help, double v) {
    out.push_back({name, help, MetricKind::kCounter, v});
  };
  if (impl.url_bloom != nullptr) {
    const BloomUrlStore::Stats st = impl.url_bloom->stats();
    gauge("dedupd_url_bloom_capacity_urls",
          "Design capacity of the approximate URL seen-set, in URLs.",
          static_cast<double>(st.capacity_urls));
    gauge("dedupd_url_bloom_urls", "URLs recorded in the approximate URL seen-set.",
          static_cast<double>(st.inserted_urls));
    gauge("dedupd_url_bloom_over_capacity",
          "1 when the approximate URL seen-set holds more URLs than its capacity.",
          st.over_capacity ? 1 : 0);
    gauge("dedupd_url_bloom_estimated_false_positive_ratio",
          "Estimated share of new URLs answered SEEN_PROBABLY at the current fill.",
          st.estimated_false_positive_rate);
    gauge("dedupd_url_bloom_memory_bytes", "Bytes of the approximate seen-set's filter.",
          static_cast<double>(st.memory_bytes));
    gauge("dedupd_url_bloom_log_bytes", "Claim-log bytes written since the last snapshot.",
          static_cast<double>(st.log_bytes));
    counter("dedupd_url_bloom_snapshots_total", "Snapshots written by this process.",
            static_cast<double>(st.snapshots_written));
  } else {
    const UrlFilterFront::Stats st = impl.store->url_filter_stats();
    gauge("dedupd_url_filter_ready", "1 when the exact mode's URL Bloom front answers.",
          st.ready ? 1 : 0);
    gauge("dedupd_url_filter_rebuilding", "1 while the URL Bloom front is rebuilt.",
          st.rebuilding ? 1 : 0);
    gauge("dedupd_url_filter_urls", "URLs in the URL Bloom front.", static_cast<double>(st.keys));
    gauge("dedupd_url_filter_design_urls", "Design size of the URL Bloom front, in URLs.",
          static_cast<double>(st.design_keys));
    gauge("dedupd_url_filter_segments",
          "Segments of the URL Bloom front (one more each time it fills).",
          static_cast<double>(st.segments));
    gauge("dedupd_url_filter_memory_bytes", "Bytes of the URL Bloom front's filters.",
          static_cast<double>(st.memory_bytes));
    gauge("dedupd_url_filter_estimated_false_positive_ratio",
          "Estimated share of new URLs the front cannot rule out.",
          st.estimated_false_positive_rate);
    counter("dedupd_url_filter_store_reads_skipped_total",
            "URL lookups answered 'never stored' by the front without a store read.",
            static_cast<double>(st.keys_skipped));
    counter("dedupd_url_filter_store_reads_total", "URL lookups that read the store.",
            static_cast<double>(st.keys_read));
    counter("dedupd_url_filter_rebuilds_total",
            "URL Bloom front rebuilds finished by this process.", static_cast<double>(st.rebuilds));
  }
  return out;
}

// The store's figures, from RocksDbStore::Stats(exact=false): RocksDB
// properties, range estimates and in-memory index sizes, no record read.
void AppendStoreStats(const StoreStats& st, std::vector<MetricSample>* out) {
  auto gauge = [out](const char* name, const char* help, double v,
                     std::vector<std::pair<std::string, std::string>> labels = {}) {
    out->emplace_back(name, help, MetricKind::kGauge, v, std::move(labels));
  };
  const char* records_help =
      "Records in the store by kind: url is RocksDB's estimate (exact until a "
      "Forget's deletion is flushed apart from its record), content and "
      "chunk_text are the near-duplicate indexes' exact sizes.";
  gauge("dedupd_store_records", records_help, static_cast<double>(st.estimated_url_records),
        {{"kind", "url"}});
  gauge("dedupd_store_records", records_help, static_cast<double>(st.content_fingerprints_indexed),
        {{"kind", "content"}});
  gauge("dedupd_store_records", records_help, static_cast<double>(st.chunk_fingerprints_indexed),
        {{"kind", "chunk_text"}});
  for (const StoreStats::RecordKind& kind : st.kinds) {
    gauge("dedupd_store_kind_bytes",
          "RocksDB's estimate of the bytes of each record kind's key range "
          "(table files and memtables).",
          static_cast<double>(kind.estimated_bytes), {{"kind", kind.name}});
  }
  gauge("dedupd_store_disk_bytes", "Bytes of the store on disk: live table files and WAL.",
        static_cast<double>(st.disk_bytes));
  gauge("dedupd_store_live_sst_bytes", "Bytes of the store's live table files.",
        static_cast<double>(st.live_sst_bytes));
  gauge("dedupd_store_wal_bytes", "Bytes of the store's write-ahead log files.",
        static_cast<double>(st.wal_bytes));
  gauge("dedupd_store_write_stopped",
        "1 while RocksDB stops writes (too many L0 files or pending compaction).",
        st.write_stopped ? 1 : 0);
  gauge("dedupd_store_delayed_write_rate_bytes_per_second",
        "RocksDB's write rate limit while it delays writes; 0 when not delayed.",
        static_cast<double>(st.actual_delayed_write_rate));
  gauge("dedupd_store_pending_compaction_bytes",
        "RocksDB's estimate of the bytes compaction must rewrite to settle.",
        static_cast<double>(st.estimate_pending_compaction_bytes));
  gauge("dedupd_store_running_compactions", "RocksDB compactions running.",
        static_cast<double>(st.num_running_compactions));
  gauge("dedupd_store_running_flushes", "RocksDB memtable flushes running.",
        static_cast<double>(st.num_running_flushes));
  gauge("dedupd_store_memtable_bytes", "Bytes of all RocksDB memtables.",
        static_cast<double>(st.cur_size_all_mem_tables));
  gauge("dedupd_store_block_cache_usage_bytes", "Bytes in RocksDB's block cache.",
        static_cast<double>(st.block_cache_usage));
  gauge("dedupd_store_block_cache_capacity_bytes", "Capacity of RocksDB's block cache.",
        static_cast<double>(st.block_cache_capacity));
}

// The cluster router's figures: per node counters and the slot map.
std::vector<MetricSample> RedisSamples(const redis::ClusterRouter& router) {
  std::vector<MetricSample> out;
  out.emplace_back("dedupd_redis_slot_map_complete",
                   "1 when the Redis Cluster slot map names a master for every slot "
                   "(health is NOT_SERVING otherwise).",
                   MetricKind::kGauge, router.SlotMapComplete() ? 1 : 0);
  for (const redis::NodeStats& node : router.Stats()) {
    auto counter = [&out, &node](const char* name, const char* help, uint64_t v) {
      out.emplace_back(name, help, MetricKind::kCounter, static_cast<double>(v),
                       std::vector<std::pair<std::string, std::string>>{{"node", node.node}});
    };
    counter("dedupd_redis_commands_total",
            "Commands written to each Redis node (ASKING and WAIT included).", node.commands_sent);
    counter("dedupd_redis_errors_total",
            "Failed connects and broken connections to each Redis node.", node.errors);
    counter("dedupd_redis_redirects_total", "MOVED and ASK replies from each Redis node.",
            node.redirects);
    counter("dedupd_redis_reconnects_total",
            "Connections to each Redis node opened after the first one.", node.reconnects);
  }
  return out;
}

// Everything /metrics reads from the stores at each scrape; nothing until
// the stores are open (the endpoint answers during startup too).
std::vector<MetricSample> StoreSamples(const DedupServer::Impl& impl) {
  if (!impl.store_open.load(std::memory_order_acquire)) return {};
  if (impl.redis != nullptr) return RedisSamples(impl.redis->router());
  std::vector<MetricSample> out = UrlTierSamples(impl);
  const absl::Status writes = impl.store->write_status();
  out.emplace_back("dedupd_store_writes_refused",
                   "1 while the store refuses every write after a background error "
                   "(RESOURCE_EXHAUSTED: the disk is full; UNAVAILABLE: another I/O "
                   "error); claims fail, peeks are answered. 0 again once writes resume.",
                   MetricKind::kGauge, writes.ok() ? 0 : 1);
  absl::StatusOr<StoreStats> stats = impl.store->Stats(/*exact=*/false);
  if (stats.ok()) {
    AppendStoreStats(*stats, &out);
  } else {
    Log(LogLevel::kWarning, absl::StrCat("metrics: store figures left out of this scrape: ",
                                         stats.status().ToString()));
  }
  return out;
}

// SetServing sets the health of the main and the health-only server.
// Both names ("" and dedupd.v1.Dedup) follow the same state on both.
// The all-services call first: it changes every name already registered
// under one lock, so a client that sees one name change (a Watch) and
// then checks the other sees the new state too. Setting the named service
// alone first left a window (a Check of "" still SERVING after the Watch
// of dedupd.v1.Dedup said NOT_SERVING; seen once under ASan). The named
// call then registers the name at the first SetServing.
void SetServing(DedupServer::Impl& impl, bool serving) {
  for (grpc::Server* server : {impl.server.get(), impl.health_server.get()}) {
    if (server == nullptr) continue;
    grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
    health->SetServingStatus(serving);
    health->SetServingStatus(v1::Dedup::service_full_name(), serving);
  }
}

// AddConnectionLimits: the limits against hostile or broken clients that
// both listeners get (each measured in tests/e2e_hostile_test.cc).
void AddConnectionLimits(const ServerOptions& options, grpc::ServerBuilder* builder) {
  // Streams per connection: gRPC's default is unlimited, so one connection
  // could put any number of calls in the server at once.
  builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options.max_concurrent_streams);
  // A connection without calls is closed after a while: one a client keeps
  // open after a frame the server ignored would otherwise hold its
  // descriptor forever.
  builder->AddChannelArgument(
      GRPC_ARG_MAX_CONNECTION_IDLE_MS,
      static_cast<int>(std::clamp<int64_t>(absl::ToInt64Milliseconds(options.max_connection_idle),
                                           1, INT32_MAX)));
  // A connection that never completes its preface and SETTINGS (slowloris)
  // is closed after the handshake timeout; gRPC's default of 120 s lets a
  // client hold many descriptors for two minutes each.
  builder->AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      static_cast<int>(
          std::clamp<int64_t>(absl::ToInt64Milliseconds(options.handshake_timeout), 1, INT32_MAX)));
}

// The health listener's own message limit and memory quota: health
// requests are a service name, so a client gets nowhere near these, and a
// flood on the health port cannot take the main listener's quota.
constexpr int kHealthMaxMessageBytes = 64 << 10;
constexpr size_t kHealthMemoryQuotaBytes = size_t{16} << 20;

// StartHealthServer serves grpc.health.v1 alone, in plaintext, on `listen`.
absl::StatusOr<std::unique_ptr<grpc::Server>> StartHealthServer(const ServerOptions& options,
                                                                int* port) {
  const std::string& listen = options.health_listen;
  std::string host;
  int requested = 0;
  absl::Status parsed = SplitHostPort(listen, &host, &requested);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--health_listen=", listen, ": want host:port (e.g. 0.0.0.0:8081, 127.0.0.1:0)"));
  }
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), port);
  builder.SetMaxReceiveMessageSize(kHealthMaxMessageBytes);
  builder.SetMaxSendMessageSize(kHealthMaxMessageBytes);
  AddConnectionLimits(options, &builder);
  grpc::ResourceQuota quota("dedupd health listener");
  quota.Resize(kHealthMemoryQuotaBytes);
  builder.SetResourceQuota(quota);
  // The reflection plugin is process-wide, so this builder adds reflection
  // too: the interceptor answers every method but health UNIMPLEMENTED.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  interceptors.push_back(MakeHealthOnlyInterceptorFactory());
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || *port == 0) {
    return absl::UnavailableError(
        absl::StrCat("--health_listen=", listen,
                     ": could not bind (address in use, or not an address of this host)"));
  }
  return server;
}

// MakeEngineOptions: the engine's options from the server's.
EngineOptions MakeEngineOptions(const DedupServer::Impl& impl) {
  const ServerOptions& options = impl.options;
  EngineOptions engine_options;
  engine_options.max_batch_items = options.max_batch_items;
  engine_options.max_text_bytes = options.max_text_bytes;
  engine_options.default_max_hamming_distance = std::min(3, options.simhash_max_distance);
  engine_options.content_limits.max_aliases = options.max_aliases_returned;
  engine_options.content_limits.max_near_matches = options.max_near_matches;
  engine_options.content_min_jaccard = options.content_min_jaccard;
  engine_options.chunk_min_jaccard = options.chunk_min_jaccard;
  engine_options.min_jaccard_floor = options.min_jaccard_floor;
  engine_options.claim_id_retention = options.claim_id_retention;
  engine_options.revisit_policy = impl.revisit_policy;
  return engine_options;
}

// RunRedisReadiness: every second, reads the slot map again and turns
// health NOT_SERVING while it is incomplete (or no node answers), SERVING
// again once it is whole; until impl->stop_readiness. A map refresh is one
// CLUSTER SLOTS to one node, so a second is cheap.
// `serving`: the health state OpenRedisStore set.
void RunRedisReadiness(DedupServer::Impl* impl, bool serving) {
  constexpr absl::Duration kReadinessInterval = absl::Seconds(1);
  redis::ClusterRouter& router = impl->redis->router();
  while (!impl->stop_readiness.WaitForNotificationWithTimeout(kReadinessInterval)) {
    const absl::Status refreshed = router.RefreshSlotMap();
    const bool complete = refreshed.ok() && router.SlotMapComplete();
    if (complete == serving) continue;
    serving = complete;
    SetServing(*impl, serving);
    Log(serving ? LogLevel::kInfo : LogLevel::kWarning,
        serving ? std::string("Redis Cluster slot map complete again: health SERVING")
                : absl::StrCat(
                      "Redis Cluster slot map incomplete (",
                      refreshed.ok() ? "a slot has no master" : std::string(refreshed.message()),
                      "): health NOT_SERVING"));
  }
}

// OpenRedisStore is OpenStore for --store=redis_cluster: a RedisUrlStore,
// a RedisContentStore and a RedisChunkStore behind the same engine, no
// RocksDB, no data directory. The admin calls but Stats and Forget answer
// UNIMPLEMENTED.
absl::Status OpenRedisStore(DedupServer::Impl* impl) {
  const ServerOptions& options = impl->options;
  RedisUrlStoreOptions store_options;
  store_options.router.seeds = options.redis_nodes;
  store_options.router.user = options.redis_user;
  store_options.router.password = options.redis_password;
  store_options.router.tls.enabled = options.redis_tls;
  store_options.router.tls.ca_pem = options.redis_tls_ca_pem;
  store_options.router.tls.cert_pem = options.redis_tls_cert_pem;
  store_options.router.tls.key_pem = options.redis_tls_key_pem;
  store_options.router.tls.server_name = options.redis_tls_server_name;
  store_options.key_prefix = options.redis_key_prefix;
  store_options.min_replicas_acked = options.redis_min_replicas_acked;
  store_options.replica_ack_timeout = options.redis_replica_ack_timeout;
  // The content layer's bucket sets and fingerprints depend on these: the
  // meta record holds them, so front ends that disagree refuse to open.
  store_options.meta.simhash_max_distance = options.simhash_max_distance;
  store_options.meta.shingle_words = options.simhash_shingle_words;
  const std::string seeds = absl::StrJoin(options.redis_nodes, ",");
  // A cluster that does not answer yet (front ends often start before it
  // in a fresh deployment) is tried again, health NOT_SERVING meanwhile;
  // any other error (AUTH, another format) will not heal by waiting.
  const absl::Time give_up = absl::Now() + DedupServer::kRedisOpenRetryWindow;
  for (;;) {
    absl::StatusOr<std::unique_ptr<RedisUrlStore>> opened = RedisUrlStore::Open(store_options);
    if (opened.ok()) {
      impl->redis = *std::move(opened);
      break;
    }
    const absl::Status& s = opened.status();
    if (!absl::IsUnavailable(s) || absl::Now() >= give_up) {
      return absl::Status(s.code(),
                          absl::StrCat("open Redis Cluster at ", seeds, ": ", s.message()));
    }
    Log(LogLevel::kWarning, absl::StrCat("Redis Cluster at ", seeds, " not reachable yet (",
                                         s.message(), "); trying again in 1s"));
    absl::SleepFor(absl::Seconds(1));
  }
  Log(LogLevel::kInfo,
      absl::StrCat("Redis Cluster store at ", seeds, ", key prefix ", options.redis_key_prefix,
                   ", ", impl->redis->router().Stats().size(), " nodes, WAIT for ",
                   options.redis_min_replicas_acked, " replicas; slot map ",
                   impl->redis->router().SlotMapComplete() ? "complete" : "INCOMPLETE"));
  impl->redis_content = RedisContentStore::Open(impl->redis.get());
  RedisChunkStoreOptions chunk_options;
  chunk_options.lease = options.redis_chunk_lease;
  impl->redis_chunks = RedisChunkStore::Open(impl->redis.get(), chunk_options);
  impl->store_open.store(true, std::memory_order_release);
  SimHashOptions simhash_options;
  simhash_options.shingle_words = options.simhash_shingle_words;
  impl->hasher = std::make_unique<SimHasher>(simhash_options);
  impl->engine = std::make_unique<Engine>(impl->normalizer.get(), impl->redis.get(),
                                          impl->hasher.get(), impl->redis_content.get(),
                                          impl->redis_chunks.get(), MakeEngineOptions(*impl));
  impl->service->SetEngine(impl->engine.get());
  impl->admin = std::make_unique<AdminOps>(impl->redis.get(), impl->redis_content.get(),
                                           impl->normalizer.get(), impl->started);
  impl->admin_service->SetOps(impl->admin.get());
  const bool complete = impl->redis->router().SlotMapComplete();
  SetServing(*impl, complete);
  impl->readiness = std::thread(RunRedisReadiness, impl, complete);
  return absl::OkStatus();
}

}  // namespace

DedupServer::DedupServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DedupServer::~DedupServer() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<DedupServer>> DedupServer::Listen(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  int requested_port = 0;
  DEDUPD_RETURN_IF_ERROR(SplitHostPort(options.listen, &impl->host, &requested_port));
  // TLS files are checked before the store opens: a bad file fails fast.
  DEDUPD_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                          MakeServerCredentials({options.tls_cert_file, options.tls_key_file,
                                                 options.tls_client_ca_file}));
  if (!options.auth_token.empty() || !options.admin_token.empty()) {
    impl->authorizer = std::make_shared<CallAuthorizer>(options.auth_token, options.admin_token);
  }
  Log(LogLevel::kInfo,
      absl::StrCat("gRPC port: ",
                   options.tls_cert_file.empty() ? "plaintext"
                   : options.tls_client_ca_file.empty()
                       ? "TLS"
                       : "mutual TLS (client certificates required)",
                   options.auth_token.empty() ? ", no token" : ", bearer token required",
                   options.admin_token.empty() ? "" : ", admin token for /dedupd.v1.Admin/"));

  DEDUPD_ASSIGN_OR_RETURN(DedupConfig config, LoadConfigFile(options.config_path));
  impl->normalizer = std::make_unique<UrlNormalizer>(std::move(config.url_policy));
  if (!config.revisit_policy.empty() &&
      options.url_seen_mode == ServerOptions::UrlSeenMode::kApproximate) {
    return absl::InvalidArgumentError(absl::StrCat(
        options.config_path,
        ": revisit_rules need --url_seen_mode=exact (the approximate mode keeps no claim times)"));
  }
  impl->revisit_policy = std::move(config.revisit_policy);

  // Every service this server hosts: their methods are the metrics' method
  // labels (anything else is "other"). dedupd.v1.Admin is listed ahead of
  // its arrival; a name not linked in is skipped.
  std::vector<std::string> methods =
      RpcObserver::MethodsOf({v1::Dedup::service_full_name(), "dedupd.v1.Admin"});
  if (!options.metrics_listen.empty()) {
    impl->server_metrics = std::make_unique<ServerMetrics>(methods);
  }
  impl->observer = std::make_unique<RpcObserver>(std::move(methods), impl->server_metrics.get());
  impl->workers = std::make_unique<WorkerPool>(options.worker_threads);
  impl->service = std::make_unique<DedupService>(
      /*engine=*/nullptr, options.max_concurrent_rpcs, impl->workers.get(),
      impl->server_metrics.get());
  // Admin calls share the worker pool: at most one fewer than its threads
  // (and at most kMaxConcurrentAdminRpcs), so long Backups, Forgets or
  // exact Stats never take every worker from the Dedup calls.
  const size_t admin_limit = std::clamp<size_t>(
      static_cast<size_t>(std::max(options.worker_threads, 1)) - 1, 1, kMaxConcurrentAdminRpcs);
  impl->admin_service =
      std::make_unique<AdminService>(/*ops=*/nullptr, impl->workers.get(), admin_limit);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, credentials, &impl->port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  AddConnectionLimits(options, &builder);
  // gRPC 1.51 refuses a message over max_message_bytes only once all of it
  // is buffered (grpc/grpc#43012); its memory quota is what cuts off a
  // client streaming a 4 GiB message.
  if (options.grpc_memory_quota_bytes > 0) {
    grpc::ResourceQuota quota;
    quota.Resize(options.grpc_memory_quota_bytes);
    builder.SetResourceQuota(quota);
  }
  builder.RegisterService(impl->service.get());
  builder.RegisterService(impl->admin_service.get());
  // The observer first, so that it also counts the calls the token check
  // rejects; the token check covers every service (Dedup, health exempt,
  // reflection, Admin): see server/auth.cc for why an interceptor.
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors =
      impl->observer->Factories();
  if (impl->authorizer != nullptr) {
    interceptors.push_back(MakeAuthInterceptorFactory(impl->authorizer));
    impl->service->set_authorizer(impl->authorizer.get());
    impl->admin_service->set_authorizer(impl->authorizer.get());
  }
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    impl->server.reset();
    return absl::UnavailableError(
        absl::StrCat("listen on ", options.listen,
                     ": could not bind (address in use, or not an address of this host)"));
  }
  // The default health service starts SERVING; the store is not open yet.
  // (No address has been announced before this line.)
  SetServing(*impl, false);
  if (!options.metrics_listen.empty()) {
    const DedupServer::Impl* raw = impl.get();
    absl::StatusOr<std::unique_ptr<MetricsExporter>> metrics = MetricsExporter::Start(
        options.metrics_listen, impl->server_metrics.get(), [raw] { return StoreSamples(*raw); });
    if (!metrics.ok()) {
      DedupServer failed(std::move(impl));
      failed.Shutdown(absl::ZeroDuration());
      return metrics.status();
    }
    impl->metrics = *std::move(metrics);
    const size_t colon = options.metrics_listen.rfind(':');
    Log(LogLevel::kInfo, absl::StrCat("metrics on ", options.metrics_listen.substr(0, colon), ":",
                                      impl->metrics->port()));
  }
  if (!options.health_listen.empty()) {
    absl::StatusOr<std::unique_ptr<grpc::Server>> health_server =
        StartHealthServer(options, &impl->health_port);
    if (!health_server.ok()) {
      DedupServer failed(std::move(impl));
      failed.Shutdown(absl::ZeroDuration());
      return health_server.status();
    }
    impl->health_server = *std::move(health_server);
    SetServing(*impl, false);
    const size_t colon = options.health_listen.rfind(':');
    Log(LogLevel::kInfo,
        absl::StrCat("health on ", options.health_listen.substr(0, colon), ":", impl->health_port));
  }
  return std::unique_ptr<DedupServer>(new DedupServer(std::move(impl)));
}

absl::Status DedupServer::OpenStore() {
  Impl* impl = impl_.get();
  const ServerOptions& options = impl->options;
  if (options.store == ServerOptions::StoreKind::kRedisCluster) return OpenRedisStore(impl);
  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("create data directory ", options.data_dir, ": ", ec.message()));
  }
  RocksDbStoreOptions store_options;
  store_options.path = options.data_dir;
  store_options.sync_writes = options.sync_writes;
  store_options.block_cache_bytes = options.block_cache_bytes;
  store_options.write_buffer_bytes = options.write_buffer_bytes;
  store_options.url_memtable = options.url_memtable;
  store_options.url_compaction = options.url_compaction;
  store_options.content_compaction = options.content_compaction;
  store_options.normalizer_version = UrlNormalizer::kVersion;
  store_options.simhash_shingle_words = static_cast<uint32_t>(options.simhash_shingle_words);
  store_options.simhash_max_distance = options.simhash_max_distance;
  store_options.simhash_index_blocks = options.simhash_index_blocks;
  const bool approximate = options.url_seen_mode == ServerOptions::UrlSeenMode::kApproximate;
  // In approximate mode no URL record is read for CheckUrl: no front.
  store_options.url_filter.enabled = options.url_filter && !approximate;
  store_options.url_filter.expected_urls = options.url_filter_expected_urls;
  store_options.url_filter.false_positive_rate = options.url_filter_false_positive_rate;
  store_options.url_filter.memory_budget_bytes = options.url_filter_memory_bytes;
  DEDUPD_ASSIGN_OR_RETURN(impl->store, RocksDbStore::Open(store_options));
  UrlStore* url_store = impl->store.get();
  if (approximate) {
    BloomUrlStoreOptions bloom;
    bloom.path = (std::filesystem::path(options.data_dir) / "url-bloom").string();
    bloom.expected_urls = options.url_filter_expected_urls;
    bloom.false_positive_rate = options.url_filter_false_positive_rate;
    bloom.memory_budget_bytes = options.url_filter_memory_bytes;
    bloom.sync_writes = options.sync_writes;
    bloom.snapshot_every_keys = options.url_snapshot_every_urls;
    bloom.snapshot_interval = options.url_snapshot_interval;
    absl::StatusOr<std::unique_ptr<BloomUrlStore>> opened = BloomUrlStore::Open(bloom);
    if (!opened.ok()) {
      absl::Status closed = impl->store->Close();
      closed.IgnoreError();  // why: the open error is the one to report
      impl->store.reset();
      return opened.status();
    }
    impl->url_bloom = *std::move(opened);
    url_store = impl->url_bloom.get();
    const BloomUrlStore::Stats st = impl->url_bloom->stats();
    Log(LogLevel::kInfo,
        absl::StrCat("approximate URL seen-set at ", bloom.path, ": ", st.inserted_urls,
                     " URLs of a design capacity of ", st.capacity_urls, ", ", st.memory_bytes,
                     " bytes, estimated "
                     "false positive rate ",
                     st.estimated_false_positive_rate, ", loaded in ",
                     absl::FormatDuration(st.last_open_time)));
  } else {
    Log(LogLevel::kInfo, absl::StrCat("URL filter: ", impl->store->url_filter_stats().load_result));
  }
  impl->store_open.store(true, std::memory_order_release);
  SimHashOptions simhash_options;
  simhash_options.shingle_words = options.simhash_shingle_words;
  impl->hasher = std::make_unique<SimHasher>(simhash_options);

  impl->engine =
      std::make_unique<Engine>(impl->normalizer.get(), url_store, impl->hasher.get(),
                               impl->store.get(), impl->store.get(), MakeEngineOptions(*impl));
  impl->service->SetEngine(impl->engine.get());
  impl->admin = std::make_unique<AdminOps>(impl->store.get(), impl->url_bloom.get(),
                                           impl->normalizer.get(), impl->started);
  impl->admin_service->SetOps(impl->admin.get());
  SetServing(*impl, true);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DedupServer>> DedupServer::Start(const ServerOptions& options) {
  DEDUPD_ASSIGN_OR_RETURN(std::unique_ptr<DedupServer> server, Listen(options));
  DEDUPD_RETURN_IF_ERROR(server->OpenStore());
  return server;
}

int DedupServer::port() const { return impl_->port; }

int DedupServer::health_port() const { return impl_->health_port; }

std::string DedupServer::address() const { return absl::StrCat(impl_->host, ":", impl_->port); }

void DedupServer::Shutdown(absl::Duration drain) {
  if (impl_ == nullptr || impl_->shut_down) return;
  impl_->shut_down = true;
  // The readiness thread first: it must not turn health SERVING again.
  if (impl_->readiness.joinable()) {
    impl_->stop_readiness.Notify();
    impl_->readiness.join();
  }
  if (impl_->server != nullptr) {
    // NOT_SERVING first (both names), while calls are still accepted, so
    // probes and load balancers see it before the port closes.
    SetServing(*impl_, false);
    if (impl_->options.shutdown_delay > absl::ZeroDuration()) {
      Log(LogLevel::kInfo, absl::StrCat("health NOT_SERVING; still serving for ",
                                        absl::FormatDuration(impl_->options.shutdown_delay),
                                        " (--shutdown_delay) before draining"));
      absl::SleepFor(impl_->options.shutdown_delay);
    }
    // Server::Shutdown stops accepting calls and waits for those in flight
    // until the deadline, then cancels them. It would also wait for the
    // open-ended streams (a health Watch lasts as long as its client
    // wants), so once every other call is done they are cancelled: the
    // drain ends when the work does, not at the deadline.
    //
    // Not at once, though: a call counts as done when its status is handed
    // to the transport, and cancelling disconnects every connection, which
    // can drop a response not yet written (the client saw "Connection reset
    // by peer" for a call that had finished). Without an open-ended stream
    // Shutdown returns by itself right after the last call, with a graceful
    // GOAWAY; only if open-ended streams are in flight and it is still
    // waiting after kOpenStreamGrace are they cancelled (without streams a
    // slow machine can take longer than the grace to finish writing, and
    // cancelling then reset a finished call: E2eHealthTest.
    // ACallInFlightFinishesDuringTheDrain under a loaded ctest -j2).
    constexpr absl::Duration kOpenStreamGrace = absl::Milliseconds(500);
    const absl::Time deadline = absl::Now() + drain;
    grpc::Server* server = impl_->server.get();
    absl::Notification stopped;
    std::thread stopper([server, deadline, &stopped] {
      server->Shutdown(absl::ToChronoTime(deadline));
      stopped.Notify();
    });
    if (impl_->observer->WaitForCalls(deadline) && impl_->observer->OpenStreams() > 0 &&
        !stopped.WaitForNotificationWithDeadline(
            std::min(deadline, absl::Now() + kOpenStreamGrace))) {
      grpc_server_cancel_all_calls(server->c_server());
    }
    stopper.join();
    impl_->server->Wait();
    impl_->server.reset();
  }
  if (impl_->health_server != nullptr) {
    // After the main port: probes see NOT_SERVING while calls drain.
    impl_->health_server->Shutdown(std::chrono::system_clock::now());
    impl_->health_server->Wait();
    impl_->health_server.reset();
  }
  if (impl_->workers != nullptr) impl_->workers->Stop();
  impl_->metrics.reset();  // no scrape may read a closing store
  impl_->service.reset();
  impl_->admin_service.reset();
  impl_->admin.reset();
  impl_->engine.reset();
  // Closing the stores last: no call can touch them any more.
  if (impl_->url_bloom != nullptr) {
    const BloomUrlStore::Stats st = impl_->url_bloom->stats();
    Log(LogLevel::kInfo,
        absl::StrCat("approximate URL seen-set: ", st.inserted_urls,
                     " URLs of a design capacity of ", st.capacity_urls,
                     ", estimated false positive rate ", st.estimated_false_positive_rate,
                     "; writing its final snapshot"));
    absl::Status bloom_closed = impl_->url_bloom->Close();
    if (!bloom_closed.ok()) {
      Log(LogLevel::kError,
          absl::StrCat("close approximate URL seen-set: ", bloom_closed.message()));
    }
    impl_->url_bloom.reset();
  }
  impl_->redis_content.reset();
  impl_->redis.reset();
  if (impl_->store == nullptr) return;  // never opened
  absl::Status closed = impl_->store->Close();
  if (!closed.ok()) {
    Log(LogLevel::kError, absl::StrCat("close store: ", closed.message()));
  }
  impl_->store.reset();
}

}  // namespace dedupd
