// dedupctl: dedupd from a shell. One URL (or one JSON document) a line in,
// one JSON object a line out. `normalize` runs the normalizer offline; `url
// check|peek`, `content check|peek` and `chunks check|peek` ask a server
// through the client library, and `results dedup` turns one JSON hit list
// into one JSON decision. docs/dedupctl.md is the user documentation;
// kUsage below is its short form.
//
// Exit codes: 0 every item valid, 1 some item invalid (or a bad input
// line), 2 usage, config, connection or RPC error (with a one-line message
// on stderr).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/json.h"
#include "common/status_macros.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "server/config.h"

namespace dedupd {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitError = 2;

// Input lines longer than this are not sent or normalized: they get a local
// error (the normalizer's own limit is far lower; this one bounds memory).
constexpr size_t kMaxLineBytes = 64 << 10;
// Read size for standard input.
constexpr size_t kReadChunkBytes = 64 << 10;
// --batch upper bound: bounds the lines held in memory at once. The
// server's own per-request limit (10,000 by default) may be lower.
constexpr size_t kMaxBatch = 100000;
constexpr size_t kDefaultBatch = 1000;
// `content`: documents per batch by default, the longest JSON line (or
// --text_file) read, and the text bytes after which a batch is sent even if
// not full (bounds memory: the server's default message limit is 16 MiB).
constexpr size_t kDefaultContentBatch = 100;
constexpr size_t kMaxContentLineBytes = 16 << 20;
constexpr size_t kMaxContentBatchBytes = 16 << 20;
// `chunks`: the longest JSON line (one document with all its chunks; the
// server's default message limit is 16 MiB too).
constexpr size_t kMaxChunksLineBytes = 16 << 20;
// `results dedup`: the most input read (one JSON value, held whole).
constexpr size_t kMaxResultsInputBytes = 64 << 20;
// Progress appears once a run is this old, then at most this often.
constexpr absl::Duration kProgressAfter = absl::Seconds(1);
constexpr absl::Duration kProgressEvery = absl::Milliseconds(500);

constexpr char kUsage[] =
    R"(usage: dedupctl <command> [flags] [URL...]

commands:
  normalize [--config FILE] [--base URL] [--explain] [URL...]
      Normalize URLs offline (no server), with the per-host policy of a
      dedupd config file. Prints {"url", "normalized"} or {"url", "error"};
      --explain adds "rules": the normalization rules that fired.
  url check --server ADDR [--base URL] [--batch N] [--deadline SECONDS] [URL...]
      Claim URLs on a dedupd server: NEW the first time, SEEN after.
  url peek  --server ADDR [--base URL] [--batch N] [--deadline SECONDS] [URL...]
      Like check, but records nothing.
  content check --server ADDR [--batch N] [--deadline SECONDS]
                [--max_hamming_distance K] [FILE]
      Check and record documents: NEW, EXACT_DUPLICATE or NEAR_DUPLICATE.
      Input: JSON lines from FILE (or standard input when FILE is absent or
      "-"), one document a line: {"url": "...", "text": "...",
      "canonical_url": "...", "max_hamming_distance": 3} (url and text
      required). A bad line prints its own error line and the run goes on.
  content check --server ADDR --url URL [--canonical_url URL]
                [--max_hamming_distance K] [--text_file FILE]
      One document: its whole text is read from --text_file (or standard
      input when absent or "-"), as is.
  content peek ...
      Like content check, but records nothing.
  chunks check --server ADDR [--deadline SECONDS] [--max_hamming_distance K]
               [FILE]
      Check and record each document's chunks (one request per document;
      its chunks replace those stored for it): NEW, EXACT_DUPLICATE or
      NEAR_DUPLICATE of another chunk. Input: JSON lines, one document a
      line: {"document_url": "...", "chunks": ["text", ...] or
      [{"text": "...", "chunk_id": "..."}, ...], "max_hamming_distance": 3}.
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
      "not_examined", "per_source_cap"}, or {"error"} for a bad input.
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
                      SimHash distance (default 3)
  --top_k N           results: hits to keep, >= 1 (default: all of them)
  --per_source_cap N  results: most hits kept per source_url, 0: no cap
                      (default: 2 when top_k <= 5, else 3)
  --min_jaccard J     results: compare texts by shingle Jaccard >= J instead
                      of SimHash (default 0.8 when chosen)
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

// ---------------------------------------------------------------- output

// Writes to stdout through stdio's buffer; Flush reports a failed write
// (a closed pipe, a full disk) once, so that the exit code says so.
bool WriteLine(const std::string& line) {
  return std::fwrite(line.data(), 1, line.size(), stdout) == line.size() &&
         std::fputc('\n', stdout) != EOF;
}

