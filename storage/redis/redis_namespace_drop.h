// redis_namespace_drop.h: Admin.DropNamespace on the Redis Cluster backend.
// Every record of one namespace under one key prefix — URL, content and
// chunk keys (docs/redis_format.md) — is found with SCAN MATCH on every
// master and deleted with UNLINK, page by page. Not atomic: see
// docs/redis_format.md, "Dropping a namespace".
//
// Example:
//   absl::StatusOr<redis::NamespaceDropResult> dropped =
//       redis::DropNamespace(&url_store->router(), url_store->key_prefix(), "crawl-7");
//   if (!dropped.ok()) return dropped.status();
//   bool found = dropped->keys_deleted > 0;
//
// Thread safety: the functions are thread-safe (the router is); several
// drops may run at once.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_NAMESPACE_DROP_H_
#define DEDUPD_STORAGE_REDIS_REDIS_NAMESPACE_DROP_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/redis/cluster_router.h"

namespace dedupd::redis {

// GlobEscape returns `literal` with a backslash before each of the glob
// metacharacters `*`, `?`, `[`, `]` and `\`, so that a SCAN MATCH pattern
// built from it matches those bytes literally.
// Example: GlobEscape("a*b") == "a\\*b".
std::string GlobEscape(absl::string_view literal);

// NamespaceScanPattern returns the SCAN MATCH pattern for the records of
// `name_space` under `prefix`: prefix + "*:" + name_space + ":*", both
// parts escaped (GlobEscape). Every record of the namespace matches it; so
// may a few keys that are not (a URL record of another namespace whose URL
// holds ":<name_space>:"), which IsNamespaceKey sorts out.
// REQUIRES: CheckKeyPrefix(prefix), CheckNamespace(name_space).
std::string NamespaceScanPattern(absl::string_view prefix, absl::string_view name_space);

// IsNamespaceKey returns whether `key` is a record of `name_space` under
// `prefix` by the key grammar of docs/redis_format.md: the prefix, a record
// kind, ':', the namespace, ':', then what the kind puts there — a hash tag
// `{...}` (u, c, a, at, fe, r, kt, kh, kd, km, kl, kj), a decimal id (f,
// ki), or a decimal block or band, ':' and hex digits (sh, lb, ksh, klb).
// A namespace has no ':' (CheckNamespace), so namespace "a" never takes a
// key of "ab", and a key of "a" followed by anything else than its kind's
// shape is not taken. The id counters (n:, kn:) are not records here: a
// drop keeps them, so that ids are never handed out twice.
bool IsNamespaceKey(absl::string_view prefix, absl::string_view name_space, absl::string_view key);

// NamespaceDropOptions: how one drop runs.
struct NamespaceDropOptions {
  // The COUNT hint of each SCAN call: keys a master looks at per page, and
  // so about the most keys one UNLINK batch holds. Default: 1000.
  int scan_count = 1000;
  // Called before each SCAN page; returning true stops the drop with
  // Cancelled (what was deleted stays deleted). Default: none.
  std::function<bool()> cancelled;
};

// NamespaceDropResult: what one drop did.
struct NamespaceDropResult {
  // Keys UNLINK removed (keys already gone, e.g. deleted by a concurrent
  // drop, are not counted).
  uint64_t keys_deleted = 0;
  // Masters scanned.
  int masters = 0;
};

// DropNamespace deletes every record of `name_space` under `prefix`
// (IsNamespaceKey): SCAN MATCH NamespaceScanPattern on each master of the
// router's slot map, one after another, and per page one pipelined batch of
// single-key UNLINKs routed by key (so a key whose slot moved meanwhile is
// still found). Idempotent: a failed or cancelled drop is finished by
// running it again. Not atomic and not isolated: records written in the
// namespace while it runs may survive it (docs/redis_format.md).
// Errors: InvalidArgument for the empty namespace or a bad name (nothing
// deleted); Unavailable when the slot map has a slot without a master
// (nothing deleted), a master cannot be scanned or an UNLINK fails (naming
// the node; the keys deleted before stay deleted); Cancelled when
// `options.cancelled` says so; the error reply's status
// (StatusFromErrorReply) when a node answers SCAN or UNLINK with an error.
// Time: one SCAN page per scan_count keys of each master, whatever the
// namespace's size: proportional to the cluster's key count.
absl::StatusOr<NamespaceDropResult> DropNamespace(ClusterRouter* router, absl::string_view prefix,
                                                  absl::string_view name_space,
                                                  const NamespaceDropOptions& options = {});

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_NAMESPACE_DROP_H_
