// End-to-end tests of the URL layer's Bloom tier through the real
// dedupd binary on 127.0.0.1 port 0: the exact mode's front (saved at a
// clean stop, reloaded at start), and the approximate mode
// (--url_seen_mode=approximate: SEEN_PROBABLY, one NEW per URL, restart
// and kill -9 keep every acknowledged NEW, CheckContent's URLs count).

#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::MetricsPort;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ScrapeMetrics;
using ::dedupd::testing::ServerTest;
using ::testing::HasSubstr;

const std::vector<std::string> kApproximate = {"--url_seen_mode=approximate",
                                               "--url_filter_expected_urls=200000",
                                               "--url_snapshot_every_urls=5000"};

// The value of the unlabeled sample `name` in a scrape, or -1.
double MetricValue(const std::string& scrape, const std::string& name) {
  for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
    if (!absl::ConsumePrefix(&line, name) || !absl::ConsumePrefix(&line, " ")) continue;
    double v = 0;
    if (absl::SimpleAtod(line, &v)) return v;
  }
  return -1;
}

class E2eUrlBloomTest : public ClientServerTest {
 protected:
  E2eUrlBloomTest() : ClientServerTest(DEDUPD_BINARY, "e2e_url_bloom_") {}

  std::vector<v1::UrlResult> Check(const std::vector<std::string>& urls,
                                   v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM,
                                   DedupClient* client = nullptr) {
    std::vector<v1::UrlItem> items(urls.size());
    for (size_t i = 0; i < urls.size(); ++i) items[i].set_url(urls[i]);
    absl::StatusOr<std::vector<v1::UrlResult>> r =
        (client != nullptr ? client : client_.get())->CheckUrls(items, mode);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : std::vector<v1::UrlResult>{};
  }

  // The number of results with verdict `v`.
  static size_t Count(const std::vector<v1::UrlResult>& results, v1::UrlVerdict v) {
    size_t n = 0;
    for (const v1::UrlResult& r : results) n += r.verdict() == v;
    return n;
  }

  static std::vector<std::string> Urls(const std::string& prefix, int n) {
    std::vector<std::string> urls;
    for (int i = 0; i < n; ++i) urls.push_back(absl::StrCat(prefix, i));
    return urls;
  }

  void Restart(const std::vector<std::string>& flags) {
    absl::StatusOr<int> code = server_->Terminate();
    ASSERT_THAT(code, IsOk());
    EXPECT_EQ(*code, 0) << server_->Logs();
    StartServer(flags);
  }

  // For a server started with --metrics_listen: sets *port to its metrics
  // port and waits (bounded) until the exact mode's front answers, which it
  // does once its build after the store's opening is done; *scrape is the
  // scrape that said so.
  void WaitForFront(int* port, std::string* scrape) {
    *port = MetricsPort(server_->Logs());
    ASSERT_GT(*port, 0) << server_->Logs();
    for (int i = 0; i < 200 && MetricValue(*scrape, "dedupd_url_filter_ready") != 1; ++i) {
      *scrape = ScrapeMetrics(*port);
    }
    ASSERT_EQ(MetricValue(*scrape, "dedupd_url_filter_ready"), 1) << *scrape;
  }
};

