// `dedupctl content check|peek`: documents (JSON lines, or one document
// with --url) to CheckContent in batches, one line each.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/batch_loop.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/json.h"
#include "dedupd/v1/dedupd.pb.h"

namespace dedupd::dedupctl {
namespace {

// The longest JSON line (or --text_file) read, and the text bytes after
// which a batch is sent even if not full (bounds memory: the server's
// default message limit is 16 MiB).
constexpr size_t kMaxContentLineBytes = 16 << 20;
constexpr size_t kMaxContentBatchBytes = 16 << 20;

// One document to check: the request item, or a local error instead (a bad
// input line), with where it came from.
struct ContentInput {
  // The 1-based input line; 0 for the --url form.
  size_t line = 0;
  dedupd::v1::ContentItem item;
  std::optional<std::string> error;  // set: not sent, report this
};

// ParseDocument turns one JSON line into a request item: "url" (or, in its
// place, "document_id") and "text" strings are required; "canonical_url"
// (string), "max_hamming_distance" (integer 0..2^32-1) and "min_jaccard"
// (a number; the server judges its range, since only it knows its
// --min_jaccard_floor) are optional, and null counts as absent; other
// members are ignored. Returns InvalidArgument saying what is wrong.
absl::Status ParseDocument(absl::string_view line, dedupd::v1::ContentItem* item) {
  absl::StatusOr<JsonFlatObject> object = ParseJsonFlatObject(line);
  if (!object.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", object.status().message()));
  }
  const auto get = [&](const char* name) -> const JsonScalar* {
    auto it = object->find(name);
    if (it == object->end() || it->second.type == JsonScalar::Type::kNull) {
      return nullptr;
    }
    return &it->second;
  };
  const auto string_member = [&](const char* name, bool required,
                                 std::string* out) -> absl::Status {
    const JsonScalar* v = get(name);
    if (v == nullptr) {
      return required ? absl::InvalidArgumentError(absl::StrCat("missing \"", name, "\""))
                      : absl::OkStatus();
    }
    if (v->type != JsonScalar::Type::kString) {
      return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" must be a string"));
    }
    *out = v->string;
    return absl::OkStatus();
  };
  if (absl::Status s = string_member("document_id", false, item->mutable_document_id()); !s.ok()) {
    return s;
  }
  // The server says what is wrong with a document_id given with a url.
  if (absl::Status s = string_member("url", item->document_id().empty(), item->mutable_url());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = string_member("canonical_url", false, item->mutable_canonical_url());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = string_member("text", true, item->mutable_text()); !s.ok()) {
    return s;
  }
  if (const JsonScalar* d = get("max_hamming_distance")) {
    if (d->type != JsonScalar::Type::kInteger || d->integer < 0 ||
        d->integer > int64_t{UINT32_MAX}) {
      return absl::InvalidArgumentError(
          "\"max_hamming_distance\" must be an integer in 0..4294967295");
    }
    item->set_max_hamming_distance(static_cast<uint32_t>(d->integer));
  }
  if (const JsonScalar* j = get("min_jaccard")) {
    if (j->type == JsonScalar::Type::kNumber) {
      item->set_min_jaccard(j->number);
    } else if (j->type == JsonScalar::Type::kInteger) {
      item->set_min_jaccard(static_cast<double>(j->integer));
    } else {
      return absl::InvalidArgumentError("\"min_jaccard\" must be a number");
    }
  }
  return absl::OkStatus();
}

// ContentSource yields documents: JSON lines from a file descriptor
// (streaming, blank lines skipped), or the one document of the --url form.
class ContentSource {
 public:
  static ContentSource FromJsonLines(int fd) {
    ContentSource s;
    s.reader_.emplace(fd, kMaxContentLineBytes);
    return s;
  }
  static ContentSource FromDocument(ContentInput input) {
    ContentSource s;
    s.single_ = std::move(input);
    return s;
  }

  // Next stores the next document in `*input`; returns false at the end of
  // the input or on a read error (see status()).
  bool Next(ContentInput* input) {
    *input = ContentInput();
    if (!reader_) {
      if (!single_) return false;
      *input = *std::move(single_);
      single_.reset();
      return true;
    }
    std::string line;
    bool too_long = false;
    do {
      if (!reader_->ReadLine(&line, &too_long)) return false;
    } while (!too_long && IsBlank(line));
    input->line = reader_->line_number();
    absl::Status s = too_long ? absl::InvalidArgumentError(
                                    absl::StrCat("longer than ", kMaxContentLineBytes, " bytes"))
                              : ParseDocument(line, &input->item);
    if (!s.ok()) {
      input->error = absl::StrCat("line ", input->line, ": ", s.message());
    }
    return true;
  }

  bool WouldBlock() const { return reader_ && reader_->WouldBlock(); }

  absl::Status status() const { return reader_ ? reader_->status() : absl::OkStatus(); }

 private:
  ContentSource() = default;

  std::optional<LineReader> reader_;
  std::optional<ContentInput> single_;
};

