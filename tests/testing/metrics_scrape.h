// metrics_scrape.h: reads a dedupd /metrics endpoint in e2e tests: fetch
// over HTTP from 127.0.0.1, find the port in the server's log, and parse
// the Prometheus text exposition format into families and samples.
//
// Example:
//   const int port = MetricsPort(server_->Logs());
//   Exposition e = ParseExposition(ScrapeMetrics(port));
//   EXPECT_EQ(e.Value("dedupd_url_verdicts_total", {{"verdict", "new"}}), 3);
#ifndef DEDUPD_TESTS_TESTING_METRICS_SCRAPE_H_
#define DEDUPD_TESTS_TESTING_METRICS_SCRAPE_H_

#include <map>
#include <string>
#include <vector>

namespace dedupd::testing {

// Fetches http://127.0.0.1:<port>/metrics (HTTP/1.0: the server closes the
// connection after the body); the whole response, headers included; empty
// on any failure. Bounded by 10 s.
std::string ScrapeMetrics(int port);

// The port of the "metrics on 127.0.0.1:PORT" log line, or 0.
int MetricsPort(const std::string& logs);

// A parsed exposition. Lines that do not parse are kept in `errors`.
struct Exposition {
  struct Family {
    std::string type;  // counter, gauge, histogram, summary, untyped
    std::string help;
    bool has_help = false;
  };
  struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value = 0;
  };
  std::map<std::string, Family> families;  // by name, from # TYPE / # HELP
  std::vector<Sample> samples;
  std::vector<std::string> errors;

  // The sum of the samples named `name` whose labels include `labels`; -1
  // when there is none.
  double Value(const std::string& name,
               const std::map<std::string, std::string>& labels = {}) const;
};

// ParseExposition parses a scrape (HTTP headers, if any, are skipped).
Exposition ParseExposition(const std::string& scrape);

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_METRICS_SCRAPE_H_