absl::Status FlushStdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return absl::UnavailableError(
        absl::StrCat("write to standard output: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// Errors are one line on stderr, whatever their message holds.
void PrintError(absl::string_view message) {
  std::string line = absl::StrReplaceAll(message, {{"\n", " "}, {"\r", " "}});
  std::fprintf(stderr, "dedupctl: %s\n", line.c_str());
}

int UsageError(absl::string_view message) {
  PrintError(message);
  std::fputs(kUsage, stderr);
  return kExitError;
}

// Progress on stderr: items done and rate, on runs longer than
// kProgressAfter. Only when stderr is a terminal and stdout is not (on a
// terminal the output lines are the progress, and the two would mix).
class Progress {
 public:
  Progress()
      : enabled_(isatty(STDERR_FILENO) == 1 && isatty(STDOUT_FILENO) != 1),
        start_(absl::Now()) {}

  void Update(size_t done) {
    if (!enabled_) return;
    const absl::Time now = absl::Now();
    if (now - start_ < kProgressAfter || now - last_ < kProgressEvery) return;
    last_ = now;
    Print(done, now);
  }

  // Finish prints the final count and ends the line, if progress was shown.
  void Finish(size_t done) {
    if (!shown_) return;
    Print(done, absl::Now());
    std::fputc('\n', stderr);
  }

 private:
  void Print(size_t done, absl::Time now) {
    const double seconds = absl::ToDoubleSeconds(now - start_);
    std::fprintf(stderr, "\rdedupctl: %zu items, %.0f items/s", done,
                 seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
    std::fflush(stderr);
    shown_ = true;
  }

  const bool enabled_;
  const absl::Time start_;
  absl::Time last_ = absl::InfinitePast();
  bool shown_ = false;
};

// ----------------------------------------------------------------- input

// One URL to process: the input as read, or a local error instead.
struct InputItem {
  std::string url;
  std::optional<std::string> error;  // set: do not process, report this
};

// LineReader reads lines from a file descriptor, streaming: it never holds
// more than one line (at most max_line_bytes of it) plus one read chunk.
class LineReader {
 public:
  LineReader(int fd, size_t max_line_bytes)
      : fd_(fd), max_line_bytes_(max_line_bytes) {}

  // ReadLine reads one line without its "\n" (and without a trailing "\r")
  // into `*line`, keeping at most max_line_bytes of it (`*too_long` when
  // more were dropped). Returns false at the end of the input or on a read
  // error (see status()).
  bool ReadLine(std::string* line, bool* too_long) {
    line->clear();
    *too_long = false;
    bool any = false;
    while (true) {
      const size_t newline = buffer_.find('\n', pos_);
      const size_t end =
          newline == std::string::npos ? buffer_.size() : newline;
      const size_t room = max_line_bytes_ - line->size();
      const size_t take = std::min(room, end - pos_);
      line->append(buffer_, pos_, take);
      if (end - pos_ > take) *too_long = true;
      any = any || end > pos_;
      if (newline != std::string::npos) {
        pos_ = newline + 1;
        break;
      }
      buffer_.clear();
      pos_ = 0;
      if (eof_ || !Fill()) {
        if (!any) return false;
        break;
      }
    }
    ++line_number_;
    if (!line->empty() && line->back() == '\r') line->pop_back();
    return true;
  }

  // The 1-based number of the line ReadLine returned last.
  size_t line_number() const { return line_number_; }

  // WouldBlock returns true when the next ReadLine() may have to wait for
  // input: no complete line is buffered and the descriptor has nothing to
  // read right now. Lets a caller send what it has instead of waiting
  // (e.g. `tail -f log | dedupctl url check`).
  bool WouldBlock() const {
    if (eof_) return false;
    if (buffer_.find('\n', pos_) != std::string::npos) return false;
    pollfd p = {fd_, POLLIN, 0};
    return poll(&p, 1, 0) == 0;
  }

  // Set `before_block` to run before a read that would wait for input
  // (e.g. to flush output a person at the other end is waiting for).
  void set_before_block(std::function<void()> before_block) {
    before_block_ = std::move(before_block);
  }

  const absl::Status& status() const { return status_; }

 private:
  // Reads the next chunk into the (empty) buffer. Returns false at end of
  // input or on error.
  bool Fill() {
    if (before_block_) {
      pollfd p = {fd_, POLLIN, 0};
      if (poll(&p, 1, 0) == 0) before_block_();
    }
    buffer_.resize(kReadChunkBytes);
    while (true) {
      const ssize_t n = read(fd_, buffer_.data(), buffer_.size());
      if (n > 0) {
        buffer_.resize(static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        status_ = absl::UnavailableError(
            absl::StrCat("read input: ", std::strerror(errno)));
      }
      buffer_.clear();
      eof_ = true;
      return false;
    }
  }

  int fd_;
  size_t max_line_bytes_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t line_number_ = 0;
  bool eof_ = false;
  absl::Status status_;
  std::function<void()> before_block_;
};

// Blank: empty or only spaces and tabs.
bool IsBlank(absl::string_view line) {
  return line.find_first_not_of(" \t") == absl::string_view::npos;
}

// UrlSource yields URLs from the command line or, streaming, from a file
// descriptor (one per line).
class UrlSource {
 public:
  static UrlSource FromArgs(std::vector<std::string> urls) {
    UrlSource s;
    s.args_ = std::move(urls);
    return s;
  }
  static UrlSource FromFd(int fd) {
    UrlSource s;
    s.reader_.emplace(fd, kMaxLineBytes);
    return s;
  }

  // Next stores the next URL in `*item`; returns false at the end of the
  // input or on a read error (see status()). Lines: a trailing "\r" is
  // stripped; blank lines (empty or only spaces and tabs) are skipped.
  // Arguments are taken as given.
  bool Next(InputItem* item) {
    item->error.reset();
    if (!reader_) {
      if (next_arg_ >= args_.size()) return false;
      item->url = std::move(args_[next_arg_++]);
      return true;
    }
    while (true) {
      bool too_long = false;
      if (!reader_->ReadLine(&item->url, &too_long)) return false;
      if (too_long) {
        item->error =
            absl::StrCat("input line longer than ", kMaxLineBytes, " bytes");
        return true;
      }
      if (!IsBlank(item->url)) return true;
    }
  }

  bool WouldBlock() const { return reader_ && reader_->WouldBlock(); }

  // NextBatch replaces `*batch` with up to `max_items` items, sending a
  // partial batch rather than waiting for input; false once the input is
  // exhausted (the batch may still hold the last items).
  bool NextBatch(size_t max_items, std::vector<InputItem>* batch) {
    batch->clear();
    while (batch->size() < max_items) {
      if (!batch->empty() && WouldBlock()) return true;
      InputItem item;
      if (!Next(&item)) return false;
      batch->push_back(std::move(item));
    }
    return true;
  }

  void set_before_block(std::function<void()> before_block) {
    if (reader_) reader_->set_before_block(std::move(before_block));
  }

  absl::Status status() const {
    return reader_ ? reader_->status() : absl::OkStatus();
  }

 private:
  UrlSource() = default;

  std::vector<std::string> args_;
  size_t next_arg_ = 0;
  std::optional<LineReader> reader_;
};

// ----------------------------------------------------------- arguments

struct Args {
  std::vector<std::string> positional;
  std::optional<std::string> config, base, server, batch, deadline;
  std::optional<std::string> url, canonical_url, text_file,
      max_hamming_distance;
  std::optional<std::string> top_k, per_source_cap, min_jaccard, min_cosine;
  std::optional<std::string> tls_ca_file, tls_cert_file, tls_key_file, tls_server_name,
      token_file;
  bool explain = false;
  bool tls = false;
  bool exact = false;         // admin stats
  bool skip_urls = false;     // admin export
  bool skip_content = false;  // admin export
  bool help = false;
};

// ParseFlags reads `argv` (after the command words). `allowed` names the
// flags the command takes. Flags and URLs may be mixed; "--" ends flags.
// Returns InvalidArgument with a one-line message for a usage error.
absl::StatusOr<Args> ParseFlags(const std::vector<std::string>& argv,
                                const std::vector<absl::string_view>& allowed) {
  Args args;
  bool flags_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (flags_done || arg.empty() || arg[0] != '-' || arg == "-") {
      args.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg == "-h" || arg == "--help") {
      args.help = true;
      continue;
    }
    if (arg.size() < 3 || arg[1] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", arg));
    }
    absl::string_view name = arg;
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    bool known = false;
    for (absl::string_view a : allowed) known = known || a == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag ", name, " for this command"));
    }
    const std::pair<absl::string_view, bool*> switches[] = {
        {"--explain", &args.explain},
        {"--tls", &args.tls},
        {"--exact", &args.exact},
        {"--skip_urls", &args.skip_urls},
        {"--skip_content", &args.skip_content},
    };
    bool is_switch = false;
    for (const auto& [flag, slot] : switches) {
      if (flag != name) continue;
      if (value) {
        return absl::InvalidArgumentError(absl::StrCat(flag, " takes no value"));
      }
      *slot = true;
      is_switch = true;
    }
    if (is_switch) continue;
    if (!value) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
      value = argv[++i];
    }
    const std::pair<absl::string_view, std::optional<std::string>*> slots[] = {
        {"--config", &args.config},
        {"--base", &args.base},
        {"--server", &args.server},
        {"--batch", &args.batch},
        {"--deadline", &args.deadline},
        {"--url", &args.url},
        {"--canonical_url", &args.canonical_url},
        {"--text_file", &args.text_file},
        {"--max_hamming_distance", &args.max_hamming_distance},
        {"--top_k", &args.top_k},
        {"--per_source_cap", &args.per_source_cap},
        {"--min_jaccard", &args.min_jaccard},
        {"--min_cosine", &args.min_cosine},
        {"--tls_ca_file", &args.tls_ca_file},
        {"--tls_cert_file", &args.tls_cert_file},
        {"--tls_key_file", &args.tls_key_file},
        {"--tls_server_name", &args.tls_server_name},
        {"--token_file", &args.token_file},
    };
    for (const auto& [flag, slot] : slots) {
      if (flag == name) *slot = *value;
    }
  }
  return args;
}

UrlSource MakeSource(Args& args) {
  if (!args.positional.empty()) {
    return UrlSource::FromArgs(std::move(args.positional));
  }
  return UrlSource::FromFd(STDIN_FILENO);
}

// ------------------------------------------------------------ normalize

int RunNormalize(Args args) {
  absl::StatusOr<DedupConfig> config = LoadConfigFile(args.config.value_or(""));
  if (!config.ok()) {
    PrintError(config.status().message());
    return kExitError;
  }
  const UrlNormalizer normalizer(std::move(config->url_policy));
  const std::string base = args.base.value_or("");
  if (args.base) {
    if (absl::StatusOr<std::string> b = normalizer.Normalize(base); !b.ok()) {
      return UsageError(absl::StrCat("--base: ", b.status().message()));
    }
  }

  UrlSource source = MakeSource(args);
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
          normalizer.Normalize(item.url, base, args.explain ? &rules : nullptr);
      if (normalized.ok()) {
        json.String("normalized", *normalized);
      } else {
        any_invalid = true;
        json.String("error", normalized.status().message());
      }
    }
    if (args.explain) json.StringArray("rules", rules);
    write_ok = WriteLine(std::move(json).Finish()) && write_ok;
    progress.Update(++done);
  }
  progress.Finish(done);
  absl::Status status = source.status();
  if (status.ok()) status = FlushStdout();
  if (status.ok() && !write_ok) {
    status = absl::UnavailableError("write to standard output failed");
  }
  if (!status.ok()) {
    PrintError(status.message());
    return kExitError;
  }
  return any_invalid ? kExitInvalid : kExitOk;
}

// ------------------------------------------------------------------ url

// EnumName returns a dedupd.v1 enum value's name without its type's prefix
// (URL_VERDICT_NEW -> "NEW"), "UNSPECIFIED" for a number this build does not
// know. The prefix is what the type's zero value, X_UNSPECIFIED, has before
// "UNSPECIFIED" (the proto style guide's rule every dedupd enum follows).
template <typename Enum>
std::string EnumName(Enum value) {
  const google::protobuf::EnumDescriptor* type = google::protobuf::GetEnumDescriptor<Enum>();
  const google::protobuf::EnumValueDescriptor* v = type->FindValueByNumber(value);
  if (v == nullptr) return "UNSPECIFIED";
  absl::string_view prefix = type->FindValueByNumber(0)->name();
  absl::ConsumeSuffix(&prefix, "UNSPECIFIED");
  return std::string(absl::StripPrefix(v->name(), prefix));
}

