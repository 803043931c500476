// End-to-end tests of MinHash near matching: the real dedupd binary on
// 127.0.0.1 port 0 with a temp data dir, driven through the generated gRPC
// stub. Near answers by estimated Jaccard survive a clean restart and a
// kill -9 identically (the signatures are in the store and the LSH index is
// rebuilt at Open), bad thresholds are per-item errors, and bad settings
// stop the server before it serves.
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/text_edits.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::ReadTextFile;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerTest;
using ::dedupd::testing::SubstituteWords;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kRpcDeadline = std::chrono::seconds(30);

// ~980 words of real prose (server/testdata, from the Debian Python Policy).
std::string PolicyText() {
  return ReadTextFile(std::string(DEDUPD_SERVER_TESTDATA_DIR) + "/python_policy_packaging.txt");
}

v1::ContentItem Item(const std::string& url, const std::string& text) {
  v1::ContentItem item;
  item.set_url(url);
  item.set_text(text);
  return item;
}

class E2eNearTextTest : public ServerTest {
 protected:
  E2eNearTextTest() : ServerTest(DEDUPD_BINARY, "e2e_near_text_") {}

  void OnStarted() override {
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Dedup::NewStub(channel_);
  }

  std::vector<v1::ContentResult> Check(const std::vector<v1::ContentItem>& items,
                                       v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckContentRequest request;
    request.set_mode(mode);
    for (const v1::ContentItem& item : items) *request.add_items() = item;
    v1::CheckContentResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
    grpc::Status s = stub_->CheckContent(&ctx, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    EXPECT_EQ(static_cast<size_t>(response.results_size()), items.size());
    return {response.results().begin(), response.results().end()};
  }

  // The peek answers of the variants of the policy text, as strings to
  // compare across restarts (times included).
  std::vector<std::string> PeekVariants() {
    std::vector<v1::ContentItem> items;
    for (int v = 0; v < 6; ++v) {
      items.push_back(Item("https://peek.example/" + std::to_string(v),
                           SubstituteWords(PolicyText(), 50 + 10 * v, v)));
    }
    std::vector<std::string> out;
    for (const v1::ContentResult& r : Check(items, v1::CLAIM_MODE_PEEK)) {
      out.push_back(r.SerializeAsString());
    }
    return out;
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Dedup::Stub> stub_;
};

TEST_F(E2eNearTextTest, JaccardAnswersAreIdenticalAfterRestartAndKill9) {
  const std::string policy = PolicyText();
  ASSERT_GT(policy.size(), 5000u) << "missing testdata";
  ASSERT_EQ(Check({Item("https://docs.example/policy", policy)})[0].verdict(),
            v1::CONTENT_VERDICT_NEW);
  // A variant recorded as a near duplicate is stored (with its signature)
  // too.
  std::vector<v1::ContentResult> near =
      Check({Item("https://mirror.example/policy", SubstituteWords(policy, 45, 3))});
  ASSERT_EQ(near[0].verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE) << near[0].DebugString();
  ASSERT_GT(near[0].near_matches_size(), 0);
  EXPECT_EQ(near[0].near_matches(0).measure(), v1::NEAR_MEASURE_JACCARD);
  EXPECT_GT(near[0].near_matches(0).distance(), 3u);

  const std::vector<std::string> before = PeekVariants();
  size_t by_jaccard = 0;
  for (const std::string& bytes : before) {
    v1::ContentResult r;
    ASSERT_TRUE(r.ParseFromString(bytes));
    EXPECT_EQ(r.verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE) << r.DebugString();
    for (const v1::NearMatch& m : r.near_matches()) {
      if (m.measure() == v1::NEAR_MEASURE_JACCARD) ++by_jaccard;
      EXPECT_GE(m.estimated_jaccard(), 0.85);
    }
  }
  EXPECT_GT(by_jaccard, 0u);

  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  StartServer();
  EXPECT_EQ(PeekVariants(), before);

  server_->Kill();
  StartServer();
  EXPECT_EQ(PeekVariants(), before);
}

TEST_F(E2eNearTextTest, BadMinJaccardIsTheItemsErrorAndTheRestAreAnswered) {
  std::vector<v1::ContentItem> items;
  for (double j : {0.0, 0.5, 1.5}) {
    v1::ContentItem item = Item("https://bad.example/" + std::to_string(items.size()),
                                "text of a page with enough words for a signature of its own");
    item.set_min_jaccard(j);
    items.push_back(item);
  }
  items.push_back(
      Item("https://good.example/", "a good page among bad thresholds is answered all the same"));
  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(r[i].verdict(), v1::CONTENT_VERDICT_INVALID);
    EXPECT_EQ(r[i].error_reason(), v1::ERROR_REASON_BAD_MIN_JACCARD);
    EXPECT_THAT(r[i].error(), HasSubstr("--min_jaccard_floor"));
  }
  EXPECT_EQ(r[3].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[3].applied_min_jaccard(), 0.85);
}

TEST_F(E2eNearTextTest, BadSettingsStopTheServerBeforeItServes) {
  server_->Kill();
  const struct {
    std::string flag;
    std::string want;
  } cases[] = {
      {"--content_min_jaccard=0.5", "--content_min_jaccard=0.5 must be 0 (off) or in [0.8, 1]"},
      {"--chunk_min_jaccard=1.5", "--chunk_min_jaccard=1.5 must be 0 (off) or in [0.8, 1]"},
      {"--min_jaccard_floor=0", "--min_jaccard_floor=0 is not in (0, 1]"},
  };
  for (const auto& c : cases) {
    auto r = RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=" + DataDir(), c.flag},
                        "", absl::Seconds(30));
    ASSERT_THAT(r, IsOk());
    EXPECT_NE(r->exit_code, 0) << c.flag;
    EXPECT_THAT(r->err, Not(HasSubstr("serving on"))) << c.flag;
    EXPECT_THAT(r->err, HasSubstr(c.want)) << c.flag;
  }
  // A lower floor admits a lower default.
  StartServer({"--min_jaccard_floor=0.7", "--content_min_jaccard=0.7"});
  v1::ContentItem item =
      Item("https://low.example/", "a page of enough words checked at a low bar");
  std::vector<v1::ContentResult> r = Check({item});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].applied_min_jaccard(), 0.7);
}

}  // namespace
}  // namespace dedupd
