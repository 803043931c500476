#include "client/dedupctl/flags.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "client/dedupctl/line_io.h"
#include "common/status_macros.h"

namespace dedupd::dedupctl {

const char kUsage[] =
    R"(usage: dedupctl <command> [flags] [URL...]

commands:
  normalize [--config FILE] [--base URL] [--explain] [URL...]
      Normalize URLs offline (no server), with the per-host policy of a
      dedupd config file. Prints {"url", "normalized"} or {"url", "error"};
      --explain adds "rules": the normalization rules that fired.
  compare [--min_jaccard J] [--max_hamming_distance K] [--examples N]
          FILE_A FILE_B
  compare [--docs DOCS.jsonl] [--pairs PAIRS.jsonl] [--min_jaccard J]
          [--max_hamming_distance K] [--examples N]
      Compare texts offline (no server): both fingerprints, SimHash
      distance, estimated and exact 3-shingle Jaccard, the verdict
      (EXACT_DUPLICATE, NEAR_DUPLICATE with "matched_by", DIFFERENT) and up
      to N shingles only one side has. Two text files, or JSON lines of
      pairs from --pairs (or standard input): {"a": TEXT, "b": TEXT}, or
      with --docs ({"id", "text"} lines) {"a": ID, "b": ID}. One line per
      pair; a bad line prints its own error line and the run goes on.
  tune --docs DOCS.jsonl [--pairs PAIRS.jsonl] [--brute_force_max_docs N]
      Measure a sample offline: histograms of estimated Jaccard (0.5..1,
      bins of 0.05) and SimHash distance (0..16) over its pairs (all pairs
      up to N documents, default 2000; else the LSH candidates), an
      example pair per bin, and with labelled pairs ({"a": ID, "b": ID,
      "label": "duplicate"|"different"}) precision and recall per
      threshold. One JSON object per histogram or curve.
  url check --server ADDR [--base URL] [--batch N] [--deadline SECONDS]
            [--namespace NAME] [--lease_seconds N] [URL...]
      Claim URLs on a dedupd server: NEW the first time, SEEN after (DUE
      when a revisit rule says so). --lease_seconds: confirm each NEW URL
      with `url complete` (or content check) before the lease ends, or it
      is offered again.
  url peek  --server ADDR [--base URL] [--batch N] [--deadline SECONDS]
            [--namespace NAME] [URL...]
      Like check, but records nothing.
  url complete --server ADDR [--base URL] [--batch N] [--deadline SECONDS]
               [--namespace NAME] [URL...]
      Confirm leased URLs: CONFIRMED, ALREADY_CONFIRMED or INVALID.
  content check --server ADDR [--batch N] [--deadline SECONDS]
                [--max_hamming_distance K] [--min_jaccard J]
                [--namespace NAME] [FILE]
      Check and record documents: NEW, EXACT_DUPLICATE or NEAR_DUPLICATE.
      Input: JSON lines from FILE (or standard input when FILE is absent or
      "-"), one document a line: {"url": "...", "text": "...",
      "canonical_url": "...", "max_hamming_distance": 3,
      "min_jaccard": 0.9} (url and text required). A bad line prints its
      own error line and the run goes on.
  content check --server ADDR --url URL [--canonical_url URL]
                [--max_hamming_distance K] [--min_jaccard J]
                [--namespace NAME] [--text_file FILE]
      One document: its whole text is read from --text_file (or standard
      input when absent or "-"), as is.
  content peek ...
      Like content check, but records nothing.
  chunks check --server ADDR [--deadline SECONDS] [--max_hamming_distance K]
               [--min_jaccard J] [--namespace NAME] [FILE]
      Check and record each document's chunks (one request per document;
      its chunks replace those stored for it): NEW, EXACT_DUPLICATE or
      NEAR_DUPLICATE of another chunk. Input: JSON lines, one document a
      line: {"document_url": "...", "chunks": ["text", ...] or
      [{"text": "...", "chunk_id": "..."}, ...], "max_hamming_distance": 3,
      "min_jaccard": 0.8}.
      Output: {"document_url", "replaced_chunks", "chunks": [...]} per line,
      or {"line", "error"} for a bad line or a document the server rejects.
  chunks peek ...
      Like chunks check, but records nothing.
  results dedup --server ADDR [--deadline SECONDS] [--top_k N]
                [--per_source_cap N] [--max_hamming_distance K | --min_jaccard J]
                [--min_cosine C] [FILE]
      Deduplicate one query's hits. Input: ONE JSON value, the whole of FILE
      or standard input (at most 64 MiB): a list of hits {"id", "text",
      "score", "source_url", "embedding"}, or {"hits": [...], "top_k": N,
      ...the settings below}. Output: one line {"kept", "dropped",
      "not_examined", "rejected", "per_source_cap"}, or {"error"} for a bad
      input. A rejected hit (empty text, NaN score, ...) makes the exit
      status 1.
  admin stats --server ADDR [--exact] [--deadline SECONDS]
      Print the server's store statistics as one JSON object: record kinds,
      bytes on disk, versions, RocksDB health, uptime. --exact also counts
      every record kind (a pass over the store; default deadline 3600).
  admin backup --server ADDR [--deadline SECONDS] DIR
      Make an online backup of the store into DIR, an absolute path on the
      server that must not exist yet. Prints one JSON object. The server
      keeps working after a client gives up: the default deadline is 3600.
  admin export --server ADDR [--skip_urls] [--skip_content]
               [--deadline SECONDS]
      Print every stored record as JSON lines: {"type": "url", ...}, then
      {"type": "content", ...} each followed by its {"type": "alias", ...}.
      The deadline covers the whole export (default 3600).
  admin forget --server ADDR [--deadline SECONDS] [URL...]
      Remove each URL from the server's store (URLs from the arguments or,
      when none, standard input, one per line; sent 100 per request, the
      server's limit): CheckUrl answers NEW for it again, texts only it
      served are NEW again, texts others also served get a new owner. Prints
      one JSON object per URL: {"url", "normalized_url", "found", the
      counts, "contents_promoted", ...} or {"url", "error"} for a URL that
      does not normalize (exit status 1). Each URL costs the server a scan
      of every stored text; the deadline covers one request (default 600).
  admin drop-namespace --server ADDR [--deadline SECONDS] NAME
      Remove every record of the namespace NAME at once (its URLs are NEW
      again there; other namespaces are untouched). Prints {"found": bool}.
  help
      Print this text.

