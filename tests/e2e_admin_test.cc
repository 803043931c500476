// End-to-end tests of dedupd.v1.Admin against the real dedupd binary on
// 127.0.0.1 port 0: `dedupctl admin stats|backup|export`, a backup taken
// while another thread claims, `dedupd --restore_from` into a new data
// directory, restart, and the records acknowledged before the backup; and
// `dedupctl admin forget`: what a forgotten URL leaves behind (promotions,
// texts NEW again), per-URL errors, the batch limit, the admin token rule,
// restart, and the approximate mode's caveat.
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "dedupd/v1/admin.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerProcess;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

class E2eAdminTest : public ClientServerTest {
 protected:
  E2eAdminTest() : ClientServerTest(DEDUPD_BINARY, "e2e_admin_") {}

  // An open client connection holds a terminating server for its whole
  // drain time: keep it short.
  static constexpr char kDrain[] = "--drain_timeout=1s";

  static std::vector<v1::UrlItem> Items(const std::vector<std::string>& urls) {
    std::vector<v1::UrlItem> items(urls.size());
    for (size_t i = 0; i < urls.size(); ++i) items[i].set_url(urls[i]);
    return items;
  }

  // The URLs of batch `b` of the claiming thread (already normalized).
  static std::vector<std::string> BatchUrls(int b) {
    std::vector<std::string> urls;
    for (int i = 0; i < 20; ++i) urls.push_back(absl::StrCat("http://claim.example/", b, "/", i));
    return urls;
  }

  // Runs dedupctl with `args` against `address`; returns stdout.
  static std::string Dedupctl(std::vector<std::string> args, const std::string& address,
                              int want_exit = 0, std::string* err = nullptr) {
    std::vector<std::string> argv = {DEDUPCTL_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--server");
    argv.push_back(address);
    absl::StatusOr<testing::CommandResult> r = RunCommand(argv, "");
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return "";
    EXPECT_EQ(r->exit_code, want_exit) << r->err;
    if (err != nullptr) *err = r->err;
    return r->out;
  }

  // The "url" lines of `dedupctl admin export` as a set; also counts the
  // content and alias lines.
  static std::set<std::string> ExportedUrls(const std::string& out, int* contents = nullptr,
                                            int* aliases = nullptr) {
    std::set<std::string> urls;
    for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
      google::protobuf::Struct obj;
      EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &obj).ok())
          << line;
      const std::string type = obj.fields().at("type").string_value();
      if (type == "url") {
        EXPECT_TRUE(obj.fields().count("first_seen")) << line;
        EXPECT_TRUE(urls.insert(obj.fields().at("url").string_value()).second) << line;
      } else if (type == "content" && contents != nullptr) {
        ++*contents;
      } else if (type == "alias" && aliases != nullptr) {
        ++*aliases;
      }
    }
    return urls;
  }

  void ExpectAllSeen(DedupClient* client, const std::vector<std::string>& urls,
                     v1::UrlVerdict want) {
    absl::StatusOr<std::vector<v1::UrlResult>> r =
        client->CheckUrls(Items(urls), v1::CLAIM_MODE_PEEK);
    ASSERT_THAT(r, IsOk());
    for (size_t i = 0; i < urls.size(); ++i) {
      ASSERT_EQ((*r)[i].verdict(), want) << urls[i];
    }
  }
};

// ---------------------------------------------------------------- Forget

constexpr char kSharedText[] = "a text that two pages served word for word, kept by both";
constexpr char kSoloText[] = "a text that only one page ever served, and nobody else";
constexpr char kSharedChunk[] =
    "a chunk of text that two documents hold, shared boilerplate of the site";
constexpr char kOwnChunk[] = "a chunk of text that only the first document holds, its own body";

// Parses the JSON lines of `dedupctl admin forget`.
std::vector<v1::ForgetResult> ForgetLines(const std::string& out) {
  std::vector<v1::ForgetResult> results;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    v1::ForgetResult r;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(std::string(line), &r).ok()) << line;
    results.push_back(std::move(r));
  }
  return results;
}

