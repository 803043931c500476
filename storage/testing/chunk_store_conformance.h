// chunk_store_conformance.h: the behaviour every ChunkStore backend must
// have, as one parameterized GoogleTest suite (the pattern of
// content_store_conformance.h). A backend's test instantiates it with a
// factory for fresh, empty stores; the tests live in
// chunk_store_conformance.cc, which each backend's test executable compiles
// in.
//
// Example (in memory_chunk_store_test.cc):
//   INSTANTIATE_TEST_SUITE_P(
//       Memory, ChunkStoreConformanceTest,
//       ::testing::Values(ChunkStoreBackend{"Memory", [] { ... }}),
//       ChunkStoreBackendName);
//
// Thread safety: test code; each test owns its store.
#ifndef DEDUPD_STORAGE_TESTING_CHUNK_STORE_CONFORMANCE_H_
#define DEDUPD_STORAGE_TESTING_CHUNK_STORE_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "storage/chunk_store.h"

namespace dedupd::testing {

// One fresh, empty store (max near distance 3) and whatever keeps it alive.
// Reopen, when the backend is durable, closes the store and opens it again
// on the same data (the tests then check nothing was lost); it returns
// false when the backend cannot reopen (memory).
class ChunkStoreHarness {
 public:
  virtual ~ChunkStoreHarness() = default;
  virtual ChunkStore& chunks() = 0;
  virtual absl::StatusOr<bool> Reopen() = 0;
};

struct ChunkStoreBackend {
  std::string name;
  std::function<absl::StatusOr<std::unique_ptr<ChunkStoreHarness>>()> make;
};

inline void PrintTo(const ChunkStoreBackend& backend, std::ostream* os) { *os << backend.name; }

inline std::string ChunkStoreBackendName(const ::testing::TestParamInfo<ChunkStoreBackend>& info) {
  return info.param.name;
}

class ChunkStoreConformanceTest : public ::testing::TestWithParam<ChunkStoreBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;
  ChunkStore& chunks() { return harness_->chunks(); }
  ChunkStoreHarness& harness() { return *harness_; }

 private:
  std::unique_ptr<ChunkStoreHarness> harness_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_TESTING_CHUNK_STORE_CONFORMANCE_H_
