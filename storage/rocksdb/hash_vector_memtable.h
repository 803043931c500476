// A RocksDB memtable representation for records written in random key
// order and read by whole key: the URL records. RocksDB's default skip list
// keeps every memtable in key order as it is written, which costs a search
// of dozens of cache-missing nodes per insert (half of dedupd's CPU per
// claimed URL, docs/benchmarks.md "URL memtable"). This one appends each
// entry to a vector and indexes it by user key in a hash table; it sorts
// only when an iterator is asked for: once per immutable memtable (its
// flush), and, for the mutable one (scans: export, the URL filter rebuild,
// Stats), just the entries appended since the last sort, merged into the
// previous sorted run.
//
// Reads by key (Get, MultiGet) cost one hash lookup. Iterators see every
// entry inserted before they were created (RocksDB filters by sequence
// number as with any memtable). Concurrent inserts are supported, so the
// database may keep allow_concurrent_memtable_write on.
//
// Memory: 8 bytes per entry in the vector and 17 per slot of the hash
// table, 20-40 per entry by its load (counted in the memtable's size, so RocksDB flushes it at
// write_buffer_size as usual), plus, once iterated, 8 bytes per entry for
// the sorted run and a few dozen bytes per iterator made over the
// memtable's life (neither counted: an immutable memtable's size must not
// change), all freed with the memtable.
//
// Limits, none of which the URL family meets (UrlFamilyOptions in
// rocksdb_options.cc installs the factory only with the bytewise comparator):
// - The user keys must be ordered bytewise (RocksDB's default comparator):
//   the sort compares 8-byte chunks of them. A sample of neighbours is
//   checked against the comparator after each sort (a disagreement falls
//   back to a comparator sort), which catches a different order but is not
//   a proof for one that differs on rare keys.
// - An iterator holds the entries inserted before it was made: RocksDB's
//   Iterator::Refresh with an unchanged memtable, tailing iterators, and
//   the options that iterate the memtable on each write
//   (max_successive_merges, inplace_update_support) would not see later
//   writes, and mempurge (UniqueRandomSample) is not supported.
// - Only for RocksDB 7.8 (the build fails on another version): the lookup
//   key's layout is read directly, as RocksDB does not install its header
//   (see hash_vector_memtable.cc).
#ifndef DEDUPD_STORAGE_ROCKSDB_HASH_VECTOR_MEMTABLE_H_
#define DEDUPD_STORAGE_ROCKSDB_HASH_VECTOR_MEMTABLE_H_

#include <memory>

#include "rocksdb/memtablerep.h"

namespace dedupd {

class HashVectorMemTableRepFactory : public rocksdb::MemTableRepFactory {
 public:
  // Entries are spread over `shards` independently locked parts (a power of
  // two is not required; at least 1).
  explicit HashVectorMemTableRepFactory(int shards = 16);

  using rocksdb::MemTableRepFactory::CreateMemTableRep;
  rocksdb::MemTableRep* CreateMemTableRep(const rocksdb::MemTableRep::KeyComparator& cmp,
                                          rocksdb::Allocator* allocator,
                                          const rocksdb::SliceTransform* prefix_extractor,
                                          rocksdb::Logger* logger) override;
  const char* Name() const override { return "DedupdHashVectorMemTableRepFactory"; }
  bool IsInsertConcurrentlySupported() const override { return true; }
  bool CanHandleDuplicatedKey() const override { return false; }

 private:
  int shards_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_ROCKSDB_HASH_VECTOR_MEMTABLE_H_