// The exact record count of `kind` from `dedupctl admin stats --exact`.
uint64_t ExactCount(const std::string& stats_out, const std::string& kind) {
  v1::StatsResponse stats;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(stats_out, &stats).ok()) << stats_out;
  for (const v1::RecordKindStats& k : stats.kinds()) {
    if (k.kind() == kind) return k.exact_count();
  }
  ADD_FAILURE() << "no kind " << kind << " in " << stats_out;
  return 0;
}

v1::ContentResult PeekContent(DedupClient* client, const std::string& url,
                              const std::string& text) {
  std::vector<v1::ContentItem> docs(1);
  docs[0].set_url(url);
  docs[0].set_text(text);
  absl::StatusOr<std::vector<v1::ContentResult>> r =
      client->CheckContent(docs, v1::CLAIM_MODE_PEEK);
  EXPECT_THAT(r, IsOk());
  return r.ok() && r->size() == 1 ? (*r)[0] : v1::ContentResult();
}

TEST_F(E2eAdminTest, ForgetPromotesAliasesFreesTextsAndSurvivesRestart) {
  StartServer({kDrain});
  const std::string a = "http://forget.example/a";
  const std::string b = "http://forget.example/b";
  const std::string solo = "http://forget.example/solo";
  ASSERT_THAT(client_->CheckUrls(Items({a, b, solo}), v1::CLAIM_MODE_CLAIM), IsOk());
  // a owns the shared text (b is its alias); solo owns its own text.
  std::vector<v1::ContentItem> docs(3);
  docs[0].set_url(a);
  docs[0].set_text(kSharedText);
  docs[1].set_url(b);
  docs[1].set_text(kSharedText);
  docs[2].set_url(solo);
  docs[2].set_text(kSoloText);
  ASSERT_THAT(client_->CheckContent(docs, v1::CLAIM_MODE_CLAIM), IsOk());
  // a's chunks: one shared with b's document, one its own.
  v1::CheckChunksRequest chunks;
  chunks.set_document_url(a);
  chunks.set_mode(v1::CLAIM_MODE_CLAIM);
  chunks.add_chunks()->set_text(kSharedChunk);
  chunks.add_chunks()->set_text(kOwnChunk);
  ASSERT_THAT(client_->CheckChunks(chunks), IsOk());
  chunks.set_document_url(b);
  chunks.clear_chunks();
  v1::ChunkItem* shared = chunks.add_chunks();
  shared->set_text(kSharedChunk);
  shared->set_chunk_id("b-shared");
  ASSERT_THAT(client_->CheckChunks(chunks), IsOk());

  const std::string before = Dedupctl({"admin", "stats", "--exact"}, server_->address());
  EXPECT_EQ(ExactCount(before, "url"), 3u);
  EXPECT_EQ(ExactCount(before, "content"), 2u);
  EXPECT_EQ(ExactCount(before, "alias"), 1u);
  EXPECT_EQ(ExactCount(before, "chunk_text"), 2u);

  // Forget the owner, given in a form that normalizes to it.
  std::vector<v1::ForgetResult> results =
      ForgetLines(Dedupctl({"admin", "forget", "HTTP://Forget.EXAMPLE:80/a"}, server_->address()));
  ASSERT_EQ(results.size(), 1u);
  const v1::ForgetResult& r = results[0];
  EXPECT_EQ(r.url(), "HTTP://Forget.EXAMPLE:80/a");
  EXPECT_EQ(r.normalized_url(), a);
  EXPECT_EQ(r.error(), "");
  EXPECT_TRUE(r.found());
  EXPECT_TRUE(r.url_removed());
  EXPECT_FALSE(r.url_stays_seen_probably());
  EXPECT_EQ(r.contents_removed(), 0u);
  ASSERT_EQ(r.contents_promoted_size(), 1);
  EXPECT_EQ(r.contents_promoted(0).new_owner_url(), b);
  EXPECT_EQ(r.contents_promoted(0).content_hash().size(), 64u);
  EXPECT_TRUE(r.chunk_manifest_removed());
  EXPECT_EQ(r.chunk_holders_removed(), 2u);
  EXPECT_EQ(r.chunk_texts_removed(), 1u);  // its own chunk
  ASSERT_EQ(r.chunk_owners_promoted_size(), 1);
  EXPECT_EQ(r.chunk_owners_promoted(0).new_owner_document_url(), b);
  EXPECT_EQ(r.chunk_owners_promoted(0).new_owner_chunk_id(), "b-shared");

  ExpectAllSeen(client_.get(), {a}, v1::URL_VERDICT_NEW);
  ExpectAllSeen(client_.get(), {b, solo}, v1::URL_VERDICT_SEEN);
  v1::ContentResult c = PeekContent(client_.get(), "http://forget.example/c", kSharedText);
  EXPECT_EQ(c.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(c.owner_url(), b);

  const std::string middle = Dedupctl({"admin", "stats", "--exact"}, server_->address());
  EXPECT_EQ(ExactCount(middle, "url"), 2u);
  EXPECT_EQ(ExactCount(middle, "content"), 2u);
  EXPECT_EQ(ExactCount(middle, "alias"), 0u);
  EXPECT_EQ(ExactCount(middle, "chunk_text"), 1u);

  // Forget the last URL that served the text (from standard input): NEW.
  absl::StatusOr<testing::CommandResult> piped =
      RunCommand({DEDUPCTL_BINARY, "admin", "forget", "--server", server_->address()}, b + "\n");
  ASSERT_THAT(piped, IsOk());
  ASSERT_EQ(piped->exit_code, 0) << piped->err;
  results = ForgetLines(piped->out);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].normalized_url(), b);
  EXPECT_EQ(results[0].contents_removed(), 1u);
  EXPECT_EQ(results[0].contents_promoted_size(), 0);
  EXPECT_EQ(results[0].chunk_texts_removed(), 1u);
  EXPECT_EQ(PeekContent(client_.get(), "http://forget.example/c", kSharedText).verdict(),
            v1::CONTENT_VERDICT_NEW);
  const std::string after = Dedupctl({"admin", "stats", "--exact"}, server_->address());
  EXPECT_EQ(ExactCount(after, "url"), 1u);
  EXPECT_EQ(ExactCount(after, "content"), 1u);
  EXPECT_EQ(ExactCount(after, "chunk_text"), 0u);

  // Forgetting it again finds nothing: not an error.
  results = ForgetLines(Dedupctl({"admin", "forget", b}, server_->address()));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].found());

  // A restart keeps the forgetting (and what was not forgotten).
  StartServer({kDrain});
  ExpectAllSeen(client_.get(), {a, b}, v1::URL_VERDICT_NEW);
  ExpectAllSeen(client_.get(), {solo}, v1::URL_VERDICT_SEEN);
  EXPECT_EQ(PeekContent(client_.get(), "http://forget.example/c", kSharedText).verdict(),
            v1::CONTENT_VERDICT_NEW);
  c = PeekContent(client_.get(), "http://forget.example/c", kSoloText);
  EXPECT_EQ(c.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(c.owner_url(), solo);
}