URLs come from the arguments or, when there are none, from standard input,
one per line (a trailing CR is stripped, blank lines are skipped). Output is
one JSON object per line, in input order.

flags:
  --config FILE       dedupd config file (default: built-in policy)
  --base URL          resolve relative URLs against this absolute URL
  --explain           list the rules that fired
  --server ADDR       dedupd address, host:port
  --batch N           url, content: URLs (documents) per request, 1..100000
                      (default 1000; 100 for content)
  --deadline SECONDS  deadline of each request (default 30)
  --url URL           content: the one document's URL
  --canonical_url URL content: its rel=canonical URL
  --text_file FILE    content: its text ("-": standard input)
  --max_hamming_distance K
                      content, chunks: near-duplicate distance for documents
                      that set none (default: the server's, 3); results: the
                      SimHash distance (default 3); compare: 0..64 (default
                      3)
  --top_k N           results: hits to keep, >= 1 (default: all of them)
  --per_source_cap N  results: most hits kept per source_url, 0: no cap
                      (default: 2 when top_k <= 5, else 3, and 3 without
                      top_k)
  --min_jaccard J     results: compare texts by shingle Jaccard >= J instead
                      of SimHash (default 0.8 when chosen); compare: the
                      estimated Jaccard of a near duplicate, 0 < J <= 1
                      (default 0.8, the server's default); content, chunks:
                      the estimated Jaccard that also counts as near, for
                      documents that set none, 0 < J <= 1 and at least the
                      server's --min_jaccard_floor (default: the server's,
                      0.85 for content, 0.8 for chunks)
  --examples N        compare: unique shingles shown per side, 0..1000
                      (default 5)
  --docs FILE         compare, tune: JSON lines {"id", "text"}
  --pairs FILE        compare: JSON lines {"a", "b"} ("-": standard input,
                      the default); tune: labelled pairs of ids
  --brute_force_max_docs N
                      tune: examine every pair up to N documents (default
                      2000)
  --min_cosine C      results: embedding cosine that counts as a duplicate
                      (default 0.95)
  --                  end of flags: everything after is a URL

connection flags (every command that talks to a server):
  --tls               connect with TLS, verifying the server with the
                      system's CA certificates
  --tls_ca_file FILE  connect with TLS, verifying the server with these PEM
                      CA certificates
  --tls_cert_file FILE, --tls_key_file FILE
                      mutual TLS: this client's PEM certificate and key
  --tls_server_name NAME
                      the name the server certificate must carry (default:
                      the host of --server)
  --token_file FILE   send the bearer token in FILE (trailing newline
                      dropped) as "authorization: Bearer TOKEN"

exit codes: 0 all items valid, 1 some item invalid or some input bad
(including a chunks document or a results input the server rejects as
invalid), 2 usage, config, connection or server error.
)";

