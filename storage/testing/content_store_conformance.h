// content_store_conformance.h: the behaviour every ContentStore backend
// must have, as one parameterized GoogleTest suite (the pattern of
// url_store_conformance.h). A backend's test instantiates it with a factory
// for fresh, empty stores; the tests live in content_store_conformance.cc,
// which each backend's test executable compiles in.
//
// Example (in memory_content_store_test.cc):
//   INSTANTIATE_TEST_SUITE_P(
//       Memory, ContentStoreConformanceTest,
//       ::testing::Values(ContentStoreBackend{"Memory", [] { ... }}),
//       ContentStoreBackendName);
//
// Thread safety: test code; each test owns its store.
#ifndef DEDUPD_STORAGE_TESTING_CONTENT_STORE_CONFORMANCE_H_
#define DEDUPD_STORAGE_TESTING_CONTENT_STORE_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "storage/content_store.h"
#include "storage/url_store.h"

namespace dedupd::testing {

// One fresh, empty store (max near distance 3) and whatever keeps it alive.
// Reopen, when the backend is durable, closes the store and opens it again
// on the same data (the tests then check nothing was lost); it returns
// false when the backend cannot reopen (memory). content() and urls() name
// the reopened store afterwards.
class ContentStoreHarness {
 public:
  virtual ~ContentStoreHarness() = default;
  virtual ContentStore& content() = 0;
  // The URL seen-set the content store adds identity and fetched URLs to.
  virtual UrlStore& urls() = 0;
  virtual absl::StatusOr<bool> Reopen() = 0;
};

struct ContentStoreBackend {
  std::string name;
  std::function<absl::StatusOr<std::unique_ptr<ContentStoreHarness>>()> make;
};

inline void PrintTo(const ContentStoreBackend& backend, std::ostream* os) { *os << backend.name; }

inline std::string ContentStoreBackendName(
    const ::testing::TestParamInfo<ContentStoreBackend>& info) {
  return info.param.name;
}

class ContentStoreConformanceTest : public ::testing::TestWithParam<ContentStoreBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;
  ContentStore& content() { return harness_->content(); }
  UrlStore& urls() { return harness_->urls(); }
  ContentStoreHarness& harness() { return *harness_; }

 private:
  std::unique_ptr<ContentStoreHarness> harness_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_TESTING_CONTENT_STORE_CONFORMANCE_H_