TEST_F(E2eAdminTest, ForgetBatchHasPerUrlErrorsAndALimit) {
  StartServer({kDrain});
  const std::vector<std::string> urls = {"http://batch.example/1", "http://batch.example/2"};
  ASSERT_THAT(client_->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM), IsOk());
  // The invalid URL gets its own error (exit 1); the others are forgotten.
  std::vector<v1::ForgetResult> results = ForgetLines(Dedupctl(
      {"admin", "forget", urls[0], "javascript:alert(1)", urls[1]}, server_->address(), 1));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[0].found());
  EXPECT_EQ(results[1].url(), "javascript:alert(1)");
  EXPECT_NE(results[1].error(), "");
  EXPECT_EQ(results[1].normalized_url(), "");
  EXPECT_FALSE(results[1].found());
  EXPECT_TRUE(results[2].found());
  ExpectAllSeen(client_.get(), urls, v1::URL_VERDICT_NEW);

  // Over the limit: the whole call is rejected, naming the limit.
  v1::ForgetRequest request;
  for (int i = 0; i < 101; ++i) request.add_urls(absl::StrCat("http://batch.example/", i));
  ASSERT_THAT(client_->CheckUrls(Items({"http://batch.example/0"}), v1::CLAIM_MODE_CLAIM), IsOk());
  EXPECT_THAT(client_->AdminForget(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit of 100")));
  ExpectAllSeen(client_.get(), {"http://batch.example/0"}, v1::URL_VERDICT_SEEN);
  EXPECT_THAT(client_->AdminForget(v1::ForgetRequest()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));

  // dedupctl splits a longer input into batches the server accepts.
  std::string input;
  for (int i = 0; i < 150; ++i) input += absl::StrCat("http://batch.example/", i, "\n");
  absl::StatusOr<testing::CommandResult> piped =
      RunCommand({DEDUPCTL_BINARY, "admin", "forget", "--server", server_->address()}, input);
  ASSERT_THAT(piped, IsOk());
  ASSERT_EQ(piped->exit_code, 0) << piped->err;
  results = ForgetLines(piped->out);
  ASSERT_EQ(results.size(), 150u);
  for (int i = 0; i < 150; ++i) {
    EXPECT_EQ(results[i].normalized_url(), absl::StrCat("http://batch.example/", i));
    EXPECT_EQ(results[i].found(), i == 0) << i;
  }
  ExpectAllSeen(client_.get(), {"http://batch.example/0"}, v1::URL_VERDICT_NEW);
}

TEST_F(E2eAdminTest, ForgetNeedsTheAdminToken) {
  const std::string token_file = dir_ + "/token";
  const std::string admin_token_file = dir_ + "/admin-token";
  std::ofstream(token_file) << "normal-token-0123456789\n";
  std::ofstream(admin_token_file) << "admin-token-9876543210\n";
  StartServer(
      {kDrain, "--auth_token_file=" + token_file, "--admin_token_file=" + admin_token_file});
  ClientOptions options;
  options.deadline = absl::Seconds(30);
  options.bearer_token = "normal-token-0123456789";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DedupClient> normal,
                       DedupClient::Connect(server_->address(), options));
  const std::string url = "http://guarded.example/page";
  ASSERT_THAT(normal->CheckUrls(Items({url}), v1::CLAIM_MODE_CLAIM), IsOk());

  v1::ForgetRequest request;
  request.add_urls(url);
  EXPECT_THAT(normal->AdminForget(request), StatusIs(absl::StatusCode::kPermissionDenied));
  std::string err;
  Dedupctl({"admin", "forget", "--token_file", token_file, url}, server_->address(), 2, &err);
  EXPECT_THAT(err, HasSubstr("requires the admin token"));
  ExpectAllSeen(normal.get(), {url}, v1::URL_VERDICT_SEEN);  // nothing forgotten

  std::vector<v1::ForgetResult> results = ForgetLines(
      Dedupctl({"admin", "forget", "--token_file", admin_token_file, url}, server_->address()));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].url_removed());
  ExpectAllSeen(normal.get(), {url}, v1::URL_VERDICT_NEW);
}