int UsageError(absl::string_view message) {
  PrintError(message);
  std::fputs(kUsage, stderr);
  return kExitError;
}

namespace {

// --batch upper bound: bounds the lines held in memory at once. The
// server's own per-request limit (10,000 by default) may be lower.
constexpr size_t kMaxBatch = 100000;

// The flags of every command that talks to a server.
constexpr absl::string_view kConnectionFlags[] = {
    "--tls",          "--tls_ca_file",     "--tls_cert_file",
    "--tls_key_file", "--tls_server_name", "--token_file"};
// The flags that take no value.
constexpr absl::string_view kSwitches[] = {"--explain", "--tls", "--exact", "--skip_urls",
                                           "--skip_content"};

// The flags one command was given, as CLI11 read them: the last value of
// each flag that takes one, the switches that were set, the arguments.
struct RawFlags {
  std::map<std::string, std::string, std::less<>> values;
  std::set<std::string, std::less<>> switches;
  std::vector<std::string> positional;
  bool help = false;

  std::optional<std::string> Value(absl::string_view flag) const {
    auto it = values.find(flag);
    if (it == values.end()) return std::nullopt;
    return it->second;
  }
  bool Has(absl::string_view flag) const { return switches.count(flag) > 0; }
};

// CliErrorMessage turns the one CLI11 error a flag parse can end with into
// dedupctl's one-line message ("--config needs a value").
std::string CliErrorMessage(const CLI::ParseError& e) {
  absl::string_view what = e.what();
  const auto flag = [](absl::string_view name) {
    return absl::StartsWith(name, "-") ? std::string(name) : absl::StrCat("--", name);
  };
  // ArgumentMismatch::TypedAtLeast: "<name>: 1 required <type> missing".
  if (const size_t colon = what.find(": "); colon != absl::string_view::npos &&
                                            absl::EndsWith(what, " missing") &&
                                            what.find(" required ") != absl::string_view::npos) {
    return absl::StrCat(flag(what.substr(0, colon)), " needs a value");
  }
  // ArgumentMismatch::FlagOverride: "<name> was given a disallowed flag
  // override".
  if (const size_t at = what.find(" was given a disallowed flag override");
      at != absl::string_view::npos) {
    return absl::StrCat(flag(what.substr(0, at)), " takes no value");
  }
  return std::string(what);
}

bool IsSwitch(absl::string_view flag) {
  return std::find(std::begin(kSwitches), std::end(kSwitches), flag) != std::end(kSwitches);
}

// RewriteEqualsForms handles the two "--flag=..." spellings CLI11 reads
// otherwise, in `*args` before "--": a switch with "=value" (CLI11 takes
// "=true") is an error, and "--flag=" is an empty value (CLI11 would take
// the next word instead), so it becomes "--flag" "".
absl::Status RewriteEqualsForms(const std::vector<absl::string_view>& allowed,
                                std::vector<std::string>* args) {
  for (size_t i = 0; i < args->size() && (*args)[i] != "--"; ++i) {
    std::string& arg = (*args)[i];
    const size_t eq = arg.find('=');
    if (!absl::StartsWith(arg, "--") || eq == std::string::npos) continue;
    const absl::string_view name = absl::string_view(arg).substr(0, eq);
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
      continue;
    }
    if (IsSwitch(name)) {
      return absl::InvalidArgumentError(absl::StrCat(name, " takes no value"));
    }
    if (eq + 1 == arg.size()) {
      arg.pop_back();
      args->insert(args->begin() + static_cast<std::ptrdiff_t>(i) + 1, "");
      ++i;
    }
  }
  return absl::OkStatus();
}

