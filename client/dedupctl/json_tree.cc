#include "client/dedupctl/json_tree.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "google/protobuf/util/json_util.h"

namespace dedupd::dedupctl {

absl::StatusOr<google::protobuf::Value> ParseJsonValue(absl::string_view json) {
  google::protobuf::Value value;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &value);
  if (status.ok()) return value;
  // protobuf's message is "<reason>\n<input around the error, about 20
  // bytes either side>\n<spaces>^": keep the reason and the excerpt (its
  // line breaks as spaces), on one line.
  const std::string reason(status.message().data(), status.message().size());
  const size_t first = reason.find('\n');
  const size_t last = reason.rfind('\n');
  std::string message = "invalid JSON";
  if (!IsBlank(reason.substr(0, first))) {
    absl::StrAppend(&message, ": ", reason.substr(0, first));
  }
  if (first != std::string::npos && last > first) {
    const std::string excerpt = absl::StrReplaceAll(
        reason.substr(first + 1, last - first - 1), {{"\n", " "}, {"\r", " "}});
    if (!IsBlank(excerpt)) {
      absl::StrAppend(&message, " (near: ", absl::StripAsciiWhitespace(excerpt),
                      ")");
    }
  }
  return absl::InvalidArgumentError(message);
}

absl::string_view JsonKindName(const google::protobuf::Value& value) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kNullValue:
      return "null";
    case google::protobuf::Value::kNumberValue:
      return "a number";
    case google::protobuf::Value::kStringValue:
      return "a string";
    case google::protobuf::Value::kBoolValue:
      return "a boolean";
    case google::protobuf::Value::kStructValue:
      return "an object";
    case google::protobuf::Value::kListValue:
      return "an array";
    default:
      return "nothing";
  }
}

absl::Status WrongType(absl::string_view path, absl::string_view want,
                       const google::protobuf::Value& got) {
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", path, "\" must be ", want, ", not ", JsonKindName(got)));
}

const google::protobuf::Value* Member(const google::protobuf::Struct& object,
                                      const std::string& name) {
  auto it = object.fields().find(name);
  if (it == object.fields().end() ||
      it->second.kind_case() == google::protobuf::Value::kNullValue) {
    return nullptr;
  }
  return &it->second;
}

absl::Status StringMember(const google::protobuf::Struct& object,
                          const std::string& name, absl::string_view path,
                          bool required, std::string* out) {
  const google::protobuf::Value* v = Member(object, name);
  if (v == nullptr) {
    return required ? absl::InvalidArgumentError(
                          absl::StrCat("missing \"", path, "\""))
                    : absl::OkStatus();
  }
  if (v->kind_case() != google::protobuf::Value::kStringValue) {
    return WrongType(path, "a string", *v);
  }
  *out = v->string_value();
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> WholeNumber(const google::protobuf::Value& value,
                                     absl::string_view path, uint32_t min) {
  constexpr uint32_t kMax = UINT32_MAX;
  const std::string want = absl::StrCat("a whole number in ", min, "..", kMax);
  if (value.kind_case() != google::protobuf::Value::kNumberValue) {
    return WrongType(path, want, value);
  }
  const double d = value.number_value();
  if (!(d >= min && d <= kMax && d == std::floor(d))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" must be ", want, ", not ", JsonNumber(d)));
  }
  return static_cast<uint32_t>(d);
}

absl::StatusOr<double> Number(const google::protobuf::Value& value,
                              absl::string_view path) {
  if (value.kind_case() != google::protobuf::Value::kNumberValue) {
    return WrongType(path, "a number", value);
  }
  return value.number_value();
}

}  // namespace dedupd::dedupctl
