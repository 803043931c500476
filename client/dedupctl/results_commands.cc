// `dedupctl results dedup`: one JSON hit list in, one DedupResults call,
// one JSON decision out.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/json_tree.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/json.h"
#include "common/status_macros.h"
#include "dedupd/v1/dedupd.pb.h"

namespace dedupd::dedupctl {
namespace {

// The most input read (one JSON value, held whole).
constexpr size_t kMaxResultsInputBytes = 64 << 20;

// ParseHit maps one hit object onto `*hit`: "id", "text" (strings) and
// "score" (number) required; "source_url" (string) and "embedding" (array
// of numbers within the float range) optional; null counts as absent,
// other members are ignored.
absl::Status ParseHit(const JsonValue& value, absl::string_view path, dedupd::v1::ResultHit* hit) {
  if (value.type != JsonValue::Type::kObject) {
    return WrongType(path, "an object", value);
  }
  const JsonValue& object = value;
  DEDUPD_RETURN_IF_ERROR(
      StringMember(object, "id", absl::StrCat(path, ".id"), true, hit->mutable_id()));
  std::string text;
  DEDUPD_RETURN_IF_ERROR(StringMember(object, "text", absl::StrCat(path, ".text"), true, &text));
  hit->set_text(std::move(text));
  const JsonValue* score = Member(object, "score");
  if (score == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("missing \"", path, ".score\""));
  }
  DEDUPD_ASSIGN_OR_RETURN(const double s, Number(*score, absl::StrCat(path, ".score")));
  hit->set_score(s);
  DEDUPD_RETURN_IF_ERROR(StringMember(object, "source_url", absl::StrCat(path, ".source_url"),
                                      false, hit->mutable_source_url()));
  if (const JsonValue* e = Member(object, "embedding")) {
    const std::string epath = absl::StrCat(path, ".embedding");
    if (e->type != JsonValue::Type::kArray) {
      return WrongType(epath, "an array of numbers", *e);
    }
    hit->mutable_embedding()->Reserve(static_cast<int>(e->array.size()));
    for (size_t j = 0; j < e->array.size(); ++j) {
      const std::string xpath = absl::StrCat(epath, "[", j, "]");
      DEDUPD_ASSIGN_OR_RETURN(const double x, Number(e->array[j], xpath));
      if (std::fabs(x) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", xpath, "\" is outside the float range: ", JsonNumber(x)));
      }
      hit->add_embedding(static_cast<float>(x));
    }
  }
  return absl::OkStatus();
}

