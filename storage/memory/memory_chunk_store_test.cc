#include "storage/memory/memory_chunk_store.h"

#include <memory>

#include "gtest/gtest.h"
#include "storage/testing/chunk_store_conformance.h"

namespace dedupd::testing {
namespace {

class MemoryChunkHarness : public ChunkStoreHarness {
 public:
  ChunkStore& chunks() override { return store_; }
  absl::StatusOr<bool> Reopen() override { return false; }

 private:
  MemoryChunkStore store_{3};
};

INSTANTIATE_TEST_SUITE_P(Memory, ChunkStoreConformanceTest,
                         ::testing::Values(ChunkStoreBackend{
                             "Memory",
                             []() -> absl::StatusOr<std::unique_ptr<ChunkStoreHarness>> {
                               return std::make_unique<MemoryChunkHarness>();
                             }}),
                         ChunkStoreBackendName);

}  // namespace
}  // namespace dedupd::testing