// The approximate seen-set cannot forget: the result says so, CheckUrl
// keeps answering SEEN_PROBABLY, and the URL's texts are forgotten all the
// same.
TEST_F(E2eAdminTest, ApproximateModeForgetSaysTheUrlStaysSeen) {
  StartServer({kDrain, "--url_seen_mode=approximate", "--url_filter_expected_urls=100000"});
  const std::string url = "http://approx.example/forget";
  ASSERT_THAT(client_->CheckUrls(Items({url}), v1::CLAIM_MODE_CLAIM), IsOk());
  std::vector<v1::ContentItem> docs(1);
  docs[0].set_url(url);
  docs[0].set_text(kSoloText);
  ASSERT_THAT(client_->CheckContent(docs, v1::CLAIM_MODE_CLAIM), IsOk());
  std::vector<v1::ForgetResult> results =
      ForgetLines(Dedupctl({"admin", "forget", url}, server_->address()));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].found());
  EXPECT_TRUE(results[0].url_stays_seen_probably());
  EXPECT_EQ(results[0].contents_removed(), 1u);
  ExpectAllSeen(client_.get(), {url}, v1::URL_VERDICT_SEEN_PROBABLY);
  EXPECT_EQ(PeekContent(client_.get(), "http://approx.example/other", kSoloText).verdict(),
            v1::CONTENT_VERDICT_NEW);
}

