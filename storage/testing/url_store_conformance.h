// url_store_conformance.h: the behaviour every UrlStore backend must have,
// as one parameterized GoogleTest suite. A backend's test instantiates it
// with a factory for fresh, empty stores; the tests themselves live in
// url_store_conformance.cc, which each backend's test executable compiles
// in (SRCS, not a library: the linker would drop unreferenced test
// registrations from a static library).
//
// Example (in memory_url_store_test.cc):
//   INSTANTIATE_TEST_SUITE_P(
//       Memory, UrlStoreConformanceTest,
//       ::testing::Values(UrlStoreBackend{"Memory", [] { ... }}),
//       UrlStoreBackendName);
//
// Thread safety: test code; each test owns its store.
#ifndef DEDUPD_STORAGE_TESTING_URL_STORE_CONFORMANCE_H_
#define DEDUPD_STORAGE_TESTING_URL_STORE_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "storage/url_store.h"

namespace dedupd::testing {

// One fresh, empty store and whatever keeps it alive (a temp directory, an
// open database). Destroying the harness destroys the store first.
class UrlStoreHarness {
 public:
  virtual ~UrlStoreHarness() = default;
  // store returns the store under test; it lives as long as the harness.
  virtual UrlStore& store() = 0;
  // second_front_end returns another store over the same records — a
  // second front end of a shared backend (another RedisUrlStore on the
  // same cluster and key prefix) — or null when the backend has no such
  // thing (the default). The concurrency tests spread their threads over
  // both, so "exactly one NEW" is held across front ends too.
  virtual UrlStore* second_front_end() { return nullptr; }
};

// A named backend: `make` returns a new harness holding an empty store.
// `approximate`: the store is approximate (UrlStore::approximate): a seen
// key's time is absl::InfinitePast() instead of its first-seen time, which
// is all the suite relaxes (is_new and presence are held to the exact
// answers, so the backend must be sized to make false positives
// negligible for the suite's few thousand keys).
struct UrlStoreBackend {
  std::string name;
  std::function<absl::StatusOr<std::unique_ptr<UrlStoreHarness>>()> make;
  bool approximate = false;
};

// Prints the backend's name (GoogleTest would print the bytes otherwise).
inline void PrintTo(const UrlStoreBackend& backend, std::ostream* os) { *os << backend.name; }

// Test-name generator for INSTANTIATE_TEST_SUITE_P.
inline std::string UrlStoreBackendName(const ::testing::TestParamInfo<UrlStoreBackend>& info) {
  return info.param.name;
}

class UrlStoreConformanceTest : public ::testing::TestWithParam<UrlStoreBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;
  UrlStore& store() { return harness_->store(); }
  // FrontEnd returns the store thread `t` of a concurrency test uses: odd
  // threads the second front end, when the backend has one.
  UrlStore& FrontEnd(int t) {
    UrlStore* second = harness_->second_front_end();
    return (t % 2 == 1 && second != nullptr) ? *second : store();
  }
  // Seen returns the time a seen key first recorded at `t` reports:
  // `t`, or absl::InfinitePast() for an approximate backend.
  absl::Time Seen(absl::Time t) const { return GetParam().approximate ? absl::InfinitePast() : t; }

 private:
  std::unique_ptr<UrlStoreHarness> harness_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_TESTING_URL_STORE_CONFORMANCE_H_