// ParseFlags reads `args` (the words after the command words) with CLI11,
// knowing only the flags in `allowed`. Flags and arguments may be mixed;
// "--" ends flags; a flag given twice keeps its last value. Returns
// InvalidArgument with the one-line message of a usage error.
absl::StatusOr<RawFlags> ParseFlags(std::vector<std::string> args,
                                    const std::vector<absl::string_view>& allowed) {
  RawFlags raw;
  CLI::App app;
  app.set_help_flag("-h,--help");
  app.allow_extras();  // unknown flags: reported below, in our words
  std::vector<std::pair<std::string, CLI::Option*>> options;
  std::vector<std::string> slots(allowed.size());
  for (size_t i = 0; i < allowed.size(); ++i) {
    const std::string name(allowed[i]);
    CLI::Option* option =
        IsSwitch(name)
            ? app.add_flag(name)->disable_flag_override()
            : app.add_option(name, slots[i])->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    options.emplace_back(name, option);
  }
  app.add_option("args", raw.positional);
  DEDUPD_RETURN_IF_ERROR(RewriteEqualsForms(allowed, &args));
  std::reverse(args.begin(), args.end());  // CLI11 reads from the back
  // CLI11 reports errors as exceptions: this is the one place they are
  // caught, and each becomes a status.
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    raw.help = true;
    return raw;
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(CliErrorMessage(e));
  }
  bool marker_seen = false;
  for (const std::string& extra : app.remaining()) {
    // CLI11 lists the "--" that ended the flags among the extras.
    if (extra == "--" && !marker_seen) {
      marker_seen = true;
      continue;
    }
    if (!absl::StartsWith(extra, "--") || extra.size() < 3) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", extra));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown flag ", extra.substr(0, extra.find('=')), " for this command"));
  }
  for (size_t i = 0; i < options.size(); ++i) {
    const auto& [name, option] = options[i];
    if (option->count() == 0) continue;
    if (option->get_items_expected_max() == 0) {
      raw.switches.insert(name);
    } else {
      raw.values[name] = slots[i];
    }
  }
  return raw;
}

// ParseUint32Flag reads `--flag VALUE` as an integer in min..4294967295.
// Returns InvalidArgument with the usage message.
absl::StatusOr<std::optional<uint32_t>> ParseUint32Flag(const RawFlags& raw, absl::string_view flag,
                                                        uint32_t min) {
  const std::optional<std::string> value = raw.Value(flag);
  if (!value) return std::nullopt;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(*value, &n) || n < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be an integer in ", min, "..4294967295, got \"", *value, "\""));
  }
  return n;
}

// ParseBoundedUint32Flag reads `--flag VALUE` as an integer in min..max.
// Returns InvalidArgument with the usage message.
absl::StatusOr<std::optional<uint32_t>> ParseBoundedUint32Flag(const RawFlags& raw,
                                                               absl::string_view flag, uint32_t min,
                                                               uint32_t max) {
  const std::optional<std::string> value = raw.Value(flag);
  if (!value) return std::nullopt;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(*value, &n) || n < min || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be an integer in ", min, "..", max, ", got \"", *value, "\""));
  }
  return n;
}

// ParseNumberFlag reads `--flag VALUE` as a finite number. Returns
// InvalidArgument with the usage message.
absl::StatusOr<std::optional<double>> ParseNumberFlag(const RawFlags& raw, absl::string_view flag) {
  const std::optional<std::string> value = raw.Value(flag);
  if (!value) return std::nullopt;
  double d = 0;
  if (!absl::SimpleAtod(*value, &d) || !std::isfinite(d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be a number, got \"", *value, "\""));
  }
  return d;
}

// ParseMinJaccardFlag reads --min_jaccard as a number in (0, 1].
absl::StatusOr<std::optional<double>> ParseMinJaccardFlag(const RawFlags& raw) {
  const std::optional<std::string> value = raw.Value("--min_jaccard");
  if (!value) return std::nullopt;
  double d = 0;
  // !(d > 0 && d <= 1) also rejects NaN, which every comparison fails.
  if (!absl::SimpleAtod(*value, &d) || !(d > 0 && d <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min_jaccard must be a number in (0, 1] (a Jaccard similarity), got \"", *value, "\""));
  }
  return d;
}

