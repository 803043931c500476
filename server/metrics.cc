#include "server/metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <exception>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace dedupd {
namespace {

constexpr int kNumCodes = 17;  // grpc::StatusCode OK (0) .. UNAUTHENTICATED (16)

// Call latencies from 100 µs (a cached CheckUrl of a few URLs) to 10 s (a
// 10,000-item CheckContent batch on a cold store); slower lands in +Inf.
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
  return *b;
}

// Items per request, up to the default --max_batch_items (10,000).
const prometheus::Histogram::BucketBoundaries& BatchBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  return *b;
}

}  // namespace

struct ServerMetrics::Impl {
  // One method's series. The counter per code and the batch histogram are
  // created on first use (a family hands back the same series for the same
  // labels, so a race only costs a second lookup) and cached.
  struct Method {
    std::string label;
    prometheus::Histogram* duration = nullptr;
    std::array<std::atomic<prometheus::Counter*>, kNumCodes> requests{};
    std::atomic<prometheus::Histogram*> batch{nullptr};
  };

  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>* requests = nullptr;
  prometheus::Family<prometheus::Histogram>* duration = nullptr;
  prometheus::Family<prometheus::Histogram>* batch = nullptr;
  prometheus::Gauge* in_flight = nullptr;
  // Immutable after construction: lookups take no lock.
  absl::flat_hash_map<std::string, std::unique_ptr<Method>> methods;
  Method* other = nullptr;
  std::array<std::vector<prometheus::Counter*>, 5> verdicts;  // by Layer
  // dedupd_url_namespace_verdicts_total: counters by namespace label,
  // created on first use (at most kMaxNamespaceLabels + 1 labels).
  prometheus::Family<prometheus::Counter>* namespace_verdicts = nullptr;
  absl::Mutex namespace_mu;
  absl::flat_hash_map<std::string, std::vector<prometheus::Counter*>> by_namespace
      ABSL_GUARDED_BY(namespace_mu);

  Method* Find(absl::string_view method) const {
    auto it = methods.find(method);
    return it == methods.end() ? other : it->second.get();
  }
};

const std::vector<std::string>& ServerMetrics::VerdictLabels(Layer layer) {
  static const auto* url = new std::vector<std::string>{
      "new", "seen", "seen_probably", "invalid", "due", "reclaimed", "store_unavailable"};
  static const auto* complete =
      new std::vector<std::string>{"confirmed",  "already_confirmed", "not_claimed",
                                   "lease_lost", "invalid",           "store_unavailable"};
  static const auto* content =
      new std::vector<std::string>{"new", "exact_duplicate", "near_duplicate", "invalid"};
  static const auto* results =
      new std::vector<std::string>{"kept", "dropped_duplicate", "dropped_source_cap", "rejected"};
  switch (layer) {
    case Layer::kUrl:
      return *url;
    case Layer::kComplete:
      return *complete;
    case Layer::kContent:
    case Layer::kChunk:
      return *content;
    case Layer::kResults:
      break;
  }
  return *results;
}