// RFC 3339 in UTC with a "Z", fractional seconds only when non-zero.
std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  const absl::Time time =
      absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", time, absl::UTCTimeZone());
}

// Sends one batch (skipping items with a local error) and prints a line per
// item. Returns an error for a failed call; sets *any_invalid.
absl::Status CheckBatch(const DedupClient& client, dedupd::v1::ClaimMode mode,
                        const std::string& base,
                        const std::vector<InputItem>& batch,
                        bool* any_invalid) {
  std::vector<dedupd::v1::UrlItem> items;
  items.reserve(batch.size());
  for (const InputItem& input : batch) {
    if (input.error) continue;
    dedupd::v1::UrlItem& item = items.emplace_back();
    item.set_url(input.url);
    if (!base.empty()) item.set_base_url(base);
  }
  std::vector<dedupd::v1::UrlResult> results;
  if (!items.empty()) {
    absl::StatusOr<std::vector<dedupd::v1::UrlResult>> r =
        client.CheckUrls(items, mode);
    if (!r.ok()) return r.status();
    results = std::move(r).value();
  }
  size_t next = 0;
  bool write_ok = true;
  for (const InputItem& input : batch) {
    JsonObjectWriter json;
    json.String("url", input.url);
    if (input.error) {
      *any_invalid = true;
      json.String("verdict", "INVALID").String("error", *input.error);
    } else {
      const dedupd::v1::UrlResult& result = results[next++];
      if (result.verdict() != dedupd::v1::URL_VERDICT_INVALID) {
        json.String("normalized", result.normalized_url());
      }
      json.String("verdict", EnumName(result.verdict()));
      if (result.verdict() == dedupd::v1::URL_VERDICT_SEEN &&
          result.has_first_seen_time()) {
        json.String("first_seen", FormatTimestamp(result.first_seen_time()));
      }
      if (result.verdict() == dedupd::v1::URL_VERDICT_INVALID) {
        *any_invalid = true;
        json.String("error", result.error());
      }
    }
    write_ok = WriteLine(std::move(json).Finish()) && write_ok;
  }
  absl::Status flushed = FlushStdout();
  if (flushed.ok() && !write_ok) {
    return absl::UnavailableError("write to standard output failed");
  }
  return flushed;
}

// ParseUint32Flag reads `--flag VALUE` as an integer in min..4294967295.
// Returns InvalidArgument with the usage message.
absl::StatusOr<uint32_t> ParseUint32Flag(absl::string_view flag,
                                         const std::string& value,
                                         uint32_t min) {
  uint32_t n = 0;
  if (!absl::SimpleAtoi(value, &n) || n < min) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be an integer in ", min,
                     "..4294967295, got \"", value, "\""));
  }
  return n;
}

// ParseNumberFlag reads `--flag VALUE` as a finite number. Returns
// InvalidArgument with the usage message.
absl::StatusOr<double> ParseNumberFlag(absl::string_view flag,
                                       const std::string& value) {
  double d = 0;
  if (!absl::SimpleAtod(value, &d) || !std::isfinite(d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " must be a number, got \"", value, "\""));
  }
  return d;
}

// ClientOptionsFromArgs checks --server, --batch (default `default_batch`)
// and --deadline, shared by the commands that talk to a server (`command`
// names one in the messages, e.g. "url check/peek"). Returns
// InvalidArgument with the usage message.
absl::StatusOr<ClientOptions> ClientOptionsFromArgs(const Args& args,
                                                    absl::string_view command,
                                                    size_t default_batch) {
  if (!args.server || args.server->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command, " needs --server ADDR"));
  }
  size_t batch_size = default_batch;
  if (args.batch && (!absl::SimpleAtoi(*args.batch, &batch_size) ||
                     batch_size < 1 || batch_size > kMaxBatch)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch must be an integer in 1..", kMaxBatch,
                     ", got \"", *args.batch, "\""));
  }
  ClientOptions options;
  options.max_items_per_request = batch_size;
  if (args.deadline) {
    double seconds = 0;
    if (!absl::SimpleAtod(*args.deadline, &seconds) ||
        !std::isfinite(seconds) || seconds <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--deadline must be a positive number of "
                       "seconds, got \"",
                       *args.deadline, "\""));
    }
    options.deadline = absl::Seconds(seconds);
  }
  options.tls = args.tls;
  options.tls_ca_file = args.tls_ca_file.value_or("");
  options.tls_cert_file = args.tls_cert_file.value_or("");
  options.tls_key_file = args.tls_key_file.value_or("");
  options.tls_server_name = args.tls_server_name.value_or("");
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "--tls_cert_file and --tls_key_file go together (a client certificate)");
  }
  if (args.token_file) {
    absl::StatusOr<std::string> token = ReadBearerTokenFile(*args.token_file);
    if (!token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--token_file: ", token.status().message()));
    }
    options.bearer_token = *std::move(token);
  }
  return options;
}

int RunUrl(dedupd::v1::ClaimMode mode, Args args) {
  absl::StatusOr<ClientOptions> client_options =
      ClientOptionsFromArgs(args, "url check/peek", kDefaultBatch);
  if (!client_options.ok()) {
    return UsageError(client_options.status().message());
  }
  const ClientOptions& options = *client_options;
  const size_t batch_size = options.max_items_per_request;
  const std::string base = args.base.value_or("");
  if (args.base) {
    // The server applies its own policy; this only checks that the base is
    // an absolute http(s) URL, to fail once instead of once per URL.
    if (absl::StatusOr<std::string> b = UrlNormalizer().Normalize(base);
        !b.ok()) {
      return UsageError(absl::StrCat("--base: ", b.status().message()));
    }
  }
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(*args.server, options);
  if (!client.ok()) {
    PrintError(client.status().message());
    return kExitError;
  }

  UrlSource source = MakeSource(args);
  Progress progress;
  size_t done = 0;
  bool any_invalid = false;
  std::vector<InputItem> batch;
  bool more = true;
  while (more) {
    more = source.NextBatch(batch_size, &batch);
    if (batch.empty()) break;
    if (absl::Status s = CheckBatch(**client, mode, base, batch, &any_invalid);
        !s.ok()) {
      progress.Finish(done);
      PrintError(s.message());
      return kExitError;
    }
    done += batch.size();
    progress.Update(done);
  }
  progress.Finish(done);
  if (!source.status().ok()) {
    PrintError(source.status().message());
    return kExitError;
  }
  return any_invalid ? kExitInvalid : kExitOk;
}

// -------------------------------------------------------------- content

// One document to check: the request item, or a local error instead (a bad
// input line), with where it came from.
struct ContentInput {
  // The 1-based input line; 0 for the --url form.
  size_t line = 0;
  dedupd::v1::ContentItem item;
  std::optional<std::string> error;  // set: not sent, report this
};

// ParseDocument turns one JSON line into a request item: "url" and "text"
// strings are required; "canonical_url" (string) and
// "max_hamming_distance" (integer 0..2^32-1) are optional, and null counts
// as absent; other members are ignored. Returns InvalidArgument saying
// what is wrong.
absl::Status ParseDocument(absl::string_view line,
                           dedupd::v1::ContentItem* item) {
  absl::StatusOr<JsonFlatObject> object = ParseJsonFlatObject(line);
  if (!object.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", object.status().message()));
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
      return required ? absl::InvalidArgumentError(
                            absl::StrCat("missing \"", name, "\""))
                      : absl::OkStatus();
    }
    if (v->type != JsonScalar::Type::kString) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", name, "\" must be a string"));
    }
    *out = v->string;
    return absl::OkStatus();
  };
  if (absl::Status s = string_member("url", true, item->mutable_url());
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          string_member("canonical_url", false, item->mutable_canonical_url());
      !s.ok()) {
    return s;
  }
  if (absl::Status s = string_member("text", true, item->mutable_text());
      !s.ok()) {
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
    absl::Status s =
        too_long ? absl::InvalidArgumentError(absl::StrCat(
                       "longer than ", kMaxContentLineBytes, " bytes"))
                 : ParseDocument(line, &input->item);
    if (!s.ok()) {
      input->error = absl::StrCat("line ", input->line, ": ", s.message());
    }
    return true;
  }

  bool WouldBlock() const { return reader_ && reader_->WouldBlock(); }

  absl::Status status() const {
    return reader_ ? reader_->status() : absl::OkStatus();
  }

 private:
  ContentSource() = default;

  std::optional<LineReader> reader_;
  std::optional<ContentInput> single_;
};

