// commands.h: one entry point per dedupctl command, each taking the options
// ParseCommandLine filled and returning the exit code (kExitOk,
// kExitInvalid, kExitError; errors printed as one line on stderr).
// docs/dedupctl.md describes each command's input and output lines.
//
// Example:
//   absl::StatusOr<CommandLine> line = ParseCommandLine(argc, argv);
//   return RunUrl(std::get<UrlOptions>(line->options));
//
// Not thread-safe: each reads standard input and writes standard output.
#ifndef DEDUPD_CLIENT_DEDUPCTL_COMMANDS_H_
#define DEDUPD_CLIENT_DEDUPCTL_COMMANDS_H_

#include "client/dedupctl/flags.h"

namespace dedupd::dedupctl {

// `normalize`: the normalizer offline (normalize_commands.cc).
int RunNormalize(const NormalizeOptions& options);

// `compare`: pairs of texts through the near-duplicate measures, offline
// (compare_commands.cc).
int RunCompare(const CompareOptions& options);

// `tune`: histograms and precision/recall curves of the measures on a
// sample, offline (tune_commands.cc).
int RunTune(const TuneOptions& options);

// `url check|peek` (url_commands.cc).
int RunUrl(const UrlOptions& options);

// `content check|peek` (content_commands.cc).
int RunContent(const ContentOptions& options);

// `chunks check|peek` (chunk_commands.cc).
int RunChunks(const ChunksOptions& options);

// `results dedup` (results_commands.cc).
int RunResults(const ResultsOptions& options);

// `admin stats|backup|export|forget` (admin_commands.cc).
int RunAdmin(const AdminOptions& options);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_COMMANDS_H_