TEST_F(E2eAdminTest, StatsThroughDedupctl) {
  StartServer({kDrain});
  ASSERT_THAT(
      client_->CheckUrls(Items({"http://a.example/1", "http://a.example/2"}), v1::CLAIM_MODE_CLAIM),
      IsOk());
  const std::string out = Dedupctl({"admin", "stats", "--exact"}, server_->address());
  v1::StatsResponse stats;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &stats).ok()) << out;
  EXPECT_EQ(stats.storage_format_version(), 5u);
  EXPECT_EQ(stats.minhash_version(), 1u);
  EXPECT_EQ(stats.minhash_seed(), 0x6465647570644D48u);  // "dedupdMH"
  EXPECT_EQ(stats.url_seen_mode(), "exact");
  EXPECT_EQ(stats.estimated_url_records(), 2u);
  EXPECT_GT(stats.uptime().seconds() * 1000000000LL + stats.uptime().nanos(), 0);
  EXPECT_GT(stats.store_created().seconds(), 0);
  bool found = false;
  for (const v1::RecordKindStats& k : stats.kinds()) {
    if (k.kind() != "url") continue;
    found = true;
    EXPECT_TRUE(k.has_exact_count());
    EXPECT_EQ(k.exact_count(), 2u);
  }
  EXPECT_TRUE(found) << out;

  // Without --exact: no exact counts.
  absl::StatusOr<v1::StatsResponse> cheap = client_->AdminStats(v1::StatsRequest());
  ASSERT_THAT(cheap, IsOk());
  for (const v1::RecordKindStats& k : cheap->kinds()) EXPECT_FALSE(k.has_exact_count());
}

// Sanitizer builds run every e2e test several times slower: a tenth of the
// records there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kBigNamespaceUrls = 100'000;
#else
constexpr int kBigNamespaceUrls = 1'000'000;
#endif

