#include "server/server.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/url_normalizer.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/admin.h"
#include "server/admin_service.h"
#include "server/config.h"
#include "server/engine.h"
#include "server/log.h"
#include "server/service.h"
#include "server/worker_pool.h"
#include "server/metrics.h"
#include "storage/bloom_url_store.h"
#include "storage/rocksdb_store.h"

namespace dedupd {

struct DedupServer::Impl {
  std::string host;
  int port = 0;
  std::unique_ptr<UrlNormalizer> normalizer;
  std::unique_ptr<SimHasher> hasher;
  std::unique_ptr<RocksDbStore> store;
  // The approximate mode's seen-set; null in exact mode.
  std::unique_ptr<BloomUrlStore> url_bloom;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<WorkerPool> workers;
  std::unique_ptr<DedupService> service;
  // dedupd.v1.Admin (Stats, Backup, Export).
  std::unique_ptr<AdminOps> admin;
  std::unique_ptr<AdminService> admin_service;
  std::unique_ptr<grpc::Server> server;
  // The /metrics endpoint; null when --metrics_listen is empty. Destroyed
  // before the stores it reads.
  std::unique_ptr<MetricsExporter> metrics;
  bool shut_down = false;
};

namespace {

// SplitHostPort splits "host:port" and "[v6]:port"; the host keeps its
// brackets. InvalidArgument when there is no numeric port.
absl::Status SplitHostPort(const std::string& listen, std::string* host,
                           int* port) {
  const size_t colon = listen.rfind(':');
  int p = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &p) || p < 0 || p > 65535 ||
      (listen[0] == '[' && listen[colon - 1] != ']')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", listen,
        ": want host:port (e.g. 127.0.0.1:50051, [::1]:0, 0.0.0.0:50051)"));
  }
  *host = listen.substr(0, colon);
  *port = p;
  return absl::OkStatus();
}

// The URL tier's figures, read from the stores at each scrape.
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
    gauge("dedupd_url_filter_urls", "URLs in the URL Bloom front.",
          static_cast<double>(st.keys));
    gauge("dedupd_url_filter_design_urls", "Design size of the URL Bloom front, in URLs.",
          static_cast<double>(st.design_keys));
    gauge("dedupd_url_filter_memory_bytes", "Bytes of the URL Bloom front's filters.",
          static_cast<double>(st.memory_bytes));
    gauge("dedupd_url_filter_estimated_false_positive_ratio",
          "Estimated share of new URLs the front cannot rule out.",
          st.estimated_false_positive_rate);
    counter("dedupd_url_filter_store_reads_skipped_total",
            "URL lookups answered 'never stored' by the front without a store read.",
            static_cast<double>(st.keys_skipped));
    counter("dedupd_url_filter_store_reads_total",
            "URL lookups that read the store.", static_cast<double>(st.keys_read));
    counter("dedupd_url_filter_rebuilds_total",
            "URL Bloom front rebuilds finished by this process.",
            static_cast<double>(st.rebuilds));
  }
  return out;
}

}  // namespace

DedupServer::DedupServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DedupServer::~DedupServer() { Shutdown(absl::ZeroDuration()); }