// SimHashes print as 16 lowercase hex digits: a JSON number would lose
// bits above 2^53 in most readers.
std::string SimHashHex(uint64_t simhash) {
  return absl::StrFormat("%016x", simhash);
}

// The output line of one document (docs/dedupctl.md, "content check|peek").
// `result` is nullptr for a bad input line.
std::string ContentLine(const ContentInput& input,
                        const dedupd::v1::ContentResult* result) {
  JsonObjectWriter json;
  if (result == nullptr || result->verdict() ==
                               dedupd::v1::CONTENT_VERDICT_INVALID) {
    json.String("verdict", "INVALID");
    if (input.line > 0) json.Int("line", static_cast<int64_t>(input.line));
    if (!input.item.url().empty()) json.String("url", input.item.url());
    json.String("error", result == nullptr ? *input.error : result->error());
    return std::move(json).Finish();
  }
  json.String("verdict", EnumName(result->verdict()))
      .String("url", result->url())
      .String("canonical_url", result->canonical_url())
      .String("content_hash", result->content_hash())
      .String("simhash", SimHashHex(result->simhash()))
      .String("owner_url", result->owner_url());
  std::vector<absl::string_view> aliases(result->alias_urls().begin(),
                                         result->alias_urls().end());
  json.StringArray("alias_urls", aliases).Uint("alias_count",
                                               result->alias_count());
  std::vector<std::string> matches;
  for (const dedupd::v1::NearMatch& m : result->near_matches()) {
    JsonObjectWriter match;
    match.String("url", m.url())
        .String("simhash", SimHashHex(m.simhash()))
        .Uint("distance", m.distance())
        .String("content_hash", m.content_hash());
    matches.push_back(std::move(match).Finish());
  }
  json.RawArray("near_matches", matches)
      .Uint("near_match_count", result->near_match_count())
      .String("recrawl", EnumName(result->recrawl()));
  if (result->has_first_seen_time()) {
    json.String("first_seen_time", FormatTimestamp(result->first_seen_time()));
  }
  return std::move(json).Finish();
}

// Sends one batch (skipping bad lines) and prints a line per document.
// Returns an error for a failed call; sets *any_invalid.
absl::Status CheckContentBatch(const DedupClient& client,
                               dedupd::v1::ClaimMode mode,
                               const std::vector<ContentInput>& batch,
                               bool* any_invalid) {
  std::vector<dedupd::v1::ContentItem> items;
  items.reserve(batch.size());
  for (const ContentInput& input : batch) {
    if (!input.error) items.push_back(input.item);
  }
  std::vector<dedupd::v1::ContentResult> results;
  if (!items.empty()) {
    absl::StatusOr<std::vector<dedupd::v1::ContentResult>> r =
        client.CheckContent(items, mode);
    if (!r.ok()) return r.status();
    results = std::move(r).value();
  }
  size_t next = 0;
  bool write_ok = true;
  for (const ContentInput& input : batch) {
    const dedupd::v1::ContentResult* result =
        input.error ? nullptr : &results[next++];
    if (result == nullptr ||
        result->verdict() == dedupd::v1::CONTENT_VERDICT_INVALID) {
      *any_invalid = true;
    }
    write_ok = WriteLine(ContentLine(input, result)) && write_ok;
  }
  absl::Status flushed = FlushStdout();
  if (flushed.ok() && !write_ok) {
    return absl::UnavailableError("write to standard output failed");
  }
  return flushed;
}

// ReadTextFile reads all of `path` ("-": standard input) into `*text`,
// keeping at most `max_bytes` (`*too_long` when there was more).
absl::Status ReadTextFile(const std::string& path, size_t max_bytes,
                          std::string* text, bool* too_long) {
  const bool is_stdin = path == "-";
  const int fd = is_stdin ? STDIN_FILENO : open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("open ", path, ": ", std::strerror(errno)));
  }
  text->clear();
  *too_long = false;
  std::string chunk(kReadChunkBytes, '\0');
  absl::Status status;
  while (true) {
    const ssize_t n = read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = absl::UnavailableError(absl::StrCat(
          "read ", is_stdin ? "standard input" : path, ": ",
          std::strerror(errno)));
      break;
    }
    if (n == 0) break;
    const size_t take =
        std::min(static_cast<size_t>(n), max_bytes - text->size());
    text->append(chunk, 0, take);
    if (take < static_cast<size_t>(n)) {
      *too_long = true;
      break;
    }
  }
  if (!is_stdin) close(fd);
  return status;
}

int RunContent(dedupd::v1::ClaimMode mode, Args args) {
  absl::StatusOr<ClientOptions> client_options =
      ClientOptionsFromArgs(args, "content check/peek", kDefaultContentBatch);
  if (!client_options.ok()) {
    return UsageError(client_options.status().message());
  }
  const ClientOptions& options = *client_options;
  const size_t batch_size = options.max_items_per_request;
  std::optional<uint32_t> distance;
  if (args.max_hamming_distance) {
    absl::StatusOr<uint32_t> k = ParseUint32Flag("--max_hamming_distance",
                                                 *args.max_hamming_distance, 0);
    if (!k.ok()) return UsageError(k.status().message());
    distance = *k;
  }

  // The input rule: --url given means the whole input is one document's
  // text; otherwise the input is JSON lines.
  std::optional<ContentSource> source;
  int input_fd = -1;
  if (args.url) {
    if (!args.positional.empty()) {
      return UsageError(
          "with --url the text comes from --text_file or standard input, "
          "not a FILE argument");
    }
    ContentInput input;
    input.item.set_url(*args.url);
    if (args.canonical_url) input.item.set_canonical_url(*args.canonical_url);
    bool too_long = false;
    if (absl::Status s =
            ReadTextFile(args.text_file.value_or("-"), kMaxContentLineBytes,
                         input.item.mutable_text(), &too_long);
        !s.ok()) {
      PrintError(s.message());
      return kExitError;
    }
    if (too_long) {
      input.error =
          absl::StrCat("text longer than ", kMaxContentLineBytes, " bytes");
      input.item.clear_text();
    }
    source = ContentSource::FromDocument(std::move(input));
  } else {
    if (args.canonical_url || args.text_file) {
      return UsageError("--canonical_url and --text_file need --url");
    }
    if (args.positional.size() > 1) {
      return UsageError(
          "content check/peek reads at most one FILE of JSON lines");
    }
    if (!args.positional.empty() && args.positional[0] != "-") {
      input_fd = open(args.positional[0].c_str(), O_RDONLY);
      if (input_fd < 0) {
        PrintError(absl::StrCat("open ", args.positional[0], ": ",
                                std::strerror(errno)));
        return kExitError;
      }
    }
    source = ContentSource::FromJsonLines(input_fd >= 0 ? input_fd
                                                        : STDIN_FILENO);
  }

  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(*args.server, options);
  if (!client.ok()) {
    PrintError(client.status().message());
    return kExitError;
  }

  Progress progress;
  size_t done = 0;
  bool any_invalid = false;
  std::vector<ContentInput> batch;
  bool more = true;
  int exit_code = kExitOk;
  while (more) {
    // Fill a batch (by count and by text bytes), but send a partial one
    // rather than wait for input.
    batch.clear();
    size_t batch_bytes = 0;
    while (batch.size() < batch_size && batch_bytes < kMaxContentBatchBytes) {
      if (!batch.empty() && source->WouldBlock()) break;
      ContentInput input;
      if (!source->Next(&input)) {
        more = false;
        break;
      }
      if (distance && !input.item.has_max_hamming_distance()) {
        input.item.set_max_hamming_distance(*distance);
      }
      batch_bytes += input.item.text().size();
      batch.push_back(std::move(input));
    }
    if (batch.empty()) break;
    if (absl::Status s = CheckContentBatch(**client, mode, batch, &any_invalid);
        !s.ok()) {
      PrintError(s.message());
      exit_code = kExitError;
      break;
    }
    done += batch.size();
    progress.Update(done);
  }
  progress.Finish(done);
  if (exit_code == kExitOk && !source->status().ok()) {
    PrintError(source->status().message());
    exit_code = kExitError;
  }
  if (input_fd >= 0) close(input_fd);
  if (exit_code != kExitOk) return exit_code;
  return any_invalid ? kExitInvalid : kExitOk;
}

// ----------------------------------------------------------- JSON trees

// `chunks` and `results` read nested JSON (arrays of chunks, of hits, of
// embedding elements), which ParseJsonFlatObject does not: they parse with
// protobuf's JSON parser into a google::protobuf::Value tree and map the
// tree onto the request with the checks below. Numbers in the tree are
// doubles, so integers are checked to be whole and in range, and ids must
// be strings (a double would silently round ids above 2^53).

