#include "storage/memory/memory_url_store.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/testing/url_store_conformance.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

class MemoryHarness : public UrlStoreHarness {
 public:
  UrlStore& store() override { return store_; }

 private:
  MemoryUrlStore store_;
};

INSTANTIATE_TEST_SUITE_P(Memory, UrlStoreConformanceTest,
                         ::testing::Values(UrlStoreBackend{
                             "Memory",
                             []() -> absl::StatusOr<std::unique_ptr<UrlStoreHarness>> {
                               return std::make_unique<MemoryHarness>();
                             }}),
                         UrlStoreBackendName);

TEST(MemoryUrlStoreTest, SizeCountsDistinctKeys) {
  MemoryUrlStore store;
  std::vector<UrlClaim> out;
  ASSERT_THAT(store.ClaimUrls({"a", "b", "a"}, absl::UnixEpoch(), &out), IsOk());
  EXPECT_EQ(store.size(), 2u);
}

}  // namespace
}  // namespace dedupd::testing
