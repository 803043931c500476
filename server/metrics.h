// metrics.h: the Prometheus exposition endpoint (`--metrics_listen`). Only
// metrics.cc includes prometheus-cpp; the rest of the server hands it plain
// samples through a callback that runs at each scrape, so the figures are
// read from the stores when Prometheus asks, never cached.
//
// Example:
//   MetricsExporter::SampleFn sample = [&] {
//     return std::vector<MetricSample>{
//         {"dedupd_url_filter_urls", "URLs in the filter", MetricKind::kGauge, 42}};
//   };
//   absl::StatusOr<std::unique_ptr<MetricsExporter>> e =
//       MetricsExporter::Start("127.0.0.1:0", sample);
//   // GET http://127.0.0.1:<(*e)->port()>/metrics
#ifndef DEDUPD_SERVER_METRICS_H_
#define DEDUPD_SERVER_METRICS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dedupd {

enum class MetricKind { kGauge, kCounter };

// One sample: a metric without labels. Names follow Prometheus conventions
// (dedupd_ prefix, base units, _total on counters).
struct MetricSample {
  std::string name;
  std::string help;
  MetricKind kind = MetricKind::kGauge;
  double value = 0;
};

// MetricsExporter serves /metrics over HTTP. Thread-safe: the sample
// function runs on the exporter's threads, concurrently with the server.
class MetricsExporter {
 public:
  using SampleFn = std::function<std::vector<MetricSample>()>;

  // Start listens on `listen` (host:port; port 0 picks a free one) and
  // serves the samples `sample` returns at each scrape. Unavailable when
  // the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsExporter>> Start(
      const std::string& listen, SampleFn sample);

  ~MetricsExporter();

  // The port actually bound.
  int port() const;

  struct Impl;

 private:
  explicit MetricsExporter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_METRICS_H_
