// json_tree.h: the nested JSON input of `chunks` and `results` (arrays of
// chunks, of hits, of embedding elements): parsed with ParseJsonValue
// (client/json.h) into a JsonValue tree, then mapped onto a request with
// the checks below. Numbers in the tree are doubles, so integers are
// checked to be whole and in range, and ids must be strings (a double
// would silently round ids above 2^53). Every error is InvalidArgument
// naming the member ("\"hits[0].score\" must be a number, not a string").
//
// Example:
//   DEDUPD_ASSIGN_OR_RETURN(const JsonValue v, ParseInputJson(R"({"k":3})"));
//   DEDUPD_ASSIGN_OR_RETURN(const uint32_t k,
//                           WholeNumber(*Member(v, "k"), "k", 1));
//
// Thread-safe: pure functions.
#ifndef DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_
#define DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/json.h"

namespace dedupd::dedupctl {

// ParseInputJson parses `json` as exactly one JSON value (ParseJsonValue:
// RFC 8259, also single-quoted strings and a trailing comma; duplicate
// member names are an error). Returns InvalidArgument "invalid JSON:
// <reason, as a sentence> (near: <the input about 20 bytes either side of
// the error>)", e.g. "invalid JSON: Unexpected token. (near: not json)".
absl::StatusOr<JsonValue> ParseInputJson(absl::string_view json);

// JsonKindName: "null", "a number", "a string", "a boolean", "an object",
// "an array".
absl::string_view JsonKindName(const JsonValue& value);

// WrongType: InvalidArgument "\"<path>\" must be <want>, not <kind of got>".
absl::Status WrongType(absl::string_view path, absl::string_view want, const JsonValue& got);

// Member returns the object `object`'s member `name`, or nullptr when it is
// absent or null (null counts as absent everywhere). The pointer lives as
// long as `object`.
const JsonValue* Member(const JsonValue& object, absl::string_view name);

// StringMember stores `object`'s string member `name` in `*out`. Returns
// InvalidArgument naming `path` when it is not a string, or when it is
// absent and `required`.
absl::Status StringMember(const JsonValue& object, absl::string_view name, absl::string_view path,
                          bool required, std::string* out);

// WholeNumber returns `value` as an integer in min..4294967295. Returns
// InvalidArgument naming `path` for anything else (a fraction, out of
// range, not a number).
absl::StatusOr<uint32_t> WholeNumber(const JsonValue& value, absl::string_view path, uint32_t min);

// Number returns `value` as a double. Returns InvalidArgument naming
// `path` when it is not a number. (JSON has no NaN or infinity;
// ParseJsonValue rejects numbers beyond the double range.)
absl::StatusOr<double> Number(const JsonValue& value, absl::string_view path);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_