// ParseResultsInput maps the whole input of `results dedup` onto
// `*request` (docs/dedupctl.md, "results dedup"): a JSON array of hits, or
// an object with "hits" and optional settings "top_k" (1..4294967295),
// "per_source_cap", "max_hamming_distance" (whole numbers
// 0..4294967295), "min_jaccard", "min_cosine" (numbers); at most one of
// max_hamming_distance and min_jaccard. Null counts as absent; other
// members of the object are an error (a misspelt setting must not pass
// unnoticed). Leaves top_k unset when the input sets none (the server then
// keeps every hit that survives). Returns InvalidArgument saying what is
// wrong.
absl::Status ParseResultsInput(absl::string_view json, dedupd::v1::DedupResultsRequest* request) {
  DEDUPD_ASSIGN_OR_RETURN(const JsonValue value, ParseInputJson(json));
  const std::vector<JsonValue>* hits = nullptr;
  if (value.type == JsonValue::Type::kArray) {
    hits = &value.array;
  } else if (value.type == JsonValue::Type::kObject) {
    const JsonValue& object = value;
    static const char* const kMembers[] = {
        "hits", "top_k", "per_source_cap", "max_hamming_distance", "min_jaccard", "min_cosine"};
    std::vector<std::string> unknown;
    for (const auto& field : object.object) {
      // Not a structured binding: C++17 lambdas cannot capture one (clang).
      const std::string& name = field.first;
      if (std::find_if(std::begin(kMembers), std::end(kMembers),
                       [&](const char* m) { return name == m; }) == std::end(kMembers)) {
        unknown.push_back(name);
      }
    }
    if (!unknown.empty()) {
      std::sort(unknown.begin(), unknown.end());
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown member \"", unknown[0], "\" (the object takes hits, ",
          "top_k, per_source_cap, max_hamming_distance, min_jaccard, ", "min_cosine)"));
    }
    const JsonValue* h = Member(object, "hits");
    if (h == nullptr) return absl::InvalidArgumentError("missing \"hits\"");
    if (h->type != JsonValue::Type::kArray) {
      return WrongType("hits", "an array", *h);
    }
    hits = &h->array;
    if (const JsonValue* v = Member(object, "top_k")) {
      DEDUPD_ASSIGN_OR_RETURN(const uint32_t n, WholeNumber(*v, "top_k", 1));
      request->set_top_k(n);
    }
    if (const JsonValue* v = Member(object, "per_source_cap")) {
      DEDUPD_ASSIGN_OR_RETURN(const uint32_t n, WholeNumber(*v, "per_source_cap", 0));
      request->set_per_source_cap(n);
    }
    const JsonValue* distance = Member(object, "max_hamming_distance");
    const JsonValue* jaccard = Member(object, "min_jaccard");
    if (distance != nullptr && jaccard != nullptr) {
      return absl::InvalidArgumentError(
          "set \"max_hamming_distance\" or \"min_jaccard\", not both");
    }
    if (distance != nullptr) {
      DEDUPD_ASSIGN_OR_RETURN(const uint32_t k, WholeNumber(*distance, "max_hamming_distance", 0));
      request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_SIMHASH);
      request->set_max_hamming_distance(k);
    }
    if (jaccard != nullptr) {
      DEDUPD_ASSIGN_OR_RETURN(const double j, Number(*jaccard, "min_jaccard"));
      request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_JACCARD);
      request->set_min_jaccard(j);
    }
    if (const JsonValue* v = Member(object, "min_cosine")) {
      DEDUPD_ASSIGN_OR_RETURN(const double c, Number(*v, "min_cosine"));
      request->set_min_cosine(c);
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("the input must be a JSON array of hits or an object with \"hits\", "
                     "not ",
                     JsonKindName(value)));
  }
  if (hits->empty()) {
    return absl::InvalidArgumentError("no hits (\"hits\" is empty)");
  }
  request->mutable_hits()->Reserve(static_cast<int>(hits->size()));
  for (size_t i = 0; i < hits->size(); ++i) {
    DEDUPD_RETURN_IF_ERROR(
        ParseHit((*hits)[i], absl::StrCat("hits[", i, "]"), request->add_hits()));
  }
  return absl::OkStatus();
}

// ApplyResultsFlags overrides the input's settings with the flags'. A
// measure flag replaces the input's measure with its own setting.
void ApplyResultsFlags(const ResultsOptions& flags, dedupd::v1::DedupResultsRequest* request) {
  if (flags.top_k) request->set_top_k(*flags.top_k);
  if (flags.per_source_cap) request->set_per_source_cap(*flags.per_source_cap);
  if (flags.max_hamming_distance) {
    request->clear_min_jaccard();
    request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_SIMHASH);
    request->set_max_hamming_distance(*flags.max_hamming_distance);
  }
  if (flags.min_jaccard) {
    request->clear_max_hamming_distance();
    request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_JACCARD);
    request->set_min_jaccard(*flags.min_jaccard);
  }
  if (flags.min_cosine) request->set_min_cosine(*flags.min_cosine);
}