absl::string_view ServerMetrics::CodeName(int grpc_code) {
  // clang-format off
  static constexpr std::array<const char*, kNumCodes> kNames = {
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
      "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  // clang-format on
  if (grpc_code < 0 || grpc_code >= kNumCodes) return kNames[2];
  return kNames[static_cast<size_t>(grpc_code)];
}

ServerMetrics::ServerMetrics(std::vector<std::string> methods) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.requests = &prometheus::BuildCounter()
                    .Name("dedupd_rpc_requests_total")
                    .Help("Finished RPCs by method and gRPC status code.")
                    .Register(*m.registry);
  m.duration = &prometheus::BuildHistogram()
                    .Name("dedupd_rpc_duration_seconds")
                    .Help(
                        "RPC latency at the server, from the call's arrival "
                        "to its status being sent, in seconds.")
                    .Register(*m.registry);
  m.batch = &prometheus::BuildHistogram()
                 .Name("dedupd_rpc_batch_items")
                 .Help("Items per request (URLs, documents, chunks or hits).")
                 .Register(*m.registry);
  m.in_flight = &prometheus::BuildGauge()
                     .Name("dedupd_rpc_in_flight")
                     .Help(
                         "Calls being served (health Watch and reflection "
                         "streams excepted); compare with --max_concurrent_rpcs.")
                     .Register(*m.registry)
                     .Add({});
  methods.push_back(kOtherMethod);
  for (std::string& name : methods) {
    if (m.methods.contains(name)) continue;
    auto method = std::make_unique<Impl::Method>();
    method->label = name;
    method->duration = &m.duration->Add({{"method", name}}, DurationBuckets());
    m.methods.emplace(std::move(name), std::move(method));
  }
  m.other = m.methods.find(kOtherMethod)->second.get();

  const struct {
    Layer layer;
    const char* name;
    const char* label;
    const char* help;
  } kLayers[] = {
      {Layer::kUrl, "dedupd_url_verdicts_total", "verdict",
       "CheckUrl answers by verdict (new excludes reclaimed)."},
      {Layer::kComplete, "dedupd_url_completions_total", "outcome",
       "CompleteUrls answers by outcome."},
      {Layer::kContent, "dedupd_content_verdicts_total", "verdict",
       "CheckContent answers by verdict."},
      {Layer::kChunk, "dedupd_chunk_verdicts_total", "verdict", "CheckChunks answers by verdict."},
      {Layer::kResults, "dedupd_results_hits_total", "outcome",
       "DedupResults hits by outcome (hits not examined are not counted)."},
  };
  m.namespace_verdicts =
      &prometheus::BuildCounter()
           .Name("dedupd_url_namespace_verdicts_total")
           .Help(
               "CheckUrl answers by namespace (the first 32 seen; later ones are \"(other)\", "
               "the empty one \"(empty)\") and verdict.")
           .Register(*m.registry);
  for (const auto& l : kLayers) {
    auto& family = prometheus::BuildCounter().Name(l.name).Help(l.help).Register(*m.registry);
    for (const std::string& value : VerdictLabels(l.layer)) {
      m.verdicts[static_cast<size_t>(l.layer)].push_back(&family.Add({{l.label, value}}));
    }
  }
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::RecordRpc(absl::string_view method, int grpc_code, double seconds) {
  Impl::Method* m = impl_->Find(method);
  if (grpc_code < 0 || grpc_code >= kNumCodes) grpc_code = 2;  // UNKNOWN
  std::atomic<prometheus::Counter*>& slot = m->requests[static_cast<size_t>(grpc_code)];
  prometheus::Counter* c = slot.load(std::memory_order_acquire);
  if (c == nullptr) {
    c = &impl_->requests->Add({{"method", m->label}, {"code", std::string(CodeName(grpc_code))}});
    slot.store(c, std::memory_order_release);
  }
  c->Increment();
  m->duration->Observe(seconds);
}

void ServerMetrics::CallStarted() { impl_->in_flight->Increment(); }

void ServerMetrics::CallEnded() { impl_->in_flight->Decrement(); }

void ServerMetrics::RecordBatchItems(absl::string_view method, size_t items) {
  Impl::Method* m = impl_->Find(method);
  prometheus::Histogram* h = m->batch.load(std::memory_order_acquire);
  if (h == nullptr) {
    h = &impl_->batch->Add({{"method", m->label}}, BatchBuckets());
    m->batch.store(h, std::memory_order_release);
  }
  h->Observe(static_cast<double>(items));
}

void ServerMetrics::AddNamespaceVerdicts(absl::string_view name_space,
                                         absl::Span<const uint64_t> counts) {
  Impl& m = *impl_;
  std::string label = name_space.empty() ? kEmptyNamespaceLabel : std::string(name_space);
  std::vector<prometheus::Counter*>* counters = nullptr;
  {
    absl::MutexLock lock(&m.namespace_mu);
    auto it = m.by_namespace.find(label);
    if (it == m.by_namespace.end() && m.by_namespace.size() >= kMaxNamespaceLabels) {
      label = kOtherNamespaceLabel;
      it = m.by_namespace.find(label);
    }
    if (it == m.by_namespace.end()) {
      std::vector<prometheus::Counter*> created;
      for (const std::string& verdict : VerdictLabels(Layer::kUrl)) {
        created.push_back(&m.namespace_verdicts->Add({{"namespace", label}, {"verdict", verdict}}));
      }
      it = m.by_namespace.emplace(label, std::move(created)).first;
    }
    counters = &it->second;  // node-stable: entries are never erased
  }
  for (size_t i = 0; i < counts.size() && i < counters->size(); ++i) {
    if (counts[i] > 0) (*counters)[i]->Increment(static_cast<double>(counts[i]));
  }
}

void ServerMetrics::AddVerdicts(Layer layer, absl::Span<const uint64_t> counts) {
  const std::vector<prometheus::Counter*>& counters = impl_->verdicts[static_cast<size_t>(layer)];
  for (size_t i = 0; i < counts.size() && i < counters.size(); ++i) {
    if (counts[i] > 0) counters[i]->Increment(static_cast<double>(counts[i]));
  }
}

// ---------------------------------------------------------------------------
// Process metrics.

std::vector<MetricSample> ProcessSamples() {
  std::vector<MetricSample> out;
  // /proc/self/stat: the fields after the command name (which may hold
  // spaces and parentheses, hence the last ')'), proc(5): state is field 3;
  // utime 14, stime 15, starttime 22 (clock ticks), vsize 23 (bytes),
  // rss 24 (pages).
  std::ifstream stat_file("/proc/self/stat");
  std::stringstream stat_text;
  stat_text << stat_file.rdbuf();
  const std::string stat = stat_text.str();
  const size_t paren = stat.rfind(')');
  const long ticks = sysconf(_SC_CLK_TCK);
  const long page = sysconf(_SC_PAGESIZE);
  if (paren != std::string::npos && ticks > 0 && page > 0) {
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::string_view(stat).substr(paren + 2), ' ', absl::SkipEmpty());
    // f[0] is field 3.
    auto field = [&f](int n, double* v) {
      const size_t i = static_cast<size_t>(n - 3);
      uint64_t u = 0;
      if (i >= f.size() || !absl::SimpleAtoi(f[i], &u)) return false;
      *v = static_cast<double>(u);
      return true;
    };
    double utime, stime, start, vsize, rss;
    if (field(14, &utime) && field(15, &stime)) {
      out.push_back({"process_cpu_seconds_total",
                     "Total user and system CPU time spent in seconds.", MetricKind::kCounter,
                     (utime + stime) / static_cast<double>(ticks)});
    }
    if (field(23, &vsize)) {
      out.push_back({"process_virtual_memory_bytes", "Virtual memory size in bytes.",
                     MetricKind::kGauge, vsize});
    }
    if (field(24, &rss)) {
      out.push_back({"process_resident_memory_bytes", "Resident memory size in bytes.",
                     MetricKind::kGauge, rss * static_cast<double>(page)});
    }
    // The start time is in ticks since boot; boot time (btime) is in
    // /proc/stat, in seconds since the epoch.
    std::ifstream proc_stat("/proc/stat");
    std::string line;
    const bool have_start = field(22, &start);
    while (have_start && std::getline(proc_stat, line)) {
      absl::string_view rest = line;
      uint64_t btime = 0;
      if (absl::ConsumePrefix(&rest, "btime ") && absl::SimpleAtoi(rest, &btime)) {
        out.push_back({"process_start_time_seconds",
                       "Start time of the process since unix epoch in seconds.", MetricKind::kGauge,
                       static_cast<double>(btime) + start / static_cast<double>(ticks)});
        break;
      }
    }
  }
  if (DIR* dir = opendir("/proc/self/fd")) {
    double fds = 0;
    while (const dirent* e = readdir(dir)) {
      if (e->d_name[0] != '.') ++fds;
    }
    closedir(dir);
    // Less the descriptor of the directory being read.
    out.push_back(
        {"process_open_fds", "Number of open file descriptors.", MetricKind::kGauge, fds - 1});
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back({"process_max_fds", "Maximum number of open file descriptors.",
                   MetricKind::kGauge,
                   limit.rlim_cur == RLIM_INFINITY ? 0 : static_cast<double>(limit.rlim_cur)});
  }
  return out;
}

