// `dedupctl chunks check|peek`: one CheckChunks request per document (a
// JSON line), one output line each.
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/batch_loop.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/json_tree.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/json.h"
#include "common/status_macros.h"
#include "dedupd/v1/dedupd.pb.h"

namespace dedupd::dedupctl {
namespace {

// The longest JSON line (one document with all its chunks; the server's
// default message limit is 16 MiB).
constexpr size_t kMaxChunksLineBytes = 16 << 20;

// ParseChunkDocument turns one JSON line into a request (docs/dedupctl.md,
// "chunks check|peek"): an object with "document_url" or "document_id"
// (string; the server rejects both) and
// "chunks" (a non-empty array; each chunk a string, its text, or an object
// with "text" (string) and optional "chunk_id" (string)), and optional
// "max_hamming_distance" (whole number 0..4294967295) and "min_jaccard" (a
// number; the server judges its range). Null counts as absent; other
// members, of the line and of chunk objects, are ignored.
// Sets request->document_url() as soon as it is known, even on error.
// Returns InvalidArgument saying what is wrong.
absl::Status ParseChunkDocument(absl::string_view line, dedupd::v1::CheckChunksRequest* request) {
  DEDUPD_ASSIGN_OR_RETURN(const JsonValue value, ParseInputJson(line));
  if (value.type != JsonValue::Type::kObject) {
    return absl::InvalidArgumentError(
        absl::StrCat("a line must be a JSON object, not ", JsonKindName(value)));
  }
  const JsonValue& doc = value;
  std::string id;
  DEDUPD_RETURN_IF_ERROR(StringMember(doc, "document_id", "document_id", false, &id));
  request->set_document_id(id);
  std::string url;
  DEDUPD_RETURN_IF_ERROR(StringMember(doc, "document_url", "document_url", id.empty(), &url));
  request->set_document_url(url);
  const JsonValue* chunks = Member(doc, "chunks");
  if (chunks == nullptr) {
    return absl::InvalidArgumentError("missing \"chunks\"");
  }
  if (chunks->type != JsonValue::Type::kArray) {
    return WrongType("chunks", "an array", *chunks);
  }
  if (chunks->array.empty()) {
    return absl::InvalidArgumentError("\"chunks\" is empty (a document has at least one chunk)");
  }
  for (size_t i = 0; i < chunks->array.size(); ++i) {
    const JsonValue& chunk = chunks->array[i];
    const std::string path = absl::StrCat("chunks[", i, "]");
    dedupd::v1::ChunkItem* item = request->add_chunks();
    if (chunk.type == JsonValue::Type::kString) {
      item->set_text(chunk.string);
      continue;
    }
    if (chunk.type != JsonValue::Type::kObject) {
      return WrongType(path, "a string or an object", chunk);
    }
    std::string text;
    DEDUPD_RETURN_IF_ERROR(StringMember(chunk, "text", absl::StrCat(path, ".text"), true, &text));
    item->set_text(std::move(text));
    if (Member(chunk, "chunk_id") != nullptr) {
      DEDUPD_RETURN_IF_ERROR(StringMember(chunk, "chunk_id", absl::StrCat(path, ".chunk_id"), true,
                                          item->mutable_chunk_id()));
    }
  }
  if (const JsonValue* d = Member(doc, "max_hamming_distance")) {
    DEDUPD_ASSIGN_OR_RETURN(const uint32_t k, WholeNumber(*d, "max_hamming_distance", 0));
    request->set_max_hamming_distance(k);
  }
  if (const JsonValue* j = Member(doc, "min_jaccard")) {
    DEDUPD_ASSIGN_OR_RETURN(const double min_jaccard, Number(*j, "min_jaccard"));
    request->set_min_jaccard(min_jaccard);
  }
  return absl::OkStatus();
}

// The output object of one chunk (docs/dedupctl.md, "chunks check|peek").
std::string ChunkJson(const dedupd::v1::ChunkResult& result) {
  JsonObjectWriter json;
  json.String("chunk_id", result.chunk_id()).String("verdict", EnumName(result.verdict()));
  if (result.verdict() == dedupd::v1::CHUNK_VERDICT_INVALID) {
    json.String("error", result.error()).String("reason", EnumName(result.error_reason()));
    return std::move(json).Finish();
  }
  json.String("content_hash", result.content_hash())
      .String("simhash", SimHashHex(result.simhash()));
  std::string out = std::move(json).Finish();
  if (result.verdict() == dedupd::v1::CHUNK_VERDICT_EXACT_DUPLICATE ||
      result.verdict() == dedupd::v1::CHUNK_VERDICT_NEAR_DUPLICATE) {
    JsonObjectWriter of;
    if (!result.duplicate_of_document_id().empty()) {
      of.String("document_id", result.duplicate_of_document_id());
    } else {
      of.String("document_url", result.duplicate_of_document_url());
    }
    of.String("chunk_id", result.duplicate_of_chunk_id()).Uint("distance", result.distance());
    out = WithRawMember(std::move(out), "duplicate_of", std::move(of).Finish());
  }
  if (result.has_first_seen_time()) {
    out = WithRawMember(std::move(out), "first_seen",
                        JsonString(FormatTimestamp(result.first_seen_time())));
  }
  // New members go last, so readers of the older lines find theirs where
  // they were.
  if (result.verdict() == dedupd::v1::CHUNK_VERDICT_NEAR_DUPLICATE) {
    out =
        WithRawMember(std::move(out), "estimated_jaccard", JsonNumber(result.estimated_jaccard()));
    out =
        WithRawMember(std::move(out), "near_measure", JsonString(EnumName(result.near_measure())));
  }
  return WithRawMember(std::move(out), "applied_min_jaccard",
                       JsonNumber(result.applied_min_jaccard()));
}

// The output line of one answered document.
std::string ChunksLine(const dedupd::v1::CheckChunksResponse& response) {
  std::vector<std::string> chunks;
  chunks.reserve(response.results_size());
  for (const dedupd::v1::ChunkResult& r : response.results()) {
    chunks.push_back(ChunkJson(r));
  }
  std::vector<absl::string_view> removed(response.removed_chunk_ids().begin(),
                                         response.removed_chunk_ids().end());
  JsonObjectWriter json;
  if (!response.document_id().empty()) {
    json.String("document_id", response.document_id());
  } else {
    json.String("document_url", response.document_url());
  }
  json.Uint("replaced_chunks", response.replaced_chunks())
      .StringArray("removed_chunk_ids", removed)
      .RawArray("chunks", chunks);
  return std::move(json).Finish();
}

// The output line of a document that was not answered: a bad input line,
// or a request the server rejected as a whole.
std::string ChunksErrorLine(size_t line, const dedupd::v1::CheckChunksRequest& request,
                            absl::string_view error) {
  JsonObjectWriter json;
  json.Int("line", static_cast<int64_t>(line));
  if (!request.document_url().empty()) json.String("document_url", request.document_url());
  if (!request.document_id().empty()) json.String("document_id", request.document_id());
  json.String("error", error);
  return std::move(json).Finish();
}

// One document a batch: answers are written as they come, and reach the
// pipe at the latest when dedupctl would wait for input.
class ChunksJob : public BatchJob {
 public:
  ChunksJob(const ChunksOptions& options, int fd)
      : options_(options), reader_(fd, kMaxChunksLineBytes) {
    reader_.set_before_block([] { std::fflush(stdout); });
  }

