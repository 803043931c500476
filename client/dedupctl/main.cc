// dedupctl: dedupd from a shell. One URL (or one JSON document) a line in,
// one JSON object a line out. `normalize` runs the normalizer offline,
// `compare` and `tune` the text measures (offline too); `url
// check|peek`, `content check|peek` and `chunks check|peek` ask a server
// through the client library, `results dedup` turns one JSON hit list
// into one JSON decision, and `admin` runs the Admin calls.
// docs/dedupctl.md is the user documentation; kUsage (flags.cc) is its
// short form.
//
// Exit codes: 0 every item valid, 1 some item invalid (or a bad input
// line), 2 usage, config, connection or RPC error (with a one-line message
// on stderr).
#include <cstdio>
#include <variant>

#include "absl/status/statusor.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/flags.h"
#include "client/dedupctl/line_io.h"

namespace dedupd::dedupctl {
namespace {

// Run dispatches on the parsed command.
struct Run {
  int operator()(const HelpOptions&) const {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  int operator()(const NormalizeOptions& o) const { return RunNormalize(o); }
  int operator()(const CompareOptions& o) const { return RunCompare(o); }
  int operator()(const TuneOptions& o) const { return RunTune(o); }
  int operator()(const UrlOptions& o) const { return RunUrl(o); }
  int operator()(const ContentOptions& o) const { return RunContent(o); }
  int operator()(const ChunksOptions& o) const { return RunChunks(o); }
  int operator()(const ResultsOptions& o) const { return RunResults(o); }
  int operator()(const AdminOptions& o) const { return RunAdmin(o); }
};

int Main(int argc, char** argv) {
  absl::StatusOr<CommandLine> line = ParseCommandLine(argc, argv);
  if (!line.ok()) return UsageError(line.status().message());
  return std::visit(Run(), line->options);
}

}  // namespace
}  // namespace dedupd::dedupctl

int main(int argc, char** argv) {
  // Output is JSON lines for pipes: write in large blocks, flush at batch
  // ends and before waiting for input.
  static char stdout_buffer[1 << 16];
  std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
  return dedupd::dedupctl::Main(argc, argv);
}