// ServerOptionsFromFlags checks --server, --batch (default `default_batch`),
// --deadline (default `default_deadline`, if set) and the connection flags
// (`command` names the command in the messages, e.g. "url check/peek").
absl::StatusOr<ServerOptions> ServerOptionsFromFlags(
    const RawFlags& raw, absl::string_view command, size_t default_batch,
    std::optional<absl::Duration> default_deadline = std::nullopt) {
  ServerOptions server;
  server.address = raw.Value("--server").value_or("");
  if (server.address.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(command, " needs --server ADDR"));
  }
  ClientOptions& options = server.client;
  options.max_items_per_request = default_batch;
  if (const std::optional<std::string> batch = raw.Value("--batch");
      batch && (!absl::SimpleAtoi(*batch, &options.max_items_per_request) ||
                options.max_items_per_request < 1 || options.max_items_per_request > kMaxBatch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch must be an integer in 1..", kMaxBatch, ", got \"", *batch, "\""));
  }
  if (default_deadline) options.deadline = *default_deadline;
  if (const std::optional<std::string> deadline = raw.Value("--deadline")) {
    double seconds = 0;
    if (!absl::SimpleAtod(*deadline, &seconds) || !std::isfinite(seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--deadline must be a positive number of "
                       "seconds, got \"",
                       *deadline, "\""));
    }
    options.deadline = absl::Seconds(seconds);
  }
  options.tls = raw.Has("--tls");
  options.tls_ca_file = raw.Value("--tls_ca_file").value_or("");
  options.tls_cert_file = raw.Value("--tls_cert_file").value_or("");
  options.tls_key_file = raw.Value("--tls_key_file").value_or("");
  options.tls_server_name = raw.Value("--tls_server_name").value_or("");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together (a client "
        "certificate)");
  }
  if (const std::optional<std::string> path = raw.Value("--token_file")) {
    absl::StatusOr<std::string> token = ReadBearerTokenFile(*path);
    if (!token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--token_file: ", token.status().message()));
    }
    options.bearer_token = *std::move(token);
  }
  return server;
}

// AtMostOneFile returns the one FILE argument, if any.
absl::StatusOr<std::optional<std::string>> AtMostOneFile(const RawFlags& raw,
                                                         absl::string_view message) {
  if (raw.positional.size() > 1) return absl::InvalidArgumentError(message);
  if (raw.positional.empty()) return std::nullopt;
  return raw.positional[0];
}

dedupd::v1::ClaimMode Mode(absl::string_view sub) {
  return sub == "check" ? dedupd::v1::CLAIM_MODE_CLAIM : dedupd::v1::CLAIM_MODE_PEEK;
}

// ------------------------------------------------ one function a command

absl::StatusOr<NormalizeOptions> NormalizeFromFlags(RawFlags raw) {
  NormalizeOptions options;
  options.config_file = raw.Value("--config").value_or("");
  options.base = raw.Value("--base");
  options.explain = raw.Has("--explain");
  options.urls = std::move(raw.positional);
  return options;
}

absl::StatusOr<CompareOptions> CompareFromFlags(const RawFlags& raw) {
  CompareOptions options;
  DEDUPD_ASSIGN_OR_RETURN(const std::optional<double> j, ParseMinJaccardFlag(raw));
  options.min_jaccard = j.value_or(options.min_jaccard);
  DEDUPD_ASSIGN_OR_RETURN(const std::optional<uint32_t> k,
                          ParseBoundedUint32Flag(raw, "--max_hamming_distance", 0, 64));
  options.max_hamming_distance = k.value_or(options.max_hamming_distance);
  DEDUPD_ASSIGN_OR_RETURN(const std::optional<uint32_t> n,
                          ParseBoundedUint32Flag(raw, "--examples", 0, 1000));
  options.examples = n.value_or(options.examples);
  options.docs = raw.Value("--docs");
  const std::optional<std::string> pairs = raw.Value("--pairs");
  if (!raw.positional.empty()) {
    if (raw.positional.size() != 2) {
      return absl::InvalidArgumentError(
          "compare takes two text files FILE_A FILE_B, or pairs from --pairs or standard input");
    }
    if (options.docs || pairs) {
      return absl::InvalidArgumentError(
          "compare FILE_A FILE_B reads two texts: --docs and --pairs are for JSON lines of pairs");
    }
    options.file_a = raw.positional[0];
    options.file_b = raw.positional[1];
    return options;
  }
  options.pairs = pairs.value_or("-");
  if (options.docs && *options.docs == "-" && options.pairs == "-") {
    return absl::InvalidArgumentError(
        "--docs and --pairs cannot both be standard input: give --pairs FILE");
  }
  return options;
}

