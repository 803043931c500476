#include "server/metrics.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"

namespace dedupd {
namespace {

// Turns the server's samples into metric families at each scrape.
class SampleCollectable final : public prometheus::Collectable {
 public:
  explicit SampleCollectable(MetricsExporter::SampleFn sample)
      : sample_(std::move(sample)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    std::vector<prometheus::MetricFamily> families;
    for (const MetricSample& s : sample_()) {
      prometheus::MetricFamily f;
      f.name = s.name;
      f.help = s.help;
      prometheus::ClientMetric m;
      if (s.kind == MetricKind::kCounter) {
        f.type = prometheus::MetricType::Counter;
        m.counter.value = s.value;
      } else {
        f.type = prometheus::MetricType::Gauge;
        m.gauge.value = s.value;
      }
      f.metric.push_back(std::move(m));
      families.push_back(std::move(f));
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

absl::StatusOr<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(
    const std::string& listen, SampleFn sample) {
  auto impl = std::make_unique<Impl>();
  // civetweb reports a failed bind by throwing (CivetException); it is
  // caught here, at the library boundary, and never crosses into our code.
  try {
    impl->exposer = std::make_unique<prometheus::Exposer>(listen, /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("metrics: listen on ", listen, ": ", e.what()));
  }
  const std::vector<int> ports = impl->exposer->GetListeningPorts();
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat("metrics: listen on ", listen, ": no port bound"));
  }
  impl->port = ports.front();
  impl->collectable = std::make_shared<SampleCollectable>(std::move(sample));
  impl->exposer->RegisterCollectable(impl->collectable);
  return std::unique_ptr<MetricsExporter>(new MetricsExporter(std::move(impl)));
}

MetricsExporter::MetricsExporter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsExporter::~MetricsExporter() = default;

int MetricsExporter::port() const { return impl_->port; }

}  // namespace dedupd
