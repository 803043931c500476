// redis_index_mark.h: the Lua script that clears a text record's
// index-pending flag, shared by the content layer (content records) and
// the chunk layer (chunk text records), whose values both start with the
// version byte 01, the flags byte (bit 2: index pending) and the record's
// u32 BE id (doc id, text id): docs/redis_format.md.
//
// Example:
//   router.EvalBatch(IndexMarkScript(), {IndexMarkCall(ContentKey(p, ns, sha), doc_id)});
//
// Thread safety: the script is built once, immutable.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_INDEX_MARK_H_
#define DEDUPD_STORAGE_REDIS_REDIS_INDEX_MARK_H_

#include <cstdint>
#include <string>

#include "storage/redis/cluster_router.h"

namespace dedupd::redis {

// IndexMarkScript: KEYS[1] the record, ARGV[1] the id (u32 BE) the caller
// indexed. Clears the pending flag if the record still has that id and the
// flag is set; returns 1 when it cleared it, else 0 (a record gone, of
// another id, not of version 01, or already clear is left alone).
const Script& IndexMarkScript();

// IndexMarkCall returns the IndexMarkScript call that clears `record_key`'s
// pending flag if the record still has `id` (passed as u32 BE).
ScriptCall IndexMarkCall(std::string record_key, uint32_t id);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_INDEX_MARK_H_