absl::StatusOr<TuneOptions> TuneFromFlags(const RawFlags& raw) {
  TuneOptions options;
  const std::optional<std::string> docs = raw.Value("--docs");
  if (!docs) return absl::InvalidArgumentError("tune needs --docs FILE");
  options.docs = *docs;
  options.pairs = raw.Value("--pairs");
  if (options.pairs && *options.pairs == "-" && options.docs == "-") {
    return absl::InvalidArgumentError(
        "--docs and --pairs cannot both be standard input: give --pairs FILE");
  }
  DEDUPD_ASSIGN_OR_RETURN(const std::optional<uint32_t> n,
                          ParseUint32Flag(raw, "--brute_force_max_docs", 0));
  options.brute_force_max_docs = n.value_or(options.brute_force_max_docs);
  if (!raw.positional.empty()) {
    return absl::InvalidArgumentError("tune takes no arguments (the sample is --docs FILE)");
  }
  return options;
}

absl::StatusOr<UrlOptions> UrlFromFlags(absl::string_view sub, RawFlags raw) {
  UrlOptions options;
  options.mode = Mode(sub);
  options.complete = sub == "complete";
  DEDUPD_ASSIGN_OR_RETURN(options.server,
                          ServerOptionsFromFlags(raw, "url check/peek/complete", 1000));
  options.base = raw.Value("--base");
  options.name_space = raw.Value("--namespace").value_or("");
  DEDUPD_ASSIGN_OR_RETURN(options.lease_seconds, ParseUint32Flag(raw, "--lease_seconds", 1));
  if (options.lease_seconds && sub != "check") {
    return absl::InvalidArgumentError(
        absl::StrCat("--lease_seconds is for url check, not url ", sub));
  }
  options.urls = std::move(raw.positional);
  return options;
}

absl::StatusOr<ContentOptions> ContentFromFlags(absl::string_view sub, const RawFlags& raw) {
  ContentOptions options;
  options.mode = Mode(sub);
  DEDUPD_ASSIGN_OR_RETURN(options.server, ServerOptionsFromFlags(raw, "content check/peek", 100));
  options.name_space = raw.Value("--namespace").value_or("");
  DEDUPD_ASSIGN_OR_RETURN(options.max_hamming_distance,
                          ParseUint32Flag(raw, "--max_hamming_distance", 0));
  DEDUPD_ASSIGN_OR_RETURN(options.min_jaccard, ParseMinJaccardFlag(raw));
  // The input rule: --url given means the whole input is one document's
  // text; otherwise the input is JSON lines.
  options.url = raw.Value("--url");
  options.canonical_url = raw.Value("--canonical_url");
  const std::optional<std::string> text_file = raw.Value("--text_file");
  if (options.url) {
    if (!raw.positional.empty()) {
      return absl::InvalidArgumentError(
          "with --url the text comes from --text_file or standard input, "
          "not a FILE argument");
    }
    options.text_file = text_file.value_or("-");
    return options;
  }
  if (options.canonical_url || text_file) {
    return absl::InvalidArgumentError("--canonical_url and --text_file need --url");
  }
  DEDUPD_ASSIGN_OR_RETURN(
      options.file, AtMostOneFile(raw, "content check/peek reads at most one FILE of JSON lines"));
  return options;
}