absl::StatusOr<std::unique_ptr<DedupServer>> DedupServer::Start(
    const ServerOptions& options) {
  const absl::Time started = absl::Now();
  auto impl = std::make_unique<Impl>();
  int requested_port = 0;
  DEDUPD_RETURN_IF_ERROR(SplitHostPort(options.listen, &impl->host, &requested_port));

  DEDUPD_ASSIGN_OR_RETURN(DedupConfig config, LoadConfigFile(options.config_path));
  impl->normalizer = std::make_unique<UrlNormalizer>(std::move(config.url_policy));

  std::error_code ec;
  std::filesystem::create_directories(options.data_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "create data directory ", options.data_dir, ": ", ec.message()));
  }
  RocksDbStoreOptions store_options;
  store_options.path = options.data_dir;
  store_options.sync_writes = options.sync_writes;
  store_options.block_cache_bytes = options.block_cache_bytes;
  store_options.normalizer_version = UrlNormalizer::kVersion;
  store_options.simhash_shingle_words =
      static_cast<uint32_t>(options.simhash_shingle_words);
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
      return opened.status();
    }
    impl->url_bloom = *std::move(opened);
    url_store = impl->url_bloom.get();
    const BloomUrlStore::Stats st = impl->url_bloom->stats();
    Log(LogLevel::kInfo,
        absl::StrCat("approximate URL seen-set at ", bloom.path, ": ",
                     st.inserted_urls, " URLs of a design capacity of ",
                     st.capacity_urls, ", ", st.memory_bytes, " bytes, estimated "
                     "false positive rate ", st.estimated_false_positive_rate,
                     ", loaded in ", absl::FormatDuration(st.last_open_time)));
  } else {
    Log(LogLevel::kInfo, absl::StrCat("URL filter: ",
                                      impl->store->url_filter_stats().load_result));
  }
  SimHashOptions simhash_options;
  simhash_options.shingle_words = options.simhash_shingle_words;
  impl->hasher = std::make_unique<SimHasher>(simhash_options);

  EngineOptions engine_options;
  engine_options.max_batch_items = options.max_batch_items;
  engine_options.max_text_bytes = options.max_text_bytes;
  engine_options.default_max_hamming_distance =
      std::min(3, options.simhash_max_distance);
  engine_options.content_limits.max_aliases = options.max_aliases_returned;
  engine_options.content_limits.max_near_matches = options.max_near_matches;
  impl->engine = std::make_unique<Engine>(
      impl->normalizer.get(), url_store, impl->hasher.get(),
      impl->store.get(), impl->store.get(), engine_options);
  impl->workers = std::make_unique<WorkerPool>(options.worker_threads);
  impl->service = std::make_unique<DedupService>(
      impl->engine.get(), options.max_concurrent_rpcs, impl->workers.get());

  impl->admin = std::make_unique<AdminOps>(impl->store.get(), impl->url_bloom.get(),
                                           started);
  impl->admin_service =
      std::make_unique<AdminService>(impl->admin.get(), impl->workers.get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, grpc::InsecureServerCredentials(),
                           &impl->port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  builder.RegisterService(impl->service.get());
  builder.RegisterService(impl->admin_service.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "listen on ", options.listen,
        ": could not bind (address in use, or not an address of this host)"));
  }
  if (!options.metrics_listen.empty()) {
    const DedupServer::Impl* raw = impl.get();
    absl::StatusOr<std::unique_ptr<MetricsExporter>> metrics = MetricsExporter::Start(
        options.metrics_listen, [raw] { return UrlTierSamples(*raw); });
    if (!metrics.ok()) return metrics.status();
    impl->metrics = *std::move(metrics);
    const size_t colon = options.metrics_listen.rfind(':');
    Log(LogLevel::kInfo, absl::StrCat("metrics on ", options.metrics_listen.substr(0, colon),
                                      ":", impl->metrics->port()));
  }
  impl->server->GetHealthCheckService()->SetServingStatus(true);
  return std::unique_ptr<DedupServer>(new DedupServer(std::move(impl)));
}

int DedupServer::port() const { return impl_->port; }

std::string DedupServer::address() const {
  return absl::StrCat(impl_->host, ":", impl_->port);
}

void DedupServer::Shutdown(absl::Duration drain) {
  if (impl_ == nullptr || impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->server->GetHealthCheckService()->SetServingStatus(false);
  // Shutdown waits for calls in flight until the deadline, then cancels them.
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          absl::ToChronoMilliseconds(drain));
  impl_->server->Wait();
  impl_->server.reset();
  impl_->workers->Stop();
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
                     ", estimated false positive rate ",
                     st.estimated_false_positive_rate, "; writing its final snapshot"));
    absl::Status bloom_closed = impl_->url_bloom->Close();
    if (!bloom_closed.ok()) {
      Log(LogLevel::kError,
          absl::StrCat("close approximate URL seen-set: ", bloom_closed.message()));
    }
    impl_->url_bloom.reset();
  }
  absl::Status closed = impl_->store->Close();
  if (!closed.ok()) {
    Log(LogLevel::kError, absl::StrCat("close store: ", closed.message()));
  }
  impl_->store.reset();
}

}  // namespace dedupd
