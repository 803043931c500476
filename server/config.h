// config.h: the server's config file (protobuf text format, schema in
// proto/dedupd/config/v1/config.proto) turned into the core's policy
// objects. Shared by dedupd and `dedupctl normalize --config`.
//
// Example:
//   absl::StatusOr<DedupConfig> c = LoadConfigFile("/etc/dedupd.conf");
//   if (!c.ok()) { std::cerr << c.status().message() << "\n"; return 2; }
//   UrlNormalizer normalizer(c->url_policy);
#ifndef DEDUPD_SERVER_CONFIG_H_
#define DEDUPD_SERVER_CONFIG_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/url/revisit_policy.h"
#include "core/url/url_policy.h"

namespace dedupd {

// Everything the config file sets. Default-constructed: the built-in
// defaults (no host rules).
struct DedupConfig {
  UrlPolicy url_policy;
  RevisitPolicy revisit_policy;
};

// ParseConfig parses config text. `source_name` (a path) prefixes errors.
// Returns InvalidArgument "<source>:<line>:<column>: <what>" for a syntax
// error or an unknown field, "<source>: host_rules[i]: <what>" for a rule
// the policy rejects, and "<source>: revisit_rules[i]: <what>" for a bad
// revisit rule (a bad namespace, a host pattern, two rules of one scope).
absl::StatusOr<DedupConfig> ParseConfig(absl::string_view text, absl::string_view source_name);

// LoadConfigFile reads and parses the file at `path`. An empty path gives
// the defaults. Returns NotFound/PermissionDenied/InvalidArgument with the
// path in the message.
absl::StatusOr<DedupConfig> LoadConfigFile(const std::string& path);

}  // namespace dedupd

#endif  // DEDUPD_SERVER_CONFIG_H_