  // Reads the next non-blank line.
  size_t ReadBatch() override {
    while (reader_.ReadLine(&line_, &too_long_)) {
      if (too_long_ || !IsBlank(line_)) return 1;
    }
    return 0;
  }

  absl::Status SendBatch(const DedupClient& client, bool* any_invalid) override {
    const size_t line_number = reader_.line_number();
    dedupd::v1::CheckChunksRequest request;
    const absl::Status parsed = too_long_ ? absl::InvalidArgumentError(absl::StrCat(
                                                "longer than ", kMaxChunksLineBytes, " bytes"))
                                          : ParseChunkDocument(line_, &request);
    std::string out;
    if (!parsed.ok()) {
      *any_invalid = true;
      out = ChunksErrorLine(line_number, request,
                            absl::StrCat("line ", line_number, ": ", parsed.message()));
    } else {
      if (options_.max_hamming_distance && !request.has_max_hamming_distance()) {
        request.set_max_hamming_distance(*options_.max_hamming_distance);
      }
      if (options_.min_jaccard && !request.has_min_jaccard()) {
        request.set_min_jaccard(*options_.min_jaccard);
      }
      request.set_mode(options_.mode);
      request.set_namespace_(options_.name_space);
      absl::StatusOr<dedupd::v1::CheckChunksResponse> response = client.CheckChunks(request);
      if (response.ok()) {
        out = ChunksLine(*response);
        for (const dedupd::v1::ChunkResult& r : response->results()) {
          if (r.verdict() == dedupd::v1::CHUNK_VERDICT_INVALID) {
            *any_invalid = true;
          }
        }
      } else if (response.status().code() == absl::StatusCode::kInvalidArgument) {
        // The server rejects this document as a whole (a bad document_url,
        // too many chunks, a distance over its limit, a min_jaccard out of
        // its range): its problem, not the run's.
        *any_invalid = true;
        out = ChunksErrorLine(line_number, request, response.status().message());
      } else {
        return response.status();
      }
    }
    if (!WriteLine(out)) {
      return absl::UnavailableError("write to standard output failed");
    }
    return absl::OkStatus();
  }

  absl::Status InputStatus() const override { return reader_.status(); }

 private:
  const ChunksOptions& options_;
  LineReader reader_;
  std::string line_;
  bool too_long_ = false;
};

}  // namespace

int RunChunks(const ChunksOptions& options) {
  InputFile file;
  if (absl::Status s = file.Open(options.file); !s.ok()) {
    return ExitWithError(s);
  }
  ChunksJob job(options, file.fd());
  return RunBatchLoop(options.server, job);
}

}  // namespace dedupd::dedupctl