// ParseJsonValue parses `json` as exactly one JSON value (protobuf's
// parser: RFC 8259, also accepting single quotes and a trailing comma;
// duplicate member names are an error). Returns InvalidArgument
// "invalid JSON: <protobuf's reason> (near: <input around the error>)".
absl::StatusOr<google::protobuf::Value> ParseJsonValue(absl::string_view json) {
  google::protobuf::Value value;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &value);
  if (status.ok()) return value;
  // protobuf's message is "<reason>\n<input around the error, about 20
  // bytes either side>\n<spaces>^": keep the reason and the excerpt (its
  // line breaks as spaces), on one line.
  const std::string reason(status.message().data(), status.message().size());
  const size_t first = reason.find('\n');
  const size_t last = reason.rfind('\n');
  std::string message = "invalid JSON";
  if (!IsBlank(reason.substr(0, first))) {
    absl::StrAppend(&message, ": ", reason.substr(0, first));
  }
  if (first != std::string::npos && last > first) {
    const std::string excerpt = absl::StrReplaceAll(
        reason.substr(first + 1, last - first - 1), {{"\n", " "}, {"\r", " "}});
    if (!IsBlank(excerpt)) {
      absl::StrAppend(&message, " (near: ", absl::StripAsciiWhitespace(excerpt),
                      ")");
    }
  }
  return absl::InvalidArgumentError(message);
}

absl::string_view JsonKindName(const google::protobuf::Value& value) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kNullValue:
      return "null";
    case google::protobuf::Value::kNumberValue:
      return "a number";
    case google::protobuf::Value::kStringValue:
      return "a string";
    case google::protobuf::Value::kBoolValue:
      return "a boolean";
    case google::protobuf::Value::kStructValue:
      return "an object";
    case google::protobuf::Value::kListValue:
      return "an array";
    default:
      return "nothing";
  }
}

absl::Status WrongType(absl::string_view path, absl::string_view want,
                       const google::protobuf::Value& got) {
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", path, "\" must be ", want, ", not ", JsonKindName(got)));
}

// JsonNumber formats `value` as the shortest JSON number that reads back
// as the same double ("0.5", "3", "1e+20"); null when not finite.
std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  return buffer;
}

// Member returns `object`'s member `name`, or nullptr when it is absent or
// null (null counts as absent everywhere).
const google::protobuf::Value* Member(const google::protobuf::Struct& object,
                                      const std::string& name) {
  auto it = object.fields().find(name);
  if (it == object.fields().end() ||
      it->second.kind_case() == google::protobuf::Value::kNullValue) {
    return nullptr;
  }
  return &it->second;
}

// StringMember stores `object`'s string member `name` in `*out`. Returns
// InvalidArgument naming `path` when it is not a string, or when it is
// absent and `required`.
absl::Status StringMember(const google::protobuf::Struct& object,
                          const std::string& name, absl::string_view path,
                          bool required, std::string* out) {
  const google::protobuf::Value* v = Member(object, name);
  if (v == nullptr) {
    return required ? absl::InvalidArgumentError(
                          absl::StrCat("missing \"", path, "\""))
                    : absl::OkStatus();
  }
  if (v->kind_case() != google::protobuf::Value::kStringValue) {
    return WrongType(path, "a string", *v);
  }
  *out = v->string_value();
  return absl::OkStatus();
}

// WholeNumber returns `value` as an integer in min..max. Returns
// InvalidArgument naming `path` for anything else (a fraction, out of
// range, not a number).
absl::StatusOr<uint32_t> WholeNumber(const google::protobuf::Value& value,
                                     absl::string_view path, uint32_t min) {
  constexpr uint32_t kMax = UINT32_MAX;
  const std::string want = absl::StrCat("a whole number in ", min, "..", kMax);
  if (value.kind_case() != google::protobuf::Value::kNumberValue) {
    return WrongType(path, want, value);
  }
  const double d = value.number_value();
  if (!(d >= min && d <= kMax && d == std::floor(d))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" must be ", want, ", not ", JsonNumber(d)));
  }
  return static_cast<uint32_t>(d);
}

// Number returns `value` as a double. Returns InvalidArgument naming
// `path` when it is not a number. (JSON has no NaN or infinity; protobuf's
// parser rejects numbers beyond the double range.)
absl::StatusOr<double> Number(const google::protobuf::Value& value,
                              absl::string_view path) {
  if (value.kind_case() != google::protobuf::Value::kNumberValue) {
    return WrongType(path, "a number", value);
  }
  return value.number_value();
}

// WithRawMember returns `object` (one JSON object, e.g. from
// JsonObjectWriter::Finish) with `"key":raw_value` added at its end: how
// nested objects and numbers that are not integers get into a line.
// REQUIRES: raw_value is one valid JSON value.
std::string WithRawMember(std::string object, absl::string_view key,
                          absl::string_view raw_value) {
  object.pop_back();  // the closing '}'
  if (object.size() > 1) object.push_back(',');
  AppendJsonString(key, &object);
  object.push_back(':');
  object.append(raw_value.data(), raw_value.size());
  object.push_back('}');
  return object;
}

// --------------------------------------------------------------- chunks

// ParseChunkDocument turns one JSON line into a request (docs/dedupctl.md,
// "chunks check|peek"): an object with "document_url" (string) and
// "chunks" (a non-empty array; each chunk a string, its text, or an object
// with "text" (string) and optional "chunk_id" (string)), and optional
// "max_hamming_distance" (whole number 0..4294967295). Null counts as
// absent; other members, of the line and of chunk objects, are ignored.
// Sets request->document_url() as soon as it is known, even on error.
// Returns InvalidArgument saying what is wrong.
absl::Status ParseChunkDocument(absl::string_view line,
                                dedupd::v1::CheckChunksRequest* request) {
  DEDUPD_ASSIGN_OR_RETURN(const google::protobuf::Value value,
                          ParseJsonValue(line));
  if (value.kind_case() != google::protobuf::Value::kStructValue) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a line must be a JSON object, not ", JsonKindName(value)));
  }
  const google::protobuf::Struct& doc = value.struct_value();
  std::string url;
  DEDUPD_RETURN_IF_ERROR(
      StringMember(doc, "document_url", "document_url", true, &url));
  request->set_document_url(url);
  const google::protobuf::Value* chunks = Member(doc, "chunks");
  if (chunks == nullptr) {
    return absl::InvalidArgumentError("missing \"chunks\"");
  }
  if (chunks->kind_case() != google::protobuf::Value::kListValue) {
    return WrongType("chunks", "an array", *chunks);
  }
  if (chunks->list_value().values().empty()) {
    return absl::InvalidArgumentError(
        "\"chunks\" is empty (a document has at least one chunk)");
  }
  for (int i = 0; i < chunks->list_value().values_size(); ++i) {
    const google::protobuf::Value& chunk = chunks->list_value().values(i);
    const std::string path = absl::StrCat("chunks[", i, "]");
    dedupd::v1::ChunkItem* item = request->add_chunks();
    if (chunk.kind_case() == google::protobuf::Value::kStringValue) {
      item->set_text(chunk.string_value());
      continue;
    }
    if (chunk.kind_case() != google::protobuf::Value::kStructValue) {
      return WrongType(path, "a string or an object", chunk);
    }
    std::string text;
    DEDUPD_RETURN_IF_ERROR(StringMember(chunk.struct_value(), "text",
                                        absl::StrCat(path, ".text"), true,
                                        &text));
    item->set_text(std::move(text));
    if (Member(chunk.struct_value(), "chunk_id") != nullptr) {
      DEDUPD_RETURN_IF_ERROR(StringMember(chunk.struct_value(), "chunk_id",
                                          absl::StrCat(path, ".chunk_id"), true,
                                          item->mutable_chunk_id()));
    }
  }
  if (const google::protobuf::Value* d = Member(doc, "max_hamming_distance")) {
    DEDUPD_ASSIGN_OR_RETURN(const uint32_t k,
                            WholeNumber(*d, "max_hamming_distance", 0));
    request->set_max_hamming_distance(k);
  }
  return absl::OkStatus();
}

