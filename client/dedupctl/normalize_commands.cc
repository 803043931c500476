// `dedupctl normalize`: URLs through the normalizer with the per-host
// policy of a config file, no server.
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/line_io.h"
#include "client/json.h"
#include "core/url/url_normalizer.h"
#include "server/config.h"

namespace dedupd::dedupctl {

int RunNormalize(const NormalizeOptions& options) {
  absl::StatusOr<DedupConfig> config = LoadConfigFile(options.config_file);
  if (!config.ok()) return ExitWithError(config.status());
  const UrlNormalizer normalizer(std::move(config->url_policy));
  const std::string base = options.base.value_or("");
  if (options.base) {
    if (absl::StatusOr<std::string> b = normalizer.Normalize(base); !b.ok()) {
      return UsageError(absl::StrCat("--base: ", b.status().message()));
    }
  }

  UrlSource source = UrlSource::FromArgsOrStdin(options.urls);
  // A person typing URLs sees each answer at once; a pipe is written in
  // large blocks.
  source.set_before_block([] { std::fflush(stdout); });
  Progress progress;
  size_t done = 0;
  bool any_invalid = false;
  bool write_ok = true;
  InputItem item;
  std::vector<absl::string_view> rules;
  while (source.Next(&item)) {
    JsonObjectWriter json;
    json.String("url", item.url);
    rules.clear();
    if (item.error) {
      any_invalid = true;
      json.String("error", *item.error);
    } else {
      absl::StatusOr<std::string> normalized =
          normalizer.Normalize(item.url, base, options.explain ? &rules : nullptr);
      if (normalized.ok()) {
        json.String("normalized", *normalized);
      } else {
        any_invalid = true;
        json.String("error", normalized.status().message());
      }
    }
    if (options.explain) json.StringArray("rules", rules);
    write_ok = WriteLine(std::move(json).Finish()) && write_ok;
    progress.Update(++done);
  }
  progress.Finish(done);
  absl::Status status = source.status();
  if (status.ok()) status = FlushStdout();
  if (status.ok() && !write_ok) {
    status = absl::UnavailableError("write to standard output failed");
  }
  if (!status.ok()) return ExitWithError(status);
  return any_invalid ? kExitInvalid : kExitOk;
}

}  // namespace dedupd::dedupctl
