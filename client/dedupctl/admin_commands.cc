// `dedupctl admin stats|backup|export|forget|drop-namespace`: the
// dedupd.v1.Admin calls,
// their answers printed as proto3 JSON lines.
#include <memory>
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
#include "client/json.h"
#include "common/status_macros.h"
#include "dedupd/v1/admin.pb.h"
#include "google/protobuf/util/json_util.h"

namespace dedupd::dedupctl {
namespace {

// AdminJson prints `message` as one line of proto3 JSON with the proto
// field names (snake_case) and every field, zero or not.
absl::StatusOr<std::string> AdminJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  const auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("print JSON: ", status.ToString()));
  }
  return out;
}

// ExportLine: one exported record as {"type": "url"|"content"|"alias", ...
// the record's fields}.
absl::StatusOr<std::string> ExportLine(const dedupd::v1::ExportRecord& record) {
  const google::protobuf::Message* inner = nullptr;
  absl::string_view type;
  switch (record.record_case()) {
    case dedupd::v1::ExportRecord::kUrl:
      inner = &record.url();
      type = "url";
      break;
    case dedupd::v1::ExportRecord::kContent:
      inner = &record.content();
      type = "content";
      break;
    case dedupd::v1::ExportRecord::kAlias:
      inner = &record.alias();
      type = "alias";
      break;
    case dedupd::v1::ExportRecord::RECORD_NOT_SET:
      return absl::InternalError("the server sent an empty export record");
  }
  DEDUPD_ASSIGN_OR_RETURN(std::string json, AdminJson(*inner));
  // json is "{...}" with at least one field (strings print even when empty).
  return absl::StrCat("{\"type\":\"", type, "\",", absl::string_view(json).substr(1));
}

// The server's limit of URLs per Forget call (kMaxForgetUrls in
// server/admin.h; over it the whole call is INVALID_ARGUMENT).
constexpr size_t kForgetBatch = 100;

// ForgetJob sends the URLs to Admin.Forget, kForgetBatch at a time (a
// partial batch rather than wait for input), and prints one JSON line per
// URL in input order; a URL the server (or the input reader) rejected is
// invalid.
class ForgetJob : public BatchJob {
 public:
  explicit ForgetJob(const AdminOptions& options)
      : source_(UrlSource::FromArgsOrStdin(options.urls)) {}

  size_t ReadBatch() override {
    if (!more_) return 0;
    more_ = source_.NextBatch(kForgetBatch, &batch_);
    return batch_.size();
  }

  absl::Status SendBatch(const DedupClient& client, bool* any_invalid) override {
    dedupd::v1::ForgetRequest request;
    for (const InputItem& item : batch_) {
      if (!item.error) request.add_urls(item.url);
    }
    dedupd::v1::ForgetResponse response;
    if (request.urls_size() > 0) {
      DEDUPD_ASSIGN_OR_RETURN(response, client.AdminForget(request));
      if (response.results_size() != request.urls_size()) {
        return absl::InternalError(absl::StrCat("Admin.Forget: the server answered ",
                                                response.results_size(), " results for ",
                                                request.urls_size(), " URLs"));
      }
    }
    int next = 0;
    for (const InputItem& item : batch_) {
      std::string line;
      if (item.error) {
        *any_invalid = true;
        JsonObjectWriter json;
        json.String("error", *item.error);
        line = std::move(json).Finish();
      } else {
        const dedupd::v1::ForgetResult& result = response.results(next++);
        if (!result.error().empty()) *any_invalid = true;
        DEDUPD_ASSIGN_OR_RETURN(line, AdminJson(result));
      }
      if (!WriteLine(line)) {
        return absl::UnavailableError("write to standard output failed");
      }
    }
    return FlushStdout();
  }

  absl::Status InputStatus() const override { return source_.status(); }

 private:
  UrlSource source_;
  std::vector<InputItem> batch_;
  bool more_ = true;
};

// WriteAnswer prints one answer (or returns the failed call's error).
template <typename Response>
absl::Status WriteAnswer(const absl::StatusOr<Response>& response) {
  if (!response.ok()) return response.status();
  DEDUPD_ASSIGN_OR_RETURN(const std::string line, AdminJson(*response));
  if (!WriteLine(line)) {
    return absl::UnavailableError("write to standard output failed");
  }
  return absl::OkStatus();
}

// RunOneCall makes the one call of stats, backup or export and prints what
// it answers.
absl::Status RunOneCall(const DedupClient& client, const AdminOptions& options) {
  switch (options.command) {
    case AdminOptions::Command::kStats: {
      dedupd::v1::StatsRequest request;
      request.set_exact(options.exact);
      return WriteAnswer(client.AdminStats(request));
    }
    case AdminOptions::Command::kBackup: {
      dedupd::v1::BackupRequest request;
      request.set_directory(options.backup_dir);
      return WriteAnswer(client.AdminBackup(request));
    }
    case AdminOptions::Command::kDropNamespace: {
      dedupd::v1::DropNamespaceRequest request;
      request.set_namespace_(options.name_space);
      return WriteAnswer(client.AdminDropNamespace(request));
    }
    case AdminOptions::Command::kExport:
    case AdminOptions::Command::kForget:
      break;
  }
  dedupd::v1::ExportRequest request;
  request.set_skip_urls(options.skip_urls);
  request.set_skip_content(options.skip_content);
  return client.AdminExport(request, [](const dedupd::v1::ExportResponse& message) -> absl::Status {
    for (const dedupd::v1::ExportRecord& record : message.records()) {
      DEDUPD_ASSIGN_OR_RETURN(std::string line, ExportLine(record));
      if (!WriteLine(line)) {
        return absl::UnavailableError("write to standard output failed");
      }
    }
    return FlushStdout();
  });
}

}  // namespace

int RunAdmin(const AdminOptions& options) {
  if (options.command == AdminOptions::Command::kForget) {
    ForgetJob job(options);
    return RunBatchLoop(options.server, job);
  }
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(options.server.address, options.server.client);
  if (!client.ok()) return ExitWithError(client.status());
  absl::Status status = RunOneCall(**client, options);
  if (absl::Status flushed = FlushStdout(); status.ok()) status = flushed;
  if (!status.ok()) return ExitWithError(status);
  return kExitOk;
}

}  // namespace dedupd::dedupctl