absl::StatusOr<ChunksOptions> ChunksFromFlags(absl::string_view sub, const RawFlags& raw) {
  ChunksOptions options;
  options.mode = Mode(sub);
  DEDUPD_ASSIGN_OR_RETURN(options.server, ServerOptionsFromFlags(raw, "chunks check/peek", 1));
  options.name_space = raw.Value("--namespace").value_or("");
  DEDUPD_ASSIGN_OR_RETURN(options.max_hamming_distance,
                          ParseUint32Flag(raw, "--max_hamming_distance", 0));
  DEDUPD_ASSIGN_OR_RETURN(options.min_jaccard, ParseMinJaccardFlag(raw));
  DEDUPD_ASSIGN_OR_RETURN(
      options.file, AtMostOneFile(raw, "chunks check/peek reads at most one FILE of JSON lines"));
  return options;
}

absl::StatusOr<ResultsOptions> ResultsFromFlags(const RawFlags& raw) {
  ResultsOptions options;
  DEDUPD_ASSIGN_OR_RETURN(options.server, ServerOptionsFromFlags(raw, "results dedup", 1));
  DEDUPD_ASSIGN_OR_RETURN(options.top_k, ParseUint32Flag(raw, "--top_k", 1));
  DEDUPD_ASSIGN_OR_RETURN(options.per_source_cap, ParseUint32Flag(raw, "--per_source_cap", 0));
  DEDUPD_ASSIGN_OR_RETURN(options.max_hamming_distance,
                          ParseUint32Flag(raw, "--max_hamming_distance", 0));
  DEDUPD_ASSIGN_OR_RETURN(options.min_jaccard, ParseNumberFlag(raw, "--min_jaccard"));
  DEDUPD_ASSIGN_OR_RETURN(options.min_cosine, ParseNumberFlag(raw, "--min_cosine"));
  if (options.max_hamming_distance && options.min_jaccard) {
    return absl::InvalidArgumentError(
        "--max_hamming_distance and --min_jaccard exclude each other");
  }
  DEDUPD_ASSIGN_OR_RETURN(const std::optional<std::string> file,
                          AtMostOneFile(raw, "results dedup reads at most one FILE"));
  options.file = file.value_or("-");
  return options;
}

absl::StatusOr<AdminOptions> AdminFromFlags(const std::string& sub, RawFlags raw) {
  using Command = AdminOptions::Command;
  AdminOptions options;
  options.command = sub == "stats"    ? Command::kStats
                    : sub == "backup" ? Command::kBackup
                    : sub == "export" ? Command::kExport
                    : sub == "forget" ? Command::kForget
                                      : Command::kDropNamespace;
  options.exact = raw.Has("--exact");
  options.skip_urls = raw.Has("--skip_urls");
  options.skip_content = raw.Has("--skip_content");
  // Backup and exact Stats pass over the whole store and are not stopped
  // when the client gives up: a short default would only report failure.
  std::optional<absl::Duration> deadline;
  if (options.command == Command::kExport || options.command == Command::kBackup ||
      (options.command == Command::kStats && options.exact)) {
    deadline = absl::Seconds(3600);
  }
  if (options.command == Command::kForget) deadline = absl::Seconds(600);
  DEDUPD_ASSIGN_OR_RETURN(options.server,
                          ServerOptionsFromFlags(raw, absl::StrCat("admin ", sub), 1, deadline));
  if (options.command == Command::kBackup && raw.positional.size() != 1) {
    return absl::InvalidArgumentError(
        "admin backup needs exactly one DIR (an absolute path on the server)");
  }
  if (options.command == Command::kDropNamespace) {
    if (raw.positional.size() != 1 || raw.positional[0].empty()) {
      return absl::InvalidArgumentError("admin drop-namespace needs exactly one NAME");
    }
    options.name_space = raw.positional[0];
    return options;
  }
  if (options.command != Command::kBackup && options.command != Command::kForget &&
      !raw.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("admin ", sub, " takes no arguments"));
  }
  if (options.command != Command::kStats && options.exact) {
    return absl::InvalidArgumentError("--exact is for admin stats");
  }
  if (options.command != Command::kExport && (options.skip_urls || options.skip_content)) {
    return absl::InvalidArgumentError("--skip_urls and --skip_content are for admin export");
  }
  if (options.command == Command::kBackup) {
    options.backup_dir = raw.positional[0];
  } else {
    options.urls = std::move(raw.positional);
  }
  return options;
}