TEST_F(E2eAdminTest, DropNamespaceBesideAMillionRecordsOfAnother) {
  StartServer({kDrain});
  ClientOptions options;
  options.deadline = absl::Seconds(60);
  options.max_items_per_request = 10'000;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DedupClient> bulk,
                       DedupClient::Connect(server_->address(), options));
  UrlCheckOptions big, small;
  big.name_space = "big";
  small.name_space = "small";
  std::vector<v1::UrlItem> items(10'000);
  for (int b = 0; b < kBigNamespaceUrls / 10'000; ++b) {
    for (int i = 0; i < 10'000; ++i) {
      items[i].set_url(absl::StrCat("https://big.example/", b, "/page-", i));
    }
    ASSERT_OK_AND_ASSIGN(auto r, bulk->CheckUrls(items, v1::CLAIM_MODE_CLAIM, big));
    ASSERT_EQ(r[0].verdict(), v1::URL_VERDICT_NEW) << b;
  }
  std::vector<v1::UrlItem> few(1000);
  for (int i = 0; i < 1000; ++i) few[i].set_url(absl::StrCat("https://big.example/0/page-", i));
  ASSERT_OK_AND_ASSIGN(auto r, bulk->CheckUrls(few, v1::CLAIM_MODE_CLAIM, small));
  ASSERT_EQ(r[999].verdict(), v1::URL_VERDICT_NEW) << "namespaces never see each other";

  const absl::Time start = absl::Now();
  const std::string out = Dedupctl({"admin", "drop-namespace", "small"}, server_->address());
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(out, "{\"found\":true}\n");
  std::printf("drop-namespace beside %d URLs of another namespace: %s (dedupctl start to exit)\n",
              kBigNamespaceUrls, absl::FormatDuration(took).c_str());
  EXPECT_LT(took, absl::Seconds(30)) << "a key-range delete, not a scan";

  ASSERT_OK_AND_ASSIGN(r, bulk->CheckUrls(few, v1::CLAIM_MODE_PEEK, small));
  EXPECT_EQ(r[0].verdict(), v1::URL_VERDICT_NEW) << "small is empty again";
  ASSERT_OK_AND_ASSIGN(r, bulk->CheckUrls(few, v1::CLAIM_MODE_PEEK, big));
  for (const v1::UrlResult& u : r) ASSERT_EQ(u.verdict(), v1::URL_VERDICT_SEEN);
  v1::StatsRequest exact;
  exact.set_exact(true);
  ASSERT_OK_AND_ASSIGN(v1::StatsResponse stats, bulk->AdminStats(exact));
  ASSERT_EQ(stats.namespaces_size(), 1) << "small holds nothing now";
  EXPECT_EQ(stats.namespaces(0).name(), "big");
  EXPECT_EQ(stats.namespaces(0).exact_url_count(), static_cast<uint64_t>(kBigNamespaceUrls));

  std::string err;
  Dedupctl({"admin", "drop-namespace", "bad name"}, server_->address(), /*want_exit=*/2, &err);
  EXPECT_THAT(err, HasSubstr("namespace: byte 3 (0x20)"));
  Dedupctl({"admin", "drop-namespace"}, server_->address(), /*want_exit=*/2, &err);
  EXPECT_THAT(err, HasSubstr("admin drop-namespace needs exactly one NAME"));
}