TEST_F(E2eUrlBloomTest, ExactModeSavesTheFilterAndReloadsIt) {
  EXPECT_THAT(server_->Logs(), HasSubstr("URL filter: rebuilding: no filter file"));
  const std::vector<std::string> urls = Urls("https://x.example/page/", 2000);
  EXPECT_EQ(Count(Check(urls), v1::URL_VERDICT_NEW), 2000u);
  Restart({});
  EXPECT_THAT(server_->Logs(), HasSubstr("URL filter: loaded"));
  const std::vector<v1::UrlResult> again = Check(urls, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(Count(again, v1::URL_VERDICT_SEEN), 2000u);
  EXPECT_TRUE(again[0].has_first_seen_time());
  // After a kill -9 the saved file is stale: rebuilt, and still exact.
  EXPECT_EQ(Count(Check(Urls("https://y.example/", 500)), v1::URL_VERDICT_NEW), 500u);
  server_->Kill();
  StartServer();
  EXPECT_THAT(server_->Logs(), HasSubstr("URL filter: rebuilding: stale filter file"));
  EXPECT_EQ(Count(Check(urls), v1::URL_VERDICT_SEEN), 2000u);
  EXPECT_EQ(Count(Check(Urls("https://y.example/", 500)), v1::URL_VERDICT_SEEN), 500u);
}

TEST_F(E2eUrlBloomTest, ApproximateModeAnswersSeenProbably) {
  StartServer(kApproximate);
  EXPECT_THAT(server_->Logs(), HasSubstr("approximate URL seen-set at "));
  const std::vector<std::string> urls = Urls("https://a.example/doc/", 1000);
  EXPECT_EQ(Count(Check(urls, v1::CLAIM_MODE_PEEK), v1::URL_VERDICT_NEW), 1000u);
  EXPECT_EQ(Count(Check(urls), v1::URL_VERDICT_NEW), 1000u);
  const std::vector<v1::UrlResult> again = Check(urls);
  EXPECT_EQ(Count(again, v1::URL_VERDICT_SEEN_PROBABLY), 1000u);
  EXPECT_FALSE(again[0].has_first_seen_time());
  EXPECT_EQ(again[0].normalized_url(), "https://a.example/doc/0");
  // Normalization still applies: the same URL spelled differently.
  EXPECT_EQ(Check({"HTTPS://A.example:443/doc/7?utm_source=x"})[0].verdict(),
            v1::URL_VERDICT_SEEN_PROBABLY);
  // A bad item is still its own INVALID.
  EXPECT_EQ(Check({"ftp://a.example/"})[0].verdict(), v1::URL_VERDICT_INVALID);
}

TEST_F(E2eUrlBloomTest, ApproximateModeGivesExactlyOneNewPerUrl) {
  StartServer(kApproximate);
  constexpr int kThreads = 4;
  std::vector<size_t> fresh(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread sends the same 3,000 URLs, in its own order of batches.
      for (int b = 0; b < 10; ++b) {
        const int batch = (b + t * 3) % 10;
        std::vector<std::string> urls;
        for (int i = 0; i < 300; ++i) {
          urls.push_back(absl::StrCat("https://c.example/", batch * 300 + i));
        }
        fresh[t] += Count(Check(urls), v1::URL_VERDICT_NEW);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fresh[0] + fresh[1] + fresh[2] + fresh[3], 3000u);
}

TEST_F(E2eUrlBloomTest, ApproximateModeKeepsAcknowledgedNewAcrossRestartAndKill) {
  StartServer(kApproximate);
  const std::vector<std::string> first = Urls("https://r.example/", 8000);
  EXPECT_EQ(Count(Check(first), v1::URL_VERDICT_NEW), 8000u);
  Restart(kApproximate);
  EXPECT_EQ(Count(Check(first, v1::CLAIM_MODE_PEEK), v1::URL_VERDICT_SEEN_PROBABLY), 8000u);

  // Claims run while the server is SIGKILLed: every acknowledged NEW (some
  // in a snapshot, the rest only in the claim log) is seen afterwards.
  ClientOptions no_retry;
  no_retry.max_attempts = 1;
  no_retry.deadline = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(server_->address(), no_retry);
  ASSERT_THAT(client, IsOk());
  std::vector<std::vector<std::string>> acked(2);
  std::atomic<int> batches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < 400; ++b) {
        std::vector<v1::UrlItem> items(200);
        for (int i = 0; i < 200; ++i) {
          items[i].set_url(absl::StrCat("http://k.example/", t, "/", b, "/", i));
        }
        auto r = (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM);
        if (!r.ok()) return;  // the server is gone
        for (const v1::UrlResult& res : *r) {
          if (res.verdict() == v1::URL_VERDICT_NEW) acked[t].push_back(res.normalized_url());
        }
        ++batches;
      }
    });
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (batches.load() < 40 && absl::Now() < give_up) std::this_thread::yield();
  server_->Kill();
  for (std::thread& t : threads) t.join();
  std::vector<std::string> all = acked[0];
  all.insert(all.end(), acked[1].begin(), acked[1].end());
  ASSERT_GT(all.size(), 0u);
  StartServer(kApproximate);
  EXPECT_EQ(Count(Check(all, v1::CLAIM_MODE_PEEK), v1::URL_VERDICT_SEEN_PROBABLY), all.size());
  EXPECT_EQ(Count(Check(first, v1::CLAIM_MODE_PEEK), v1::URL_VERDICT_SEEN_PROBABLY), 8000u);
}

TEST_F(E2eUrlBloomTest, ApproximateModeCountsContentUrlsAsSeen) {
  StartServer(kApproximate);
  auto stub = v1::Dedup::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  v1::CheckContentRequest request;
  v1::ContentItem* item = request.add_items();
  item->set_url("https://mirror.example/article?utm_source=feed");
  item->set_canonical_url("https://origin.example/article");
  item->set_text("The quick brown fox jumps over the lazy dog, twice over.");
  v1::CheckContentResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(stub->CheckContent(&context, request, &response).ok());
  ASSERT_EQ(response.results(0).verdict(), v1::CONTENT_VERDICT_NEW);
  const std::vector<v1::UrlResult> r =
      Check({"https://mirror.example/article", "https://origin.example/article",
             "https://other.example/"});
  EXPECT_EQ(r[0].verdict(), v1::URL_VERDICT_SEEN_PROBABLY);
  EXPECT_EQ(r[1].verdict(), v1::URL_VERDICT_SEEN_PROBABLY);
  EXPECT_EQ(r[2].verdict(), v1::URL_VERDICT_NEW);
}

