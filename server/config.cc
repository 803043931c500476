#include "server/config.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "dedupd/config/v1/config.pb.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "storage/url_store.h"

namespace dedupd {
namespace {

namespace cfg = ::dedupd::config::v1;

// Keeps the first error the text-format parser reports, with its position.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!error_.empty()) return;
    // The parser counts lines and columns from zero; editors count from one.
    error_ = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

TrailingSlash FromProto(cfg::TrailingSlash t) {
  switch (t) {
    case cfg::TRAILING_SLASH_ADD:
      return TrailingSlash::kAdd;
    case cfg::TRAILING_SLASH_KEEP:
      return TrailingSlash::kKeep;
    default:
      return TrailingSlash::kStrip;
  }
}

}  // namespace

absl::StatusOr<DedupConfig> ParseConfig(absl::string_view text, absl::string_view source_name) {
  cfg::Config proto;
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(text), &proto)) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ":", errors.error()));
  }
  std::vector<HostRule> rules;
  rules.reserve(proto.host_rules_size());
  for (const cfg::HostRule& r : proto.host_rules()) {
    HostRule rule;
    rule.hosts.assign(r.hosts().begin(), r.hosts().end());
    rule.allow_params.assign(r.allow_params().begin(), r.allow_params().end());
    rule.drop_params.assign(r.drop_params().begin(), r.drop_params().end());
    rule.trailing_slash = FromProto(r.trailing_slash());
    rule.case_insensitive_path = r.case_insensitive_path();
    rules.push_back(std::move(rule));
  }
  std::vector<std::string> drop(proto.drop_params().begin(), proto.drop_params().end());
  absl::StatusOr<UrlPolicy> policy = UrlPolicy::Create(std::move(rules), std::move(drop));
  if (!policy.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", policy.status().message()));
  }
  DedupConfig config;
  config.url_policy = *std::move(policy);
  std::vector<RevisitRule> revisits;
  for (int i = 0; i < proto.revisit_rules_size(); ++i) {
    const cfg::RevisitRule& r = proto.revisit_rules(i);
    RevisitRule rule;
    rule.namespaces.assign(r.namespaces().begin(), r.namespaces().end());
    for (const std::string& ns : rule.namespaces) {
      if (absl::Status s = CheckNamespace(ns); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source_name, ": revisit_rules[", i, "]: ", s.message()));
      }
    }
    rule.hosts.assign(r.hosts().begin(), r.hosts().end());
    // Seconds beyond absl::Duration's range are "never" in practice too.
    rule.after =
        r.revisit_after_seconds() == 0 || r.revisit_after_seconds() > uint64_t{100} * 365 * 86400
            ? absl::InfiniteDuration()
            : absl::Seconds(static_cast<int64_t>(r.revisit_after_seconds()));
    revisits.push_back(std::move(rule));
  }
  absl::StatusOr<RevisitPolicy> revisit = RevisitPolicy::Create(std::move(revisits));
  if (!revisit.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", revisit.status().message()));
  }
  config.revisit_policy = *std::move(revisit);
  return config;
}

absl::StatusOr<DedupConfig> LoadConfigFile(const std::string& path) {
  if (path.empty()) return DedupConfig{};
  absl::StatusOr<std::string> text = file_io::ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("read config ", text.status().message()));
  }
  return ParseConfig(*text, path);
}

}  // namespace dedupd