TEST_F(E2eAdminTest, BadBackupDirectoriesAreRejectedWithAMessage) {
  StartServer({kDrain});
  v1::BackupRequest request;
  EXPECT_THAT(client_->AdminBackup(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  request.set_directory("relative/dir");
  EXPECT_THAT(client_->AdminBackup(request),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("relative")));
  request.set_directory(dir_);  // exists
  EXPECT_THAT(client_->AdminBackup(request),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already exists")));
  request.set_directory(dir_ + "/no/such/parent/backup");
  EXPECT_THAT(client_->AdminBackup(request),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("does not exist")));
  // dedupctl: the message on stderr, exit code 2.
  std::string err;
  Dedupctl({"admin", "backup", dir_}, server_->address(), 2, &err);
  EXPECT_THAT(err, HasSubstr("already exists"));
  Dedupctl({"admin", "backup"}, server_->address(), 2, &err);
  EXPECT_THAT(err, HasSubstr("exactly one DIR"));
}

TEST_F(E2eAdminTest, BackupWhileClaimingRestoreRestartFindsEveryAcknowledgedRecord) {
  StartServer({kDrain});
  // A document with an alias, so the backup holds content records too.
  std::vector<v1::ContentItem> docs(2);
  docs[0].set_url("http://doc.example/a");
  docs[0].set_text("the same text served twice");
  docs[1].set_url("http://doc.example/b");
  docs[1].set_text("the same text served twice");
  ASSERT_THAT(client_->CheckContent(docs, v1::CLAIM_MODE_CLAIM), IsOk());

  // Claim batches on another thread until told to stop (bounded).
  constexpr int kMaxBatches = 3000;
  std::atomic<int> acknowledged{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::thread claimer([&] {
    for (int b = 0; b < kMaxBatches && !stop.load(); ++b) {
      absl::StatusOr<std::vector<v1::UrlResult>> r =
          client_->CheckUrls(Items(BatchUrls(b)), v1::CLAIM_MODE_CLAIM);
      if (!r.ok()) {
        failed.store(true);
        return;
      }
      acknowledged.store(b + 1);
    }
  });
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (acknowledged.load() < 10 && !failed.load() && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  const int before_backup = acknowledged.load();
  const std::string backup = dir_ + "/backup";
  const std::string out = Dedupctl({"admin", "backup", backup}, server_->address());
  stop.store(true);
  claimer.join();
  ASSERT_FALSE(failed.load());
  ASSERT_GE(before_backup, 10);
  v1::BackupResponse done;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &done).ok()) << out;
  EXPECT_EQ(done.directory(), backup);
  EXPECT_GT(done.bytes(), 0u);
  const int all_batches = acknowledged.load();

  // Export from the live server lists exactly the stored URLs.
  std::set<std::string> want = {"http://doc.example/a", "http://doc.example/b"};
  for (int b = 0; b < all_batches; ++b) {
    for (const std::string& u : BatchUrls(b)) want.insert(u);
  }
  int contents = 0, aliases = 0;
  EXPECT_EQ(ExportedUrls(Dedupctl({"admin", "export"}, server_->address()), &contents, &aliases),
            want);
  EXPECT_EQ(contents, 1);
  EXPECT_EQ(aliases, 1);
  ASSERT_THAT(server_->Terminate(), IsOk());

  // Restore into a new data directory, serve, check, restart, check again.
  const std::string restored = dir_ + "/restored";
  std::vector<std::string> acknowledged_urls = {"http://doc.example/a", "http://doc.example/b"};
  for (int b = 0; b < before_backup; ++b) {
    for (const std::string& u : BatchUrls(b)) acknowledged_urls.push_back(u);
  }
  for (int round = 0; round < 2; ++round) {
    std::vector<std::string> flags = {kDrain};
    if (round == 0) flags.push_back("--restore_from=" + backup);
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(DEDUPD_BINARY, restored, flags);
    ASSERT_THAT(s, IsOk());
    ClientOptions options;
    options.deadline = absl::Seconds(30);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<DedupClient> client,
                         DedupClient::Connect((*s)->address(), options));
    ExpectAllSeen(client.get(), acknowledged_urls, v1::URL_VERDICT_SEEN);
    std::vector<v1::ContentItem> again(1);
    again[0].set_url("http://doc.example/c");
    again[0].set_text("the same text served twice");
    absl::StatusOr<std::vector<v1::ContentResult>> r =
        client->CheckContent(again, v1::CLAIM_MODE_PEEK);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ((*r)[0].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
    EXPECT_EQ((*r)[0].owner_url(), "http://doc.example/a");
    // The restored export holds every URL acknowledged before the backup,
    // and nothing that was never claimed.
    const std::set<std::string> exported =
        ExportedUrls(Dedupctl({"admin", "export", "--skip_content"}, (*s)->address()));
    for (const std::string& u : acknowledged_urls) EXPECT_TRUE(exported.count(u)) << u;
    for (const std::string& u : exported) EXPECT_TRUE(want.count(u)) << u;
    ASSERT_THAT((*s)->Terminate(), IsOk());
  }
}

TEST_F(E2eAdminTest, RestoreRefusesANonEmptyDataDirectoryAndANonBackup) {
  StartServer({kDrain});
  ASSERT_THAT(client_->CheckUrls(Items({"http://a.example/1"}), v1::CLAIM_MODE_CLAIM), IsOk());
  const std::string backup = dir_ + "/backup";
  v1::BackupRequest request;
  request.set_directory(backup);
  ASSERT_THAT(client_->AdminBackup(request), IsOk());
  ASSERT_THAT(server_->Terminate(), IsOk());

  // The test's data directory holds the old store: not empty.
  absl::StatusOr<std::unique_ptr<ServerProcess>> s = ServerProcess::Start(
      DEDUPD_BINARY, DataDir(), {"--restore_from=" + backup}, absl::Seconds(30));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("not empty"));
  // A directory that is not a backup.
  std::filesystem::create_directories(dir_ + "/not-a-backup");
  s = ServerProcess::Start(DEDUPD_BINARY, dir_ + "/fresh",
                           {"--restore_from=" + dir_ + "/not-a-backup"}, absl::Seconds(30));
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("not a dedupd backup"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/fresh"));
}

TEST_F(E2eAdminTest, ExportIsCutIntoBoundedMessagesAndACancelFreesTheSlot) {
  StartServer({kDrain});
  constexpr int kUrls = 30000;
  std::vector<std::string> urls;
  for (int i = 0; i < kUrls; ++i) {
    urls.push_back(absl::StrCat("http://bulk.example/a/fairly/long/path/to/page/number/", i));
  }
  ASSERT_THAT(client_->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM), IsOk());

  int messages = 0;
  std::set<std::string> exported;
  v1::ExportRequest request;
  request.set_skip_content(true);
  ASSERT_THAT(client_->AdminExport(request,
                                   [&](const v1::ExportResponse& m) {
                                     ++messages;
                                     // kExportMessageBytes plus one record's slack.
                                     EXPECT_LE(m.ByteSizeLong(), size_t{1} << 21);
                                     for (const v1::ExportRecord& r : m.records()) {
                                       exported.insert(r.url().url());
                                     }
                                     return absl::OkStatus();
                                   }),
              IsOk());
  EXPECT_EQ(exported, std::set<std::string>(urls.begin(), urls.end()));
  EXPECT_GE(messages, 3);  // ~3.4 MB of records

  // A reader that gives up after the first message: its error comes back,
  // and its admission slot is released (more exports than the limit of 4
  // in a row still run).
  for (int i = 0; i < 6; ++i) {
    absl::Status s = client_->AdminExport(
        request, [](const v1::ExportResponse&) { return absl::AbortedError("enough"); });
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kAborted, HasSubstr("enough")));
  }
  // The cancelled streams' slots are released when gRPC finishes them:
  // wait for that, bounded.
  absl::Status last;
  int records = 0;
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (int attempt = 0; attempt < 400; ++attempt) {
    records = 0;
    last = client_->AdminExport(request, [&](const v1::ExportResponse& m) {
      records += m.records_size();
      return absl::OkStatus();
    });
    if (!absl::IsResourceExhausted(last) || absl::Now() > give_up) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(last, IsOk());
  EXPECT_EQ(records, kUrls);
}