// The output object of one chunk (docs/dedupctl.md, "chunks check|peek").
std::string ChunkJson(const dedupd::v1::ChunkResult& result) {
  JsonObjectWriter json;
  json.String("chunk_id", result.chunk_id())
      .String("verdict", EnumName(result.verdict()));
  if (result.verdict() == dedupd::v1::CHUNK_VERDICT_INVALID) {
    return std::move(json.String("error", result.error())).Finish();
  }
  json.String("content_hash", result.content_hash())
      .String("simhash", SimHashHex(result.simhash()));
  std::string out = std::move(json).Finish();
  if (result.verdict() == dedupd::v1::CHUNK_VERDICT_EXACT_DUPLICATE ||
      result.verdict() == dedupd::v1::CHUNK_VERDICT_NEAR_DUPLICATE) {
    JsonObjectWriter of;
    of.String("document_url", result.duplicate_of_document_url())
        .String("chunk_id", result.duplicate_of_chunk_id())
        .Uint("distance", result.distance());
    out = WithRawMember(std::move(out), "duplicate_of", std::move(of).Finish());
  }
  if (result.has_first_seen_time()) {
    out = WithRawMember(std::move(out), "first_seen",
                        JsonString(FormatTimestamp(result.first_seen_time())));
  }
  return out;
}

// The output line of one answered document.
std::string ChunksLine(const dedupd::v1::CheckChunksResponse& response) {
  std::vector<std::string> chunks;
  chunks.reserve(response.results_size());
  for (const dedupd::v1::ChunkResult& r : response.results()) {
    chunks.push_back(ChunkJson(r));
  }
  JsonObjectWriter json;
  json.String("document_url", response.document_url())
      .Uint("replaced_chunks", response.replaced_chunks())
      .RawArray("chunks", chunks);
  return std::move(json).Finish();
}

// The output line of a document that was not answered: a bad input line,
// or a request the server rejected as a whole.
std::string ChunksErrorLine(size_t line, absl::string_view document_url,
                            absl::string_view error) {
  JsonObjectWriter json;
  json.Int("line", static_cast<int64_t>(line));
  if (!document_url.empty()) json.String("document_url", document_url);
  json.String("error", error);
  return std::move(json).Finish();
}

int RunChunks(dedupd::v1::ClaimMode mode, Args args) {
  absl::StatusOr<ClientOptions> client_options =
      ClientOptionsFromArgs(args, "chunks check/peek", 1);
  if (!client_options.ok()) {
    return UsageError(client_options.status().message());
  }
  std::optional<uint32_t> distance;
  if (args.max_hamming_distance) {
    absl::StatusOr<uint32_t> k = ParseUint32Flag("--max_hamming_distance",
                                                 *args.max_hamming_distance, 0);
    if (!k.ok()) return UsageError(k.status().message());
    distance = *k;
  }
  if (args.positional.size() > 1) {
    return UsageError("chunks check/peek reads at most one FILE of JSON lines");
  }
  int input_fd = -1;
  if (!args.positional.empty() && args.positional[0] != "-") {
    input_fd = open(args.positional[0].c_str(), O_RDONLY);
    if (input_fd < 0) {
      PrintError(absl::StrCat("open ", args.positional[0], ": ",
                              std::strerror(errno)));
      return kExitError;
    }
  }
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(*args.server, *client_options);
  if (!client.ok()) {
    PrintError(client.status().message());
    if (input_fd >= 0) close(input_fd);
    return kExitError;
  }

  LineReader reader(input_fd >= 0 ? input_fd : STDIN_FILENO,
                    kMaxChunksLineBytes);
  // One request per document, so answers are written as they come; they
  // reach the pipe at the latest when dedupctl would wait for input.
  reader.set_before_block([] { std::fflush(stdout); });
  Progress progress;
  size_t done = 0;
  bool any_invalid = false;
  bool write_ok = true;
  absl::Status status;
  std::string line;
  bool too_long = false;
  while (reader.ReadLine(&line, &too_long)) {
    if (!too_long && IsBlank(line)) continue;
    const size_t line_number = reader.line_number();
    dedupd::v1::CheckChunksRequest request;
    absl::Status parsed =
        too_long ? absl::InvalidArgumentError(absl::StrCat(
                       "longer than ", kMaxChunksLineBytes, " bytes"))
                 : ParseChunkDocument(line, &request);
    std::string out;
    if (!parsed.ok()) {
      any_invalid = true;
      out = ChunksErrorLine(
          line_number, request.document_url(),
          absl::StrCat("line ", line_number, ": ", parsed.message()));
    } else {
      if (distance && !request.has_max_hamming_distance()) {
        request.set_max_hamming_distance(*distance);
      }
      request.set_mode(mode);
      absl::StatusOr<dedupd::v1::CheckChunksResponse> response =
          (*client)->CheckChunks(request);
      if (response.ok()) {
        out = ChunksLine(*response);
        for (const dedupd::v1::ChunkResult& r : response->results()) {
          if (r.verdict() == dedupd::v1::CHUNK_VERDICT_INVALID) {
            any_invalid = true;
          }
        }
      } else if (response.status().code() ==
                 absl::StatusCode::kInvalidArgument) {
        // The server rejects this document as a whole (a bad document_url,
        // too many chunks, a distance over its limit): its problem, not
        // the run's.
        any_invalid = true;
        out = ChunksErrorLine(line_number, request.document_url(),
                              response.status().message());
      } else {
        status = response.status();
        break;
      }
    }
    write_ok = WriteLine(out) && write_ok;
    progress.Update(++done);
  }
  progress.Finish(done);
  if (status.ok()) status = reader.status();
  if (absl::Status flushed = FlushStdout(); status.ok()) status = flushed;
  if (status.ok() && !write_ok) {
    status = absl::UnavailableError("write to standard output failed");
  }
  if (input_fd >= 0) close(input_fd);
  if (!status.ok()) {
    PrintError(status.message());
    return kExitError;
  }
  return any_invalid ? kExitInvalid : kExitOk;
}

// -------------------------------------------------------------- results

// The settings `results dedup` takes from flags; each overrides the
// input's.
struct ResultsFlags {
  std::optional<uint32_t> top_k, per_source_cap, max_hamming_distance;
  std::optional<double> min_jaccard, min_cosine;
};