// The output line of one document (docs/dedupctl.md, "content check|peek").
// `result` is nullptr for a bad input line.
std::string ContentLine(const ContentInput& input, const dedupd::v1::ContentResult* result) {
  JsonObjectWriter json;
  if (result == nullptr || result->verdict() == dedupd::v1::CONTENT_VERDICT_INVALID) {
    json.String("verdict", "INVALID");
    if (input.line > 0) json.Int("line", static_cast<int64_t>(input.line));
    if (!input.item.url().empty()) json.String("url", input.item.url());
    if (!input.item.document_id().empty()) json.String("document_id", input.item.document_id());
    json.String("error", result == nullptr ? *input.error : result->error());
    if (result != nullptr) json.String("reason", EnumName(result->error_reason()));
    return std::move(json).Finish();
  }
  // Document ids appear only where the server answered with one, so the
  // lines of URL-named documents are as they always were.
  json.String("verdict", EnumName(result->verdict()));
  if (!result->document_id().empty()) {
    json.String("document_id", result->document_id());
  } else {
    json.String("url", result->url()).String("canonical_url", result->canonical_url());
  }
  json.String("content_hash", result->content_hash())
      .String("simhash", SimHashHex(result->simhash()));
  if (!result->owner_document_id().empty()) {
    json.String("owner_document_id", result->owner_document_id());
  } else {
    json.String("owner_url", result->owner_url());
  }
  std::vector<absl::string_view> aliases(result->alias_urls().begin(), result->alias_urls().end());
  json.StringArray("alias_urls", aliases);
  if (result->alias_document_ids_size() > 0) {
    std::vector<absl::string_view> ids(result->alias_document_ids().begin(),
                                       result->alias_document_ids().end());
    json.StringArray("alias_document_ids", ids);
  }
  json.Uint("alias_count", result->alias_count());
  std::vector<std::string> matches;
  for (const dedupd::v1::NearMatch& m : result->near_matches()) {
    JsonObjectWriter match;
    if (!m.document_id().empty()) {
      match.String("document_id", m.document_id());
    } else {
      match.String("url", m.url());
    }
    match.String("simhash", SimHashHex(m.simhash()))
        .Uint("distance", m.distance())
        .String("content_hash", m.content_hash());
    std::string line = std::move(match).Finish();
    line = WithRawMember(std::move(line), "estimated_jaccard", JsonNumber(m.estimated_jaccard()));
    line = WithRawMember(std::move(line), "measure", JsonString(EnumName(m.measure())));
    matches.push_back(std::move(line));
  }
  json.RawArray("near_matches", matches)
      .Uint("near_match_count", result->near_match_count())
      .String("recrawl", EnumName(result->recrawl()));
  if (result->has_first_seen_time()) {
    json.String("first_seen_time", FormatTimestamp(result->first_seen_time()));
  }
  // New members go last, so readers of the older lines find theirs where
  // they were.
  return WithRawMember(std::move(json).Finish(), "applied_min_jaccard",
                       JsonNumber(result->applied_min_jaccard()));
}

class ContentJob : public BatchJob {
 public:
  ContentJob(const ContentOptions& options, ContentSource source)
      : options_(options), source_(std::move(source)) {}

  // Fills a batch (by count and by text bytes), but sends a partial one
  // rather than wait for input.
  size_t ReadBatch() override {
    batch_.clear();
    size_t batch_bytes = 0;
    while (more_ && batch_.size() < options_.server.client.max_items_per_request &&
           batch_bytes < kMaxContentBatchBytes) {
      if (!batch_.empty() && source_.WouldBlock()) break;
      ContentInput input;
      if (!source_.Next(&input)) {
        more_ = false;
        break;
      }
      if (options_.max_hamming_distance && !input.item.has_max_hamming_distance()) {
        input.item.set_max_hamming_distance(*options_.max_hamming_distance);
      }
      if (options_.min_jaccard && !input.item.has_min_jaccard()) {
        input.item.set_min_jaccard(*options_.min_jaccard);
      }
      batch_bytes += input.item.text().size();
      batch_.push_back(std::move(input));
    }
    return batch_.size();
  }

  // Sends the batch (skipping bad lines) and prints a line per document.
  absl::Status SendBatch(const DedupClient& client, bool* any_invalid) override {
    std::vector<dedupd::v1::ContentItem> items;
    items.reserve(batch_.size());
    for (const ContentInput& input : batch_) {
      if (!input.error) items.push_back(input.item);
    }
    return SendAndPrint(
        batch_, std::move(items),
        [&](const std::vector<dedupd::v1::ContentItem>& send) {
          ContentCheckOptions content_options;
          content_options.name_space = options_.name_space;
          return client.CheckContent(send, options_.mode, content_options);
        },
        [](const dedupd::v1::ContentResult& r) {
          return r.verdict() == dedupd::v1::CONTENT_VERDICT_INVALID;
        },
        ContentLine, any_invalid);
  }

  absl::Status InputStatus() const override { return source_.status(); }

 private:
  const ContentOptions& options_;
  ContentSource source_;
  std::vector<ContentInput> batch_;
  bool more_ = true;
};

}  // namespace

int RunContent(const ContentOptions& options) {
  InputFile file;
  std::optional<ContentSource> source;
  if (options.url) {
    // The --url form: the whole input is the one document's text.
    ContentInput input;
    input.item.set_url(*options.url);
    if (options.canonical_url) {
      input.item.set_canonical_url(*options.canonical_url);
    }
    bool too_long = false;
    if (absl::Status s = ReadWholeInput(options.text_file, kMaxContentLineBytes,
                                        input.item.mutable_text(), &too_long);
        !s.ok()) {
      return ExitWithError(s);
    }
    if (too_long) {
      input.error = absl::StrCat("text longer than ", kMaxContentLineBytes, " bytes");
      input.item.clear_text();
    }
    source = ContentSource::FromDocument(std::move(input));
  } else {
    if (absl::Status s = file.Open(options.file); !s.ok()) {
      return ExitWithError(s);
    }
    source = ContentSource::FromJsonLines(file.fd());
  }
  ContentJob job(options, *std::move(source));
  return RunBatchLoop(options.server, job);
}

}  // namespace dedupd::dedupctl