// The one output line of `results dedup` (docs/dedupctl.md).
std::string ResultsLine(const dedupd::v1::DedupResultsResponse& response) {
  std::vector<std::string> kept;
  kept.reserve(response.kept_size());
  for (const dedupd::v1::KeptHit& k : response.kept()) {
    JsonObjectWriter json;
    json.Uint("index", k.index()).String("id", k.id());
    kept.push_back(WithRawMember(std::move(json).Finish(), "score", JsonNumber(k.score())));
  }
  std::vector<std::string> dropped;
  dropped.reserve(response.dropped_size());
  for (const dedupd::v1::DroppedHit& d : response.dropped()) {
    JsonObjectWriter json;
    json.Uint("index", d.index()).String("id", d.id()).String("reason", EnumName(d.reason()));
    std::string out = std::move(json).Finish();
    if (d.reason() == dedupd::v1::DROP_REASON_DUPLICATE) {
      JsonObjectWriter of;
      of.Uint("index", d.duplicate_of_index()).String("id", d.duplicate_of());
      out = WithRawMember(std::move(out), "duplicate_of", std::move(of).Finish());
      out = WithRawMember(std::move(out), "measure", JsonString(EnumName(d.measure())));
      out = WithRawMember(std::move(out), "value", JsonNumber(d.value()));
    }
    dropped.push_back(std::move(out));
  }
  std::vector<std::string> not_examined;
  not_examined.reserve(response.not_examined_size());
  for (uint32_t i : response.not_examined()) {
    not_examined.push_back(absl::StrCat(i));
  }
  std::vector<std::string> rejected;
  rejected.reserve(response.rejected_size());
  for (const dedupd::v1::RejectedHit& r : response.rejected()) {
    JsonObjectWriter json;
    json.Uint("index", r.index())
        .String("id", r.id())
        .String("reason", EnumName(r.error_reason()))
        .String("error", r.error());
    rejected.push_back(std::move(json).Finish());
  }
  JsonObjectWriter json;
  json.RawArray("kept", kept)
      .RawArray("dropped", dropped)
      .RawArray("not_examined", not_examined)
      .RawArray("rejected", rejected)
      .Uint("per_source_cap", response.per_source_cap());
  return std::move(json).Finish();
}

// InputError prints a bad input (or a request the server rejects as bad)
// as the one output line {"error": ...}; returns exit code 1, as a bad
// line of the other commands, or 2 when the line cannot be written.
int InputError(absl::string_view message) {
  JsonObjectWriter json;
  json.String("error", message);
  const bool written = WriteLine(std::move(json).Finish());
  absl::Status flushed = FlushStdout();
  if (!flushed.ok() || !written) {
    PrintError(flushed.ok() ? "write to standard output failed" : flushed.message());
    return kExitError;
  }
  return kExitInvalid;
}

}  // namespace

int RunResults(const ResultsOptions& options) {
  std::string input;
  bool too_long = false;
  if (absl::Status s = ReadWholeInput(options.file, kMaxResultsInputBytes, &input, &too_long);
      !s.ok()) {
    return ExitWithError(s);
  }
  dedupd::v1::DedupResultsRequest request;
  if (too_long) {
    return InputError(absl::StrCat("the input is longer than ", kMaxResultsInputBytes, " bytes"));
  }
  if (absl::Status s = ParseResultsInput(input, &request); !s.ok()) {
    return InputError(s.message());
  }
  input.clear();
  input.shrink_to_fit();
  ApplyResultsFlags(options, &request);

  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(options.server.address, options.server.client);
  if (!client.ok()) return ExitWithError(client.status());
  absl::StatusOr<dedupd::v1::DedupResultsResponse> response = (*client)->DedupResults(request);
  if (!response.ok()) {
    if (response.status().code() == absl::StatusCode::kInvalidArgument) {
      return InputError(response.status().message());
    }
    return ExitWithError(response.status());
  }
  const bool written = WriteLine(ResultsLine(*response));
  absl::Status flushed = FlushStdout();
  if (!flushed.ok() || !written) {
    PrintError(flushed.ok() ? "write to standard output failed" : flushed.message());
    return kExitError;
  }
  // A rejected hit is an invalid item, as an INVALID URL of `url check`.
  return response->rejected_size() > 0 ? kExitInvalid : kExitOk;
}

}  // namespace dedupd::dedupctl