// ParseHit maps one hit object onto `*hit`: "id", "text" (strings) and
// "score" (number) required; "source_url" (string) and "embedding" (array
// of numbers within the float range) optional; null counts as absent,
// other members are ignored.
absl::Status ParseHit(const google::protobuf::Value& value,
                      absl::string_view path, dedupd::v1::ResultHit* hit) {
  if (value.kind_case() != google::protobuf::Value::kStructValue) {
    return WrongType(path, "an object", value);
  }
  const google::protobuf::Struct& object = value.struct_value();
  DEDUPD_RETURN_IF_ERROR(StringMember(object, "id", absl::StrCat(path, ".id"),
                                      true, hit->mutable_id()));
  std::string text;
  DEDUPD_RETURN_IF_ERROR(
      StringMember(object, "text", absl::StrCat(path, ".text"), true, &text));
  hit->set_text(std::move(text));
  const google::protobuf::Value* score = Member(object, "score");
  if (score == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("missing \"", path, ".score\""));
  }
  DEDUPD_ASSIGN_OR_RETURN(const double s,
                          Number(*score, absl::StrCat(path, ".score")));
  hit->set_score(s);
  DEDUPD_RETURN_IF_ERROR(StringMember(object, "source_url",
                                      absl::StrCat(path, ".source_url"), false,
                                      hit->mutable_source_url()));
  if (const google::protobuf::Value* e = Member(object, "embedding")) {
    const std::string epath = absl::StrCat(path, ".embedding");
    if (e->kind_case() != google::protobuf::Value::kListValue) {
      return WrongType(epath, "an array of numbers", *e);
    }
    hit->mutable_embedding()->Reserve(e->list_value().values_size());
    for (int j = 0; j < e->list_value().values_size(); ++j) {
      const std::string xpath = absl::StrCat(epath, "[", j, "]");
      DEDUPD_ASSIGN_OR_RETURN(const double x,
                              Number(e->list_value().values(j), xpath));
      if (std::fabs(x) > std::numeric_limits<float>::max()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "\"", xpath, "\" is outside the float range: ", JsonNumber(x)));
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
// unnoticed). Leaves top_k 0 when the input sets none. Returns
// InvalidArgument saying what is wrong.
absl::Status ParseResultsInput(absl::string_view json,
                               dedupd::v1::DedupResultsRequest* request) {
  DEDUPD_ASSIGN_OR_RETURN(const google::protobuf::Value value,
                          ParseJsonValue(json));
  const google::protobuf::ListValue* hits = nullptr;
  if (value.kind_case() == google::protobuf::Value::kListValue) {
    hits = &value.list_value();
  } else if (value.kind_case() == google::protobuf::Value::kStructValue) {
    const google::protobuf::Struct& object = value.struct_value();
    static const char* const kMembers[] = {
        "hits",        "top_k",     "per_source_cap", "max_hamming_distance",
        "min_jaccard", "min_cosine"};
    std::vector<std::string> unknown;
    for (const auto& field : object.fields()) {
      // Not a structured binding: C++17 lambdas cannot capture one (clang).
      const std::string& name = field.first;
      if (std::find_if(std::begin(kMembers), std::end(kMembers),
                       [&](const char* m) { return name == m; }) ==
          std::end(kMembers)) {
        unknown.push_back(name);
      }
    }
    if (!unknown.empty()) {
      std::sort(unknown.begin(), unknown.end());
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown member \"", unknown[0], "\" (the object takes hits, ",
          "top_k, per_source_cap, max_hamming_distance, min_jaccard, ",
          "min_cosine)"));
    }
    const google::protobuf::Value* h = Member(object, "hits");
    if (h == nullptr) return absl::InvalidArgumentError("missing \"hits\"");
    if (h->kind_case() != google::protobuf::Value::kListValue) {
      return WrongType("hits", "an array", *h);
    }
    hits = &h->list_value();
    if (const google::protobuf::Value* v = Member(object, "top_k")) {
      DEDUPD_ASSIGN_OR_RETURN(const uint32_t n, WholeNumber(*v, "top_k", 1));
      request->set_top_k(n);
    }
    if (const google::protobuf::Value* v = Member(object, "per_source_cap")) {
      DEDUPD_ASSIGN_OR_RETURN(const uint32_t n,
                              WholeNumber(*v, "per_source_cap", 0));
      request->set_per_source_cap(n);
    }
    const google::protobuf::Value* distance =
        Member(object, "max_hamming_distance");
    const google::protobuf::Value* jaccard = Member(object, "min_jaccard");
    if (distance != nullptr && jaccard != nullptr) {
      return absl::InvalidArgumentError(
          "set \"max_hamming_distance\" or \"min_jaccard\", not both");
    }
    if (distance != nullptr) {
      DEDUPD_ASSIGN_OR_RETURN(
          const uint32_t k, WholeNumber(*distance, "max_hamming_distance", 0));
      request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_SIMHASH);
      request->set_max_hamming_distance(k);
    }
    if (jaccard != nullptr) {
      DEDUPD_ASSIGN_OR_RETURN(const double j, Number(*jaccard, "min_jaccard"));
      request->set_near_text_measure(dedupd::v1::NEAR_TEXT_MEASURE_JACCARD);
      request->set_min_jaccard(j);
    }
    if (const google::protobuf::Value* v = Member(object, "min_cosine")) {
      DEDUPD_ASSIGN_OR_RETURN(const double c, Number(*v, "min_cosine"));
      request->set_min_cosine(c);
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "the input must be a JSON array of hits or an object with \"hits\", "
        "not ",
        JsonKindName(value)));
  }
  if (hits->values().empty()) {
    return absl::InvalidArgumentError("no hits (\"hits\" is empty)");
  }
  request->mutable_hits()->Reserve(hits->values_size());
  for (int i = 0; i < hits->values_size(); ++i) {
    DEDUPD_RETURN_IF_ERROR(ParseHit(
        hits->values(i), absl::StrCat("hits[", i, "]"), request->add_hits()));
  }
  return absl::OkStatus();
}

// ApplyResultsFlags overrides the input's settings with the flags'. A
// measure flag replaces the input's measure with its own setting.
void ApplyResultsFlags(const ResultsFlags& flags,
                       dedupd::v1::DedupResultsRequest* request) {
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
    kept.push_back(WithRawMember(std::move(json).Finish(), "score",
                                 JsonNumber(k.score())));
  }
  std::vector<std::string> dropped;
  dropped.reserve(response.dropped_size());
  for (const dedupd::v1::DroppedHit& d : response.dropped()) {
    JsonObjectWriter json;
    json.Uint("index", d.index())
        .String("id", d.id())
        .String("reason", EnumName(d.reason()));
    std::string out = std::move(json).Finish();
    if (d.reason() == dedupd::v1::DROP_REASON_DUPLICATE) {
      JsonObjectWriter of;
      of.Uint("index", d.duplicate_of_index()).String("id", d.duplicate_of());
      out =
          WithRawMember(std::move(out), "duplicate_of", std::move(of).Finish());
      out = WithRawMember(std::move(out), "measure",
                          JsonString(EnumName(d.measure())));
      out = WithRawMember(std::move(out), "value", JsonNumber(d.value()));
    }
    dropped.push_back(std::move(out));
  }
  std::vector<std::string> not_examined;
  not_examined.reserve(response.not_examined_size());
  for (uint32_t i : response.not_examined()) {
    not_examined.push_back(absl::StrCat(i));
  }
  JsonObjectWriter json;
  json.RawArray("kept", kept)
      .RawArray("dropped", dropped)
      .RawArray("not_examined", not_examined)
      .Uint("per_source_cap", response.per_source_cap());
  return std::move(json).Finish();
}

int RunResults(Args args) {
  absl::StatusOr<ClientOptions> client_options =
      ClientOptionsFromArgs(args, "results dedup", 1);
  if (!client_options.ok()) {
    return UsageError(client_options.status().message());
  }
  ResultsFlags flags;
  const std::pair<absl::string_view, const std::optional<std::string>*>
      uint_flags[] = {{"--top_k", &args.top_k},
                      {"--per_source_cap", &args.per_source_cap},
                      {"--max_hamming_distance", &args.max_hamming_distance}};
  std::optional<uint32_t>* const uint_slots[] = {
      &flags.top_k, &flags.per_source_cap, &flags.max_hamming_distance};
  for (size_t i = 0; i < std::size(uint_flags); ++i) {
    const auto& [name, value] = uint_flags[i];
    if (!*value) continue;
    absl::StatusOr<uint32_t> n =
        ParseUint32Flag(name, **value, name == "--top_k" ? 1 : 0);
    if (!n.ok()) return UsageError(n.status().message());
    *uint_slots[i] = *n;
  }
  if (args.min_jaccard) {
    absl::StatusOr<double> j =
        ParseNumberFlag("--min_jaccard", *args.min_jaccard);
    if (!j.ok()) return UsageError(j.status().message());
    flags.min_jaccard = *j;
  }
  if (args.min_cosine) {
    absl::StatusOr<double> c =
        ParseNumberFlag("--min_cosine", *args.min_cosine);
    if (!c.ok()) return UsageError(c.status().message());
    flags.min_cosine = *c;
  }
  if (flags.max_hamming_distance && flags.min_jaccard) {
    return UsageError(
        "--max_hamming_distance and --min_jaccard exclude each other");
  }
  if (args.positional.size() > 1) {
    return UsageError("results dedup reads at most one FILE");
  }
  const std::string path = args.positional.empty() ? "-" : args.positional[0];

  std::string input;
  bool too_long = false;
  if (absl::Status s =
          ReadTextFile(path, kMaxResultsInputBytes, &input, &too_long);
      !s.ok()) {
    PrintError(s.message());
    return kExitError;
  }
  // A bad input, or a request the server rejects as bad, is the one output
  // line {"error": ...} and exit code 1, as a bad line of the other
  // commands.
  const auto input_error = [](absl::string_view message) {
    JsonObjectWriter json;
    json.String("error", message);
    const bool written = WriteLine(std::move(json).Finish());
    absl::Status flushed = FlushStdout();
    if (!flushed.ok() || !written) {
      PrintError(flushed.ok() ? "write to standard output failed"
                              : flushed.message());
      return kExitError;
    }
    return kExitInvalid;
  };
  dedupd::v1::DedupResultsRequest request;
  if (too_long) {
    return input_error(absl::StrCat("the input is longer than ",
                                    kMaxResultsInputBytes, " bytes"));
  }
  if (absl::Status s = ParseResultsInput(input, &request); !s.ok()) {
    return input_error(s.message());
  }
  input.clear();
  input.shrink_to_fit();
  ApplyResultsFlags(flags, &request);
  if (request.top_k() == 0) {
    request.set_top_k(static_cast<uint32_t>(request.hits_size()));
  }

  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(*args.server, *client_options);
  if (!client.ok()) {
    PrintError(client.status().message());
    return kExitError;
  }
  absl::StatusOr<dedupd::v1::DedupResultsResponse> response =
      (*client)->DedupResults(request);
  if (!response.ok()) {
    if (response.status().code() == absl::StatusCode::kInvalidArgument) {
      return input_error(response.status().message());
    }
    PrintError(response.status().message());
    return kExitError;
  }
  const bool written = WriteLine(ResultsLine(*response));
  absl::Status flushed = FlushStdout();
  if (!flushed.ok() || !written) {
    PrintError(flushed.ok() ? "write to standard output failed"
                            : flushed.message());
    return kExitError;
  }
  return kExitOk;
}

