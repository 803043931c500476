#include "storage/redis/redis_namespace_drop.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "storage/redis/redis_status.h"
#include "storage/redis/redis_url_format.h"
#include "storage/url_store.h"

namespace dedupd::redis {
namespace {

// The record kinds of redis_format.md by what follows "<kind>:<ns>:".
// Tagged: a hash tag, then the text's or URL's part.
constexpr absl::string_view kTaggedKinds[] = {"u",  "c",  "a",  "at", "fe", "r",
                                              "kt", "kh", "kd", "km", "kl", "kj"};
// A decimal id (doc id, chunk text id).
constexpr absl::string_view kIdKinds[] = {"f", "ki"};
// A decimal block or band, ':', hex digits (SimHash and LSH buckets).
constexpr absl::string_view kBucketKinds[] = {"sh", "lb", "ksh", "klb"};

template <size_t N>
bool OneOf(absl::string_view kind, const absl::string_view (&kinds)[N]) {
  return std::find(std::begin(kinds), std::end(kinds), kind) != std::end(kinds);
}

// AllOf: `s` is not empty and `is` holds for each of its bytes.
bool AllOf(absl::string_view s, bool (*is)(unsigned char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [is](char c) { return is(static_cast<unsigned char>(c)); });
}

// What a drop's error says after its cause.
std::string Progress(const NamespaceDropResult& done) {
  return absl::StrCat(" (", done.keys_deleted,
                      " keys deleted before; run the drop again to finish it)");
}

}  // namespace

std::string GlobEscape(absl::string_view literal) {
  std::string out;
  out.reserve(literal.size());
  for (char c : literal) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string NamespaceScanPattern(absl::string_view prefix, absl::string_view name_space) {
  return absl::StrCat(GlobEscape(prefix), "*:", GlobEscape(name_space), ":*");
}

bool IsNamespaceKey(absl::string_view prefix, absl::string_view name_space, absl::string_view key) {
  if (!absl::ConsumePrefix(&key, prefix)) return false;
  const size_t colon = key.find(':');
  if (colon == absl::string_view::npos) return false;
  const absl::string_view kind = key.substr(0, colon);
  absl::string_view rest = key.substr(colon + 1);
  if (!absl::ConsumePrefix(&rest, name_space) || !absl::ConsumePrefix(&rest, ":")) return false;
  if (OneOf(kind, kTaggedKinds)) {
    // "{tag}...": the tag is never empty (8 or 64 hex digits).
    const size_t close = rest.find('}');
    return absl::StartsWith(rest, "{") && close != absl::string_view::npos && close > 1;
  }
  if (OneOf(kind, kIdKinds)) return AllOf(rest, absl::ascii_isdigit);
  if (OneOf(kind, kBucketKinds)) {
    const size_t sep = rest.find(':');
    if (sep == absl::string_view::npos) return false;
    return AllOf(rest.substr(0, sep), absl::ascii_isdigit) &&
           AllOf(rest.substr(sep + 1), absl::ascii_isxdigit);
  }
  return false;
}

absl::StatusOr<NamespaceDropResult> DropNamespace(ClusterRouter* router, absl::string_view prefix,
                                                  absl::string_view name_space,
                                                  const NamespaceDropOptions& options) {
  if (name_space.empty()) {
    return absl::InvalidArgumentError(
        "namespace: the empty namespace cannot be dropped (DropNamespace takes named namespaces "
        "only, as on the embedded store): forget its URLs, or start a new key prefix");
  }
  if (absl::Status s = CheckNamespace(name_space); !s.ok()) return s;
  if (absl::Status s = CheckKeyPrefix(prefix); !s.ok()) return s;
  const std::string pattern = NamespaceScanPattern(prefix, name_space);
  const std::string count = absl::StrCat(std::max(options.scan_count, 1));
  const std::string what = absl::StrCat("drop namespace ", name_space);
  // A slot without a master is a part of the keyspace no SCAN would see:
  // answering "dropped" then would be a lie.
  if (!router->SlotMapComplete()) {
    return absl::UnavailableError(absl::StrCat(
        what, ": the cluster's slot map has slots without a master; retry when it is whole"));
  }
  NamespaceDropResult done;
  for (const std::string& master : router->Masters()) {
    std::string cursor = "0";
    do {
      if (options.cancelled && options.cancelled()) {
        return absl::CancelledError(absl::StrCat(what, ": cancelled", Progress(done)));
      }
      absl::StatusOr<Value> page =
          router->ExecuteOnNode(master, {"SCAN", cursor, "MATCH", pattern, "COUNT", count});
      if (!page.ok()) {
        return absl::Status(
            page.status().code(),
            absl::StrCat(what, ": SCAN: ", page.status().message(), Progress(done)));
      }
      if (page->is_error()) {
        const absl::Status s =
            StatusFromErrorReply(absl::StrCat(what, ": SCAN on redis node ", master), *page);
        return absl::Status(s.code(), absl::StrCat(s.message(), Progress(done)));
      }
      if (page->type != Value::Type::kArray || page->elements.size() != 2 ||
          page->elements[0].type != Value::Type::kString ||
          page->elements[1].type != Value::Type::kArray) {
        return absl::InternalError(
            absl::StrCat(what, ": redis node ", master, " answered SCAN with ",
                         absl::StrFormat("%s", absl::FormatStreamed(*page)), Progress(done)));
      }
      cursor = page->elements[0].str;
      std::vector<Command> unlinks;
      for (const Value& key : page->elements[1].elements) {
        if (key.type != Value::Type::kString || !IsNamespaceKey(prefix, name_space, key.str)) {
          continue;
        }
        // One key per UNLINK: the keys of a page lie in many slots, and a
        // multi-key UNLINK must stay in one (CROSSSLOT).
        unlinks.push_back(Command::ForKey(key.str, {"UNLINK", key.str}));
      }
      if (unlinks.empty()) continue;
      std::vector<absl::StatusOr<Value>> replies = router->Execute(unlinks);
      for (size_t i = 0; i < replies.size(); ++i) {
        const absl::StatusOr<Value>& r = replies[i];
        const std::string key_what = absl::StrCat(what, ": UNLINK ", unlinks[i].key);
        if (!r.ok()) {
          return absl::Status(r.status().code(),
                              absl::StrCat(key_what, ": ", r.status().message(), Progress(done)));
        }
        if (r->is_error()) {
          const absl::Status s = StatusFromErrorReply(key_what, *r);
          return absl::Status(s.code(), absl::StrCat(s.message(), Progress(done)));
        }
        if (r->type == Value::Type::kInteger && r->integer > 0) {
          done.keys_deleted += static_cast<uint64_t>(r->integer);
        }
      }
    } while (cursor != "0");
    ++done.masters;
  }
  return done;
}

}  // namespace dedupd::redis
