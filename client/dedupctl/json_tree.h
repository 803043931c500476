// json_tree.h: the nested JSON input of `chunks` and `results` (arrays of
// chunks, of hits, of embedding elements), which ParseJsonFlatObject does
// not read: parsed with protobuf's JSON parser into a
// google::protobuf::Value tree, then mapped onto a request with the checks
// below. Numbers in the tree are doubles, so integers are checked to be
// whole and in range, and ids must be strings (a double would silently
// round ids above 2^53). Every error is InvalidArgument naming the member
// ("\"hits[0].score\" must be a number, not a string").
//
// Example:
//   DEDUPD_ASSIGN_OR_RETURN(const google::protobuf::Value v,
//                           ParseJsonValue(R"({"top_k":3})"));
//   DEDUPD_ASSIGN_OR_RETURN(const uint32_t k,
//                           WholeNumber(*Member(v.struct_value(), "top_k"),
//                                       "top_k", 1));
//
// Thread-safe: pure functions.
#ifndef DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_
#define DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/struct.pb.h"

namespace dedupd::dedupctl {

// ParseJsonValue parses `json` as exactly one JSON value (protobuf's
// parser: RFC 8259, also accepting single quotes and a trailing comma;
// duplicate member names are an error). Returns InvalidArgument
// "invalid JSON: <protobuf's reason> (near: <input around the error>)".
absl::StatusOr<google::protobuf::Value> ParseJsonValue(absl::string_view json);

// JsonKindName: "null", "a number", "a string", "a boolean", "an object",
// "an array".
absl::string_view JsonKindName(const google::protobuf::Value& value);

// WrongType: InvalidArgument "\"<path>\" must be <want>, not <kind of got>".
absl::Status WrongType(absl::string_view path, absl::string_view want,
                       const google::protobuf::Value& got);

// Member returns `object`'s member `name`, or nullptr when it is absent or
// null (null counts as absent everywhere). The pointer lives as long as
// `object`.
const google::protobuf::Value* Member(const google::protobuf::Struct& object,
                                      const std::string& name);

// StringMember stores `object`'s string member `name` in `*out`. Returns
// InvalidArgument naming `path` when it is not a string, or when it is
// absent and `required`.
absl::Status StringMember(const google::protobuf::Struct& object,
                          const std::string& name, absl::string_view path,
                          bool required, std::string* out);

// WholeNumber returns `value` as an integer in min..4294967295. Returns
// InvalidArgument naming `path` for anything else (a fraction, out of
// range, not a number).
absl::StatusOr<uint32_t> WholeNumber(const google::protobuf::Value& value,
                                     absl::string_view path, uint32_t min);

// Number returns `value` as a double. Returns InvalidArgument naming
// `path` when it is not a number. (JSON has no NaN or infinity; protobuf's
// parser rejects numbers beyond the double range.)
absl::StatusOr<double> Number(const google::protobuf::Value& value,
                              absl::string_view path);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_JSON_TREE_H_