namespace {

// Turns samples into metric families at each scrape: the process metrics,
// then what `sample` returns; samples of one name share a family.
class SampleCollectable final : public prometheus::Collectable {
 public:
  explicit SampleCollectable(MetricsExporter::SampleFn sample) : sample_(std::move(sample)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<MetricSample> samples = ProcessSamples();
    if (sample_) {
      std::vector<MetricSample> more = sample_();
      samples.insert(samples.end(), std::make_move_iterator(more.begin()),
                     std::make_move_iterator(more.end()));
    }
    std::vector<prometheus::MetricFamily> families;
    std::map<std::string, size_t> index;  // name -> position in families
    for (MetricSample& s : samples) {
      auto [it, inserted] = index.emplace(s.name, families.size());
      if (inserted) {
        prometheus::MetricFamily f;
        f.name = s.name;
        f.help = s.help;
        f.type = s.kind == MetricKind::kCounter ? prometheus::MetricType::Counter
                                                : prometheus::MetricType::Gauge;
        families.push_back(std::move(f));
      }
      prometheus::MetricFamily& f = families[it->second];
      prometheus::ClientMetric m;
      for (auto& [name, value] : s.labels) m.label.push_back({name, value});
      if (f.type == prometheus::MetricType::Counter) {
        m.counter.value = s.value;
      } else {
        m.gauge.value = s.value;
      }
      f.metric.push_back(std::move(m));
    }
    return families;
  }

 private:
  const MetricsExporter::SampleFn sample_;
};

}  // namespace

struct MetricsExporter::Impl {
  std::unique_ptr<prometheus::Exposer> exposer;
  std::shared_ptr<SampleCollectable> collectable;
  int port = 0;
};

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(const std::string& listen,
                                                                        ServerMetrics* metrics,
                                                                        SampleFn sample) {
  auto impl = std::make_unique<Impl>();
  // civetweb reports a failed bind by throwing (CivetException); it is
  // caught here, at the library boundary, and never crosses into our code.
  try {
    impl->exposer = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("metrics: listen on ", listen, ": ", e.what()));
  }
  const std::vector<int> ports = impl->exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(absl::StrCat("metrics: listen on ", listen, ": no port bound"));
  }
  impl->port = ports.front();
  impl->collectable = std::make_shared<SampleCollectable>(std::move(sample));
  impl->exposer->RegisterCollectable(impl->collectable);
  if (metrics != nullptr) impl->exposer->RegisterCollectable(metrics->impl_->registry);
  return std::unique_ptr<MetricsExporter>(new MetricsExporter(std::move(impl)));
}

MetricsExporter::MetricsExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsExporter::~MetricsExporter() = default;

int MetricsExporter::port() const { return impl_->port; }

}  // namespace dedupd
