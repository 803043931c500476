// metrics.h: the Prometheus side of dedupd. Only metrics.cc includes
// prometheus-cpp; the rest of the server talks to two classes:
//   - ServerMetrics: the counters and histograms the server updates as it
//     answers (per RPC method and status code, items per batch, verdicts per
//     layer). Cheap to update from any thread: the label sets are resolved
//     once and cached, and callers add a batch's tallies at once.
//   - MetricsExporter: the HTTP endpoint (`--metrics_listen`) serving
//     ServerMetrics, the process metrics (process_*, read from /proc/self at
//     each scrape) and plain samples a callback returns at each scrape (the
//     stores' figures: read when Prometheus asks, never cached).
// The names, types and labels are listed in docs/operations.md, "Metrics".
//
// Example:
//   ServerMetrics metrics({"dedupd.v1.Dedup/CheckUrl"});
//   MetricsExporter::SampleFn sample = [&] {
//     return std::vector<MetricSample>{
//         {"dedupd_url_filter_urls", "URLs in the filter", MetricKind::kGauge, 42}};
//   };
//   absl::StatusOr<std::unique_ptr<MetricsExporter>> e =
//       MetricsExporter::Start("127.0.0.1:0", &metrics, sample);
//   metrics.RecordRpc("dedupd.v1.Dedup/CheckUrl", /*grpc_code=*/0, 0.002);
//   // GET http://127.0.0.1:<(*e)->port()>/metrics
#ifndef DEDUPD_SERVER_METRICS_H_
#define DEDUPD_SERVER_METRICS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dedupd {

enum class MetricKind { kGauge, kCounter };

// One sample. Names follow Prometheus conventions (dedupd_ prefix, base
// units, _total on counters). Samples with the same name form one metric
// family (same help and kind; distinct label sets), e.g. a gauge of
// records per kind: {"dedupd_store_records", ..., {{"kind", "url"}}}.
struct MetricSample {
  MetricSample() = default;
  MetricSample(std::string name, std::string help, MetricKind kind, double value,
               std::vector<std::pair<std::string, std::string>> labels = {})
      : name(std::move(name)),
        help(std::move(help)),
        kind(kind),
        value(value),
        labels(std::move(labels)) {}

  std::string name;
  std::string help;
  MetricKind kind = MetricKind::kGauge;
  double value = 0;
  std::vector<std::pair<std::string, std::string>> labels;
};

// ServerMetrics: the server's own counters and histograms. Thread-safe.
class ServerMetrics {
 public:
  // The layers with verdict counters, and their label values, in order:
  //   kUrl:     dedupd_url_verdicts_total{verdict=new|seen|seen_probably|
  //             invalid|due|reclaimed|store_unavailable} (new: not
  //             reclaimed; invalid: not store_unavailable)
  //   kComplete: dedupd_url_completions_total{outcome=confirmed|
  //             already_confirmed|not_claimed|lease_lost|invalid|
  //             store_unavailable}
  //   kContent: dedupd_content_verdicts_total{verdict=new|exact_duplicate|
  //             near_duplicate|invalid}
  //   kChunk:   dedupd_chunk_verdicts_total{verdict=<as kContent>}
  //   kResults: dedupd_results_hits_total{outcome=kept|dropped_duplicate|
  //             dropped_source_cap|rejected}
  enum class Layer { kUrl, kContent, kChunk, kResults, kComplete };
  static const std::vector<std::string>& VerdictLabels(Layer layer);

  // The label a method outside `methods` is recorded under, so a client
  // calling made-up method names cannot grow the label set.
  static constexpr char kOtherMethod[] = "other";

  // `methods`: the method labels that may appear ("dedupd.v1.Dedup/CheckUrl");
  // anything else is recorded as kOtherMethod.
  explicit ServerMetrics(std::vector<std::string> methods);
  ~ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // RecordRpc counts one finished call in dedupd_rpc_requests_total{method,
  // code} (code: the gRPC status code's name, e.g. INVALID_ARGUMENT) and
  // observes its duration in dedupd_rpc_duration_seconds{method}.
  // `grpc_code` outside 0..16 is recorded as UNKNOWN.
  void RecordRpc(absl::string_view method, int grpc_code, double seconds);

  // CallStarted/CallEnded move the gauge dedupd_rpc_in_flight (calls
  // being served, open-ended streams such as health Watch excepted).
  void CallStarted();
  void CallEnded();

  // RecordBatchItems observes a request's item count in
  // dedupd_rpc_batch_items{method}.
  void RecordBatchItems(absl::string_view method, size_t items);

  // AddVerdicts adds counts[i] to the counter of VerdictLabels(layer)[i].
  // REQUIRES: counts.size() == VerdictLabels(layer).size().
  void AddVerdicts(Layer layer, absl::Span<const uint64_t> counts);

  // AddNamespaceVerdicts adds counts[i] (in VerdictLabels(kUrl) order) to
  // dedupd_url_namespace_verdicts_total{namespace, verdict}. The label is
  // the namespace for the first kMaxNamespaceLabels distinct namespaces
  // seen since the start (the empty one is kEmptyNamespaceLabel), and
  // kOtherNamespaceLabel for every later one, so clients cannot grow the
  // label set.
  void AddNamespaceVerdicts(absl::string_view name_space, absl::Span<const uint64_t> counts);
  static constexpr size_t kMaxNamespaceLabels = 32;
  // Neither can be a namespace (CheckNamespace allows no parentheses).
  static constexpr char kEmptyNamespaceLabel[] = "(empty)";
  static constexpr char kOtherNamespaceLabel[] = "(other)";

  // The name of a gRPC status code ("OK", "INVALID_ARGUMENT", ...).
  static absl::string_view CodeName(int grpc_code);

  struct Impl;

 private:
  friend class MetricsExporter;
  std::unique_ptr<Impl> impl_;
};

// MetricsExporter serves /metrics over HTTP. Thread-safe: collection runs on
// the exporter's thread, concurrently with the server.
class MetricsExporter {
 public:
  // Plain samples read at each scrape. The hook for figures that live in
  // other modules (the URL tier's filters, the store's record counts): add
  // them to the vector the function returns.
  using SampleFn = std::function<std::vector<MetricSample>()>;

  // Start listens on `listen` (host:port; port 0 picks a free one) and
  // serves `metrics` (may be null), the process metrics and the samples
  // `sample` (may be empty) returns at each scrape. Unavailable when the
  // address cannot be bound.
  // REQUIRES: `metrics` outlives the exporter.
  static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(const std::string& listen,
                                                                ServerMetrics* metrics,
                                                                SampleFn sample);

  // Stops serving; no scrape runs after it returns.
  ~MetricsExporter();

  // The port actually bound.
  int port() const;

  struct Impl;

 private:
  explicit MetricsExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ProcessSamples reads the process metrics of the Prometheus client
// conventions from /proc/self: process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds. A figure
// that cannot be read is left out. (prometheus-cpp 1.0 has no process
// collector.)
std::vector<MetricSample> ProcessSamples();

}  // namespace dedupd

#endif  // DEDUPD_SERVER_METRICS_H_
