#include "storage/memory/memory_content_store.h"

#include <memory>

#include "gtest/gtest.h"
#include "storage/memory/memory_url_store.h"
#include "storage/testing/content_store_conformance.h"

namespace dedupd::testing {
namespace {

class MemoryContentHarness : public ContentStoreHarness {
 public:
  ContentStore& content() override { return content_; }
  UrlStore& urls() override { return urls_; }
  absl::StatusOr<bool> Reopen() override { return false; }

 private:
  MemoryUrlStore urls_;
  MemoryContentStore content_{&urls_, 3};
};

INSTANTIATE_TEST_SUITE_P(Memory, ContentStoreConformanceTest,
                         ::testing::Values(ContentStoreBackend{
                             "Memory",
                             []() -> absl::StatusOr<std::unique_ptr<ContentStoreHarness>> {
                               return std::make_unique<MemoryContentHarness>();
                             }}),
                         ContentStoreBackendName);

}  // namespace
}  // namespace dedupd::testing