TEST_F(E2eAdminTest, ApproximateModeBackupCarriesTheSeenSet) {
  StartServer({kDrain, "--url_seen_mode=approximate", "--url_filter_expected_urls=100000"});
  std::vector<std::string> urls;
  for (int i = 0; i < 200; ++i) urls.push_back(absl::StrCat("http://approx.example/", i));
  ASSERT_THAT(client_->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM), IsOk());
  const std::string backup = dir_ + "/backup";
  v1::BackupRequest request;
  request.set_directory(backup);
  absl::StatusOr<v1::BackupResponse> done = client_->AdminBackup(request);
  ASSERT_THAT(done, IsOk());
  EXPECT_TRUE(done->includes_url_bloom());
  ASSERT_OK_AND_ASSIGN(v1::StatsResponse stats, client_->AdminStats(v1::StatsRequest()));
  EXPECT_EQ(stats.url_seen_mode(), "approximate");
  EXPECT_EQ(stats.approximate_urls_inserted(), 200u);
  ASSERT_THAT(server_->Terminate(), IsOk());

  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(DEDUPD_BINARY, dir_ + "/restored",
                           {kDrain, "--restore_from=" + backup, "--url_seen_mode=approximate",
                            "--url_filter_expected_urls=100000"});
  ASSERT_THAT(s, IsOk());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DedupClient> client,
                       DedupClient::Connect((*s)->address(), ClientOptions()));
  ExpectAllSeen(client.get(), urls, v1::URL_VERDICT_SEEN_PROBABLY);
  ASSERT_THAT((*s)->Terminate(), IsOk());
}

}  // namespace
}  // namespace dedupd