TEST_F(E2eUrlBloomTest, MetricsShowTheExactModesFront) {
  StartServer({"--metrics_listen=127.0.0.1:0"});
  int port = 0;
  std::string scrape;
  ASSERT_NO_FATAL_FAILURE(WaitForFront(&port, &scrape));
  EXPECT_THAT(scrape, HasSubstr("# TYPE dedupd_url_filter_store_reads_skipped_total counter"));
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_urls"), 0);
  EXPECT_EQ(Count(Check(Urls("https://m.example/", 300)), v1::URL_VERDICT_NEW), 300u);
  scrape = ScrapeMetrics(port);
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_urls"), 300) << scrape;
  // Two looks per new URL, nearly all ruled out without a store read.
  EXPECT_GE(MetricValue(scrape, "dedupd_url_filter_store_reads_skipped_total"), 590);
  EXPECT_GT(MetricValue(scrape, "dedupd_url_filter_memory_bytes"), 0);
  EXPECT_GT(MetricValue(scrape, "dedupd_url_filter_design_urls"), 1e6);
}

TEST_F(E2eUrlBloomTest, ExactModesFrontGrowsBySegmentsAcrossARestart) {
  const std::vector<std::string> small = {"--metrics_listen=127.0.0.1:0",
                                          "--url_filter_expected_urls=100"};
  // A clean stop would save the fixture server's filter (sized for the
  // default 10,000,000 URLs) and the next start would load it; killed, it
  // saves nothing, and the new server builds one segment for 100.
  server_->Kill();
  StartServer(small);
  int port = 0;
  std::string scrape;
  ASSERT_NO_FATAL_FAILURE(WaitForFront(&port, &scrape));
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_segments"), 1) << scrape;
  // Three batches of 300 (one store claim each): the first passes the
  // first segment's ~100, the second the next one's ~200; the third fits
  // in the third (~400).
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(
        Count(Check(Urls(absl::StrCat("https://g.example/", b, "/"), 300)), v1::URL_VERDICT_NEW),
        300u);
  }
  scrape = ScrapeMetrics(port);
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_segments"), 3) << scrape;
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_urls"), 900) << scrape;
  // Grown without a second scan of the store.
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_filter_rebuilds_total"), 1) << scrape;
  // Every segment is saved and loaded: all 900 stay SEEN, new ones are NEW.
  Restart({"--url_filter_expected_urls=100"});
  EXPECT_THAT(server_->Logs(), HasSubstr("URL filter: loaded"));
  for (int b = 0; b < 3; ++b) {
    EXPECT_EQ(
        Count(Check(Urls(absl::StrCat("https://g.example/", b, "/"), 300)), v1::URL_VERDICT_SEEN),
        300u);
  }
  EXPECT_EQ(Count(Check(Urls("https://g.example/3/", 300)), v1::URL_VERDICT_NEW), 300u);
}

TEST_F(E2eUrlBloomTest, MetricsShowTheApproximateSeenSet) {
  std::vector<std::string> flags = kApproximate;
  flags.push_back("--metrics_listen=127.0.0.1:0");
  StartServer(flags);
  const int port = MetricsPort(server_->Logs());
  ASSERT_GT(port, 0) << server_->Logs();
  EXPECT_EQ(Count(Check(Urls("https://m.example/", 250)), v1::URL_VERDICT_NEW), 250u);
  const std::string scrape = ScrapeMetrics(port);
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_bloom_urls"), 250) << scrape;
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_bloom_capacity_urls"), 200000);
  EXPECT_EQ(MetricValue(scrape, "dedupd_url_bloom_over_capacity"), 0);
  const double fp = MetricValue(scrape, "dedupd_url_bloom_estimated_false_positive_ratio");
  EXPECT_GE(fp, 0);
  EXPECT_LT(fp, 0.001);
  EXPECT_GT(MetricValue(scrape, "dedupd_url_bloom_memory_bytes"), 200000);
}

TEST(E2eUrlBloomStartupTest, BadFlagsGiveOneLineErrors) {
  for (const std::string& flag :
       {std::string("--url_seen_mode=fuzzy"), std::string("--url_filter_false_positive_rate=0"),
        std::string("--url_filter_expected_urls=0")}) {
    const std::string dir = ::dedupd::testing::MakeTempDir("e2e_url_bloom_flags_");
    absl::StatusOr<testing::CommandResult> r =
        RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=" + dir + "/data", flag}, "",
                   absl::Seconds(30));
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->exit_code, 2) << flag << ": " << r->err;
    EXPECT_THAT(r->err, HasSubstr(flag.substr(2, flag.find('=') - 2))) << flag;
    ::dedupd::testing::RemoveTree(dir);
  }
}

}  // namespace
}  // namespace dedupd
