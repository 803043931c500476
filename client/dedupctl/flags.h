// flags.h: dedupctl's command line, parsed once (with CLI11) into the typed
// options of one command. Every flag is checked here, with the one-line
// messages docs/dedupctl.md shows; the commands read only these structs.
//
// Example:
//   absl::StatusOr<CommandLine> line = ParseCommandLine(argc, argv);
//   if (!line.ok()) return UsageError(line.status().message());
//   if (const auto* url = std::get_if<UrlOptions>(&line->options)) ...
//
// Thread-safe: pure functions (ParseCommandLine reads --token_file).
#ifndef DEDUPD_CLIENT_DEDUPCTL_FLAGS_H_
#define DEDUPD_CLIENT_DEDUPCTL_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"
#include "dedupd/v1/dedupd.pb.h"

namespace dedupd::dedupctl {

// The usage text (docs/dedupctl.md is the long form).
extern const char kUsage[];

// UsageError prints "dedupctl: <message>" and the usage text on stderr;
// returns kExitError.
int UsageError(absl::string_view message);

// The server and how to talk to it: --server, --batch, --deadline and the
// connection flags (--tls*, --token_file).
struct ServerOptions {
  // --server: host:port. Never empty.
  std::string address;
  // max_items_per_request from --batch, deadline from --deadline, TLS and
  // the bearer token from the connection flags.
  ClientOptions client;
};

// `help`, `-h`, `--help` anywhere the flags are read.
struct HelpOptions {};

// `normalize [--config FILE] [--base URL] [--explain] [URL...]`.
struct NormalizeOptions {
  std::string config_file;          // "": the built-in policy
  std::optional<std::string> base;  // --base, checked by the command
  bool explain = false;
  std::vector<std::string> urls;  // empty: standard input
};

// `compare FILE_A FILE_B` or `compare [--docs FILE] [--pairs FILE]`:
// pairs of texts offline, each judged by SHA-256, estimated Jaccard and
// SimHash distance (compare_commands.cc).
struct CompareOptions {
  // The two-file form: each file's whole content is one text.
  std::optional<std::string> file_a, file_b;
  // --docs: JSON lines {"id", "text"}; then the pairs name ids.
  std::optional<std::string> docs;
  // --pairs: JSON lines {"a", "b", "label"}; "-": standard input.
  std::string pairs = "-";
  // --min_jaccard (0 < J <= 1; default 0.8, the server's default),
  // --max_hamming_distance (0..64; default 3), --examples (0..1000;
  // default 5).
  double min_jaccard = 0.8;
  uint32_t max_hamming_distance = 3;
  uint32_t examples = 5;
};

// `tune --docs FILE [--pairs FILE]`: histograms of the measures over a
// sample's pairs and, with labelled pairs, precision and recall per
// threshold (tune_commands.cc).
struct TuneOptions {
  std::string docs;                  // --docs, required
  std::optional<std::string> pairs;  // --pairs: labelled pairs of ids
  // --brute_force_max_docs: up to this many documents, every pair is
  // examined, not only the LSH candidates. Default: 2000.
  uint32_t brute_force_max_docs = 2000;
};

// `url check|peek|complete`.
struct UrlOptions {
  dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_CLAIM;
  bool complete = false;  // `url complete`: CompleteUrls instead of CheckUrl
  ServerOptions server;
  std::optional<std::string> base;
  std::string name_space;                 // --namespace
  std::optional<uint32_t> lease_seconds;  // --lease_seconds (check only)
  std::vector<std::string> urls;          // empty: standard input
};

// `content check|peek`: JSON lines from `file`, or with `url` set one
// document whose text is read from `text_file`.
struct ContentOptions {
  dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_CLAIM;
  ServerOptions server;
  std::optional<uint32_t> max_hamming_distance;
  // --min_jaccard: in (0, 1]; the server holds it to its floor.
  std::optional<double> min_jaccard;
  std::optional<std::string> file;  // JSON lines; absent or "-": stdin
  std::optional<std::string> url;   // the --url form
  std::optional<std::string> canonical_url;
  std::string text_file = "-";  // with url
  std::string name_space;       // --namespace
};

// `chunks check|peek`.
struct ChunksOptions {
  dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_CLAIM;
  ServerOptions server;
  std::optional<uint32_t> max_hamming_distance;
  std::optional<double> min_jaccard;  // as ContentOptions::min_jaccard
  std::optional<std::string> file;    // absent or "-": stdin
  std::string name_space;             // --namespace
};

// `results dedup`: the settings each override the input's.
struct ResultsOptions {
  ServerOptions server;
  std::optional<uint32_t> top_k, per_source_cap, max_hamming_distance;
  std::optional<double> min_jaccard, min_cosine;
  std::string file = "-";
};

// `admin stats|backup|export|forget|drop-namespace`.
struct AdminOptions {
  enum class Command { kStats, kBackup, kExport, kForget, kDropNamespace };
  Command command = Command::kStats;
  // The deadline defaults to 3600 s for export, backup and exact stats,
  // 600 s for forget.
  ServerOptions server;
  bool exact = false;             // stats
  bool skip_urls = false;         // export
  bool skip_content = false;      // export
  std::string backup_dir;         // backup
  std::string name_space;         // drop-namespace
  std::vector<std::string> urls;  // forget; empty: standard input
};

struct CommandLine {
  std::variant<HelpOptions, NormalizeOptions, CompareOptions, TuneOptions, UrlOptions,
               ContentOptions, ChunksOptions, ResultsOptions, AdminOptions>
      options;
};

// ParseCommandLine reads `dedupctl <command> [<subcommand>] [flags] [args]`.
// Flags and arguments may be mixed; "--" ends flags. Returns
// InvalidArgument with a one-line message for a usage error (an unknown
// command or flag, a bad flag value, flags that exclude each other, the
// wrong number of arguments, an unreadable --token_file).
absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_FLAGS_H_
