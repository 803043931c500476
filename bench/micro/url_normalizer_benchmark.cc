// url_normalizer_benchmark: Google Benchmark kernels for
// UrlNormalizer::Normalize, one per typical URL shape a crawler meets, so a
// regression can be pinned to the rule that got slower. Whole-corpus
// throughput is bench/micro/normalize_bench.cc's job.
//
// Example:
//   build/bench/dedupd_url_normalizer_benchmark --benchmark_filter=Tracking
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "benchmark/benchmark.h"
#include "core/url/url_normalizer.h"

namespace {

void BM_Normalize(benchmark::State& state, absl::string_view url, absl::string_view base) {
  const dedupd::UrlNormalizer normalizer;
  int64_t invalid = 0;
  for (auto _ : state) {
    absl::StatusOr<std::string> n = normalizer.Normalize(url, base);
    if (!n.ok()) ++invalid;
    benchmark::DoNotOptimize(n);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(url.size()));
  // Non-zero means the shape is rejected: the timing measures the error path.
  state.counters["invalid"] =
      benchmark::Counter(static_cast<double>(invalid), benchmark::Counter::kAvgIterations);
}

void BM_NormalizeExplain(benchmark::State& state, absl::string_view url) {
  const dedupd::UrlNormalizer normalizer;
  std::vector<absl::string_view> fired;
  for (auto _ : state) {
    fired.clear();
    absl::StatusOr<std::string> n = normalizer.Normalize(url, {}, &fired);
    benchmark::DoNotOptimize(n);
    benchmark::DoNotOptimize(fired.data());
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["rules_fired"] = static_cast<double>(fired.size());
}

// Already canonical: the fast path every seen URL takes.
BENCHMARK_CAPTURE(BM_Normalize, Canonical, "https://docs.python.org/3.11/library/os.html", "");
// Real documentation link with a fragment to drop.
BENCHMARK_CAPTURE(BM_Normalize, Fragment,
                  "https://www.postgresql.org/docs/15/sql-select.html#SQL-WITH", "");
// Marketing link: tracking parameters, case, default port, unsorted query.
BENCHMARK_CAPTURE(BM_Normalize, Tracking,
                  "HTTPS://Shop.Example.COM:443/catalog/garden/trowel?"
                  "utm_source=newsletter&utm_medium=email&size=m&color=blue&"
                  "gclid=EAIaIQobChMI8sP&fbclid=IwAR2xyz",
                  "");
// Session ids as a path parameter and in the query.
BENCHMARK_CAPTURE(BM_Normalize, SessionIds,
                  "http://forum.example.org/viewtopic.php;jsessionid="
                  "03DABAED8AFCAABFB358FD8001CEAD49?t=42&PHPSESSID="
                  "s9voqbael21kim7t5tlkvz365e&sid=0123abcd",
                  "");
// Dot segments and percent-encoded unreserved characters.
BENCHMARK_CAPTURE(BM_Normalize, DotSegmentsPercent,
                  "https://docs.python.org/3.11/x1/../library/./%72e.ht%6dl/", "");
// A relative outlink resolved against the page it was found on.
BENCHMARK_CAPTURE(BM_Normalize, RelativeWithBase, "../library/os.html#os.walk",
                  "https://docs.python.org/3.11/tutorial/stdlib.html");
// Internationalized host: IDNA to punycode.
BENCHMARK_CAPTURE(BM_Normalize, IdnHost, "https://b\xC3\xBC\x63her.example/k\xC3\xA4se?q=1", "");
// Long query string with many parameters to sort.
BENCHMARK_CAPTURE(BM_Normalize, LongQuery,
                  "https://search.example.com/results?z=26&y=25&x=24&w=23&v=22&"
                  "u=21&t=20&s=19&r=18&q=17&p=16&o=15&n=14&m=13&l=12&k=11&j=10&"
                  "i=9&h=8&g=7&f=6&e=5&d=4&c=3&b=2&a=1",
                  "");
// Rejected input: the error path must stay cheap too.
BENCHMARK_CAPTURE(BM_Normalize, InvalidScheme, "javascript:void(0)", "");
// The cost of recording which rules fired (dedupctl explain).
BENCHMARK_CAPTURE(BM_NormalizeExplain, Tracking,
                  "HTTPS://Shop.Example.COM:443/catalog/garden/trowel?"
                  "utm_source=newsletter&size=m&color=blue#reviews");

}  // namespace

BENCHMARK_MAIN();