// A command that talks to a server: its subcommands, the flags it takes
// (besides the connection flags) and how they become its options.
struct ServerCommand {
  const char* name;
  std::vector<std::string> subcommands;
  std::vector<absl::string_view> flags;
  absl::StatusOr<CommandLine> (*options)(const std::string& sub, RawFlags raw);
};

template <typename Options>
absl::StatusOr<CommandLine> Wrap(absl::StatusOr<Options> options) {
  if (!options.ok()) return options.status();
  return CommandLine{*std::move(options)};
}

const ServerCommand kServerCommands[] = {
    {"url",
     {"check", "peek", "complete"},
     {"--server", "--base", "--batch", "--deadline", "--namespace", "--lease_seconds"},
     [](const std::string& sub, RawFlags raw) { return Wrap(UrlFromFlags(sub, std::move(raw))); }},
    {"content",
     {"check", "peek"},
     {"--server", "--batch", "--deadline", "--url", "--canonical_url", "--text_file",
      "--max_hamming_distance", "--min_jaccard", "--namespace"},
     [](const std::string& sub, RawFlags raw) { return Wrap(ContentFromFlags(sub, raw)); }},
    {"chunks",
     {"check", "peek"},
     {"--server", "--deadline", "--max_hamming_distance", "--min_jaccard", "--namespace"},
     [](const std::string& sub, RawFlags raw) { return Wrap(ChunksFromFlags(sub, raw)); }},
    {"results",
     {"dedup"},
     {"--server", "--deadline", "--top_k", "--per_source_cap", "--max_hamming_distance",
      "--min_jaccard", "--min_cosine"},
     [](const std::string&, RawFlags raw) { return Wrap(ResultsFromFlags(raw)); }},
    {"admin",
     {"stats", "backup", "export", "forget", "drop-namespace"},
     {"--server", "--deadline", "--exact", "--skip_urls", "--skip_content"},
     [](const std::string& sub, RawFlags raw) {
       return Wrap(AdminFromFlags(sub, std::move(raw)));
     }},
};

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) return absl::InvalidArgumentError("missing command");
  const std::string& command = words[0];
  if (command == "help" || command == "--help" || command == "-h") {
    return CommandLine{HelpOptions{}};
  }
  if (command == "normalize") {
    DEDUPD_ASSIGN_OR_RETURN(RawFlags raw,
                            ParseFlags(std::vector<std::string>(words.begin() + 1, words.end()),
                                       {"--config", "--base", "--explain"}));
    if (raw.help) return CommandLine{HelpOptions{}};
    return Wrap(NormalizeFromFlags(std::move(raw)));
  }
  if (command == "compare" || command == "tune") {
    const bool compare = command == "compare";
    std::vector<absl::string_view> flags = {"--docs", "--pairs"};
    if (compare) {
      flags.insert(flags.end(), {"--min_jaccard", "--max_hamming_distance", "--examples"});
    } else {
      flags.push_back("--brute_force_max_docs");
    }
    DEDUPD_ASSIGN_OR_RETURN(
        RawFlags raw, ParseFlags(std::vector<std::string>(words.begin() + 1, words.end()), flags));
    if (raw.help) return CommandLine{HelpOptions{}};
    if (compare) return Wrap(CompareFromFlags(raw));
    return Wrap(TuneFromFlags(raw));
  }
  for (const ServerCommand& c : kServerCommands) {
    if (command != c.name) continue;
    const std::string want = absl::StrJoin(c.subcommands, " or ");
    if (words.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat(c.name, " needs ", want));
    }
    const std::string& sub = words[1];
    if (sub == "--help" || sub == "-h") return CommandLine{HelpOptions{}};
    if (std::find(c.subcommands.begin(), c.subcommands.end(), sub) == c.subcommands.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown ", c.name, " command \"", sub, "\" (want ", want, ")"));
    }
    // Every command that talks to a server takes the connection flags.
    std::vector<absl::string_view> flags = c.flags;
    flags.insert(flags.end(), std::begin(kConnectionFlags), std::end(kConnectionFlags));
    DEDUPD_ASSIGN_OR_RETURN(
        RawFlags raw, ParseFlags(std::vector<std::string>(words.begin() + 2, words.end()), flags));
    if (raw.help) return CommandLine{HelpOptions{}};
    return c.options(sub, std::move(raw));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace dedupd::dedupctl