// ---------------------------------------------------------------- admin

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

// RunForget sends the URLs of `source` to Admin.Forget, kForgetBatch at a
// time (a partial batch rather than wait for input), and prints one JSON
// line per URL in input order. Sets *any_invalid for a URL the server (or
// the input reader) rejected.
absl::Status RunForget(const DedupClient& client, UrlSource& source, bool* any_invalid) {
  std::vector<InputItem> batch;
  bool more = true;
  while (more) {
    more = source.NextBatch(kForgetBatch, &batch);
    if (batch.empty()) break;
    dedupd::v1::ForgetRequest request;
    for (const InputItem& item : batch) {
      if (!item.error) request.add_urls(item.url);
    }
    dedupd::v1::ForgetResponse response;
    if (request.urls_size() > 0) {
      DEDUPD_ASSIGN_OR_RETURN(response, client.AdminForget(request));
      if (response.results_size() != request.urls_size()) {
        return absl::InternalError(absl::StrCat(
            "Admin.Forget: the server answered ", response.results_size(),
            " results for ", request.urls_size(), " URLs"));
      }
    }
    int next = 0;
    for (const InputItem& item : batch) {
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
      if (!WriteLine(line)) return absl::UnavailableError("write to standard output failed");
    }
    DEDUPD_RETURN_IF_ERROR(FlushStdout());
  }
  return source.status();
}

int RunAdmin(const std::string& sub, Args args) {
  // Backup and exact Stats pass over the whole store and are not stopped
  // when the client gives up: a short default would only report failure.
  if (!args.deadline && (sub == "export" || sub == "backup" || (sub == "stats" && args.exact))) {
    args.deadline = "3600";
  }
  if (!args.deadline && sub == "forget") args.deadline = "600";
  absl::StatusOr<ClientOptions> client_options =
      ClientOptionsFromArgs(args, absl::StrCat("admin ", sub), 1);
  if (!client_options.ok()) return UsageError(client_options.status().message());
  if (sub == "backup" && args.positional.size() != 1) {
    return UsageError("admin backup needs exactly one DIR (an absolute path on the server)");
  }
  if (sub != "backup" && sub != "forget" && !args.positional.empty()) {
    return UsageError(absl::StrCat("admin ", sub, " takes no arguments"));
  }
  if (sub != "stats" && args.exact) return UsageError("--exact is for admin stats");
  if (sub != "export" && (args.skip_urls || args.skip_content)) {
    return UsageError("--skip_urls and --skip_content are for admin export");
  }
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(*args.server, *client_options);
  if (!client.ok()) {
    PrintError(client.status().message());
    return kExitError;
  }
  absl::Status status;
  bool any_invalid = false;
  if (sub == "forget") {
    UrlSource source = MakeSource(args);
    status = RunForget(**client, source, &any_invalid);
  } else if (sub == "stats") {
    dedupd::v1::StatsRequest request;
    request.set_exact(args.exact);
    absl::StatusOr<dedupd::v1::StatsResponse> response = (*client)->AdminStats(request);
    absl::StatusOr<std::string> line =
        response.ok() ? AdminJson(*response) : absl::StatusOr<std::string>(response.status());
    status = line.ok() ? (WriteLine(*line) ? absl::OkStatus()
                                           : absl::UnavailableError("write to standard output failed"))
                       : line.status();
  } else if (sub == "backup") {
    dedupd::v1::BackupRequest request;
    request.set_directory(args.positional[0]);
    absl::StatusOr<dedupd::v1::BackupResponse> response = (*client)->AdminBackup(request);
    absl::StatusOr<std::string> line =
        response.ok() ? AdminJson(*response) : absl::StatusOr<std::string>(response.status());
    status = line.ok() ? (WriteLine(*line) ? absl::OkStatus()
                                           : absl::UnavailableError("write to standard output failed"))
                       : line.status();
  } else {
    dedupd::v1::ExportRequest request;
    request.set_skip_urls(args.skip_urls);
    request.set_skip_content(args.skip_content);
    status = (*client)->AdminExport(
        request, [](const dedupd::v1::ExportResponse& message) -> absl::Status {
          for (const dedupd::v1::ExportRecord& record : message.records()) {
            DEDUPD_ASSIGN_OR_RETURN(std::string line, ExportLine(record));
            if (!WriteLine(line)) {
              return absl::UnavailableError("write to standard output failed");
            }
          }
          return FlushStdout();
        });
  }
  absl::Status flushed = FlushStdout();
  if (status.ok()) status = flushed;
  if (!status.ok()) {
    PrintError(status.message());
    return kExitError;
  }
  return any_invalid ? kExitInvalid : kExitOk;
}

// ----------------------------------------------------------------- main

int Main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  if (words.empty()) return UsageError("missing command");
  const std::string command = words[0];
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (command == "normalize") {
    absl::StatusOr<Args> args =
        ParseFlags(std::vector<std::string>(words.begin() + 1, words.end()),
                   {"--config", "--base", "--explain"});
    if (!args.ok()) return UsageError(args.status().message());
    if (args->help) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    return RunNormalize(*std::move(args));
  }
  // The commands that talk to a server: each has subcommands and flags.
  struct ServerCommand {
    const char* name;
    std::vector<std::string> subcommands;
    std::vector<absl::string_view> flags;
    std::function<int(const std::string& sub, Args args)> run;
  };
  auto mode = [](const std::string& sub) {
    return sub == "check" ? dedupd::v1::CLAIM_MODE_CLAIM : dedupd::v1::CLAIM_MODE_PEEK;
  };
  // Every command that talks to a server takes the connection flags.
  auto with_connection = [](std::vector<absl::string_view> flags) {
    for (absl::string_view f : {"--tls", "--tls_ca_file", "--tls_cert_file", "--tls_key_file",
                                "--tls_server_name", "--token_file"}) {
      flags.push_back(f);
    }
    return flags;
  };
  const ServerCommand commands[] = {
      {"url", {"check", "peek"}, with_connection({"--server", "--base", "--batch", "--deadline"}),
       [&](const std::string& sub, Args args) { return RunUrl(mode(sub), std::move(args)); }},
      {"content",
       {"check", "peek"},
       with_connection({"--server", "--batch", "--deadline", "--url", "--canonical_url",
                        "--text_file", "--max_hamming_distance"}),
       [&](const std::string& sub, Args args) { return RunContent(mode(sub), std::move(args)); }},
      {"chunks", {"check", "peek"},
       with_connection({"--server", "--deadline", "--max_hamming_distance"}),
       [&](const std::string& sub, Args args) { return RunChunks(mode(sub), std::move(args)); }},
      {"results",
       {"dedup"},
       with_connection({"--server", "--deadline", "--top_k", "--per_source_cap",
                        "--max_hamming_distance", "--min_jaccard", "--min_cosine"}),
       [](const std::string&, Args args) { return RunResults(std::move(args)); }},
      {"admin",
       {"stats", "backup", "export", "forget"},
       with_connection({"--server", "--deadline", "--exact", "--skip_urls", "--skip_content"}),
       [](const std::string& sub, Args args) { return RunAdmin(sub, std::move(args)); }},
  };
  for (const ServerCommand& c : commands) {
    if (command != c.name) continue;
    const std::string want = absl::StrJoin(c.subcommands, " or ");
    if (words.size() < 2) return UsageError(absl::StrCat(c.name, " needs ", want));
    const std::string& sub = words[1];
    if (sub == "--help" || sub == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (std::find(c.subcommands.begin(), c.subcommands.end(), sub) == c.subcommands.end()) {
      return UsageError(absl::StrCat("unknown ", c.name, " command \"", sub, "\" (want ",
                                     want, ")"));
    }
    absl::StatusOr<Args> args =
        ParseFlags(std::vector<std::string>(words.begin() + 2, words.end()), c.flags);
    if (!args.ok()) return UsageError(args.status().message());
    if (args->help) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    return c.run(sub, *std::move(args));
  }
  return UsageError(absl::StrCat("unknown command \"", command, "\""));
}

}  // namespace
}  // namespace dedupd

int main(int argc, char** argv) {
  // Output is JSON lines for pipes: write in large blocks, flush at batch
  // ends and before waiting for input.
  static char stdout_buffer[1 << 16];
  std::setvbuf(stdout, stdout_buffer, _IOFBF, sizeof(stdout_buffer));
  return dedupd::Main(argc, argv);
}
