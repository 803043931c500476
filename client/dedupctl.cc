// dedupctl: dedupd from a shell. One URL a line in (or as arguments), one
// JSON object a line out. `normalize` runs the normalizer offline; `url
// check|peek` asks a server through the client library. docs/dedupctl.md is
// the user documentation; kUsage below is its short form.
//
// Exit codes: 0 every URL valid, 1 some URL invalid, 2 usage, config,
// connection or RPC error (with a one-line message on stderr).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/json.h"
#include "core/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
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
  --batch N           URLs per request, 1..100000 (default 1000)
  --deadline SECONDS  deadline of each request (default 30)
  --                  end of flags: everything after is a URL

exit codes: 0 all URLs valid, 1 some URL invalid, 2 usage, config,
connection or server error.
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

// UrlSource yields URLs from the command line or, streaming, from a file
// descriptor (one per line). Reading never holds more than one line plus
// one read chunk in memory.
class UrlSource {
 public:
  static UrlSource FromArgs(std::vector<std::string> urls) {
    UrlSource s;
    s.args_ = std::move(urls);
    return s;
  }
  static UrlSource FromFd(int fd) {
    UrlSource s;
    s.fd_ = fd;
    return s;
  }

  // Next stores the next URL in `*item`; returns false at the end of the
  // input or on a read error (see status()). Lines: a trailing "\r" is
  // stripped; blank lines (empty or only spaces and tabs) are skipped.
  // Arguments are taken as given.
  bool Next(InputItem* item) {
    item->error.reset();
    if (fd_ < 0) {
      if (next_arg_ >= args_.size()) return false;
      item->url = std::move(args_[next_arg_++]);
      return true;
    }
    while (true) {
      bool too_long = false;
      if (!ReadLine(&item->url, &too_long)) return false;
      if (!item->url.empty() && item->url.back() == '\r') item->url.pop_back();
      if (too_long) {
        item->error =
            absl::StrCat("input line longer than ", kMaxLineBytes, " bytes");
        return true;
      }
      if (item->url.find_first_not_of(" \t") != std::string::npos) return true;
    }
  }

  // WouldBlock returns true when the next Next() may have to wait for
  // input: no complete line is buffered and the descriptor has nothing to
  // read right now. Lets a caller send what it has instead of waiting
  // (e.g. `tail -f log | dedupctl url check`).
  bool WouldBlock() const {
    if (fd_ < 0 || eof_) return false;
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
  UrlSource() = default;

  // Reads one line without its "\n" into `*line`, keeping at most
  // kMaxLineBytes of it (`*too_long` when more were dropped). Returns false
  // at the end of the input.
  bool ReadLine(std::string* line, bool* too_long) {
    line->clear();
    bool any = false;
    while (true) {
      const size_t newline = buffer_.find('\n', pos_);
      const size_t end =
          newline == std::string::npos ? buffer_.size() : newline;
      const size_t room = kMaxLineBytes - line->size();
      const size_t take = std::min(room, end - pos_);
      line->append(buffer_, pos_, take);
      if (end - pos_ > take) *too_long = true;
      any = any || end > pos_;
      if (newline != std::string::npos) {
        pos_ = newline + 1;
        return true;
      }
      buffer_.clear();
      pos_ = 0;
      if (eof_ || !Fill()) return any;
    }
  }

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
            absl::StrCat("read standard input: ", std::strerror(errno)));
      }
      buffer_.clear();
      eof_ = true;
      return false;
    }
  }

  std::vector<std::string> args_;
  size_t next_arg_ = 0;
  int fd_ = -1;
  std::string buffer_;
  size_t pos_ = 0;
  bool eof_ = false;
  absl::Status status_;
  std::function<void()> before_block_;
};

// ----------------------------------------------------------- arguments

struct Args {
  std::vector<std::string> positional;
  std::optional<std::string> config, base, server, batch, deadline;
  bool explain = false;
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
    if (name == "--explain") {
      if (value) {
        return absl::InvalidArgumentError("--explain takes no value");
      }
      args.explain = true;
      continue;
    }
    if (!value) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
      }
      value = argv[++i];
    }
    std::optional<std::string>* slot = name == "--config"   ? &args.config
                                       : name == "--base"   ? &args.base
                                       : name == "--server" ? &args.server
                                       : name == "--batch"  ? &args.batch
                                                            : &args.deadline;
    *slot = std::move(*value);
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

absl::string_view VerdictName(dedupd::v1::UrlVerdict verdict) {
  switch (verdict) {
    case dedupd::v1::URL_VERDICT_NEW:
      return "NEW";
    case dedupd::v1::URL_VERDICT_SEEN:
      return "SEEN";
    case dedupd::v1::URL_VERDICT_INVALID:
      return "INVALID";
    default:
      return "UNSPECIFIED";
  }
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
      json.String("verdict", VerdictName(result.verdict()));
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

int RunUrl(dedupd::v1::ClaimMode mode, Args args) {
  if (!args.server || args.server->empty()) {
    return UsageError("url check/peek needs --server ADDR");
  }
  size_t batch_size = kDefaultBatch;
  if (args.batch && (!absl::SimpleAtoi(*args.batch, &batch_size) ||
                     batch_size < 1 || batch_size > kMaxBatch)) {
    return UsageError(absl::StrCat("--batch must be an integer in 1..",
                                   kMaxBatch, ", got \"", *args.batch, "\""));
  }
  ClientOptions options;
  options.max_items_per_request = batch_size;
  if (args.deadline) {
    double seconds = 0;
    if (!absl::SimpleAtod(*args.deadline, &seconds) ||
        !std::isfinite(seconds) || seconds <= 0) {
      return UsageError(
          absl::StrCat("--deadline must be a positive number of "
                       "seconds, got \"",
                       *args.deadline, "\""));
    }
    options.deadline = absl::Seconds(seconds);
  }
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
    // Fill a batch, but send a partial one rather than wait for input.
    batch.clear();
    while (batch.size() < batch_size) {
      if (!batch.empty() && source.WouldBlock()) break;
      InputItem item;
      if (!source.Next(&item)) {
        more = false;
        break;
      }
      batch.push_back(std::move(item));
    }
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
  if (command == "url") {
    if (words.size() < 2) return UsageError("url needs check or peek");
    const std::string& sub = words[1];
    if (sub == "--help" || sub == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (sub != "check" && sub != "peek") {
      return UsageError(absl::StrCat("unknown url command \"", sub,
                                     "\" (want check or peek)"));
    }
    absl::StatusOr<Args> args =
        ParseFlags(std::vector<std::string>(words.begin() + 2, words.end()),
                   {"--server", "--base", "--batch", "--deadline"});
    if (!args.ok()) return UsageError(args.status().message());
    if (args->help) {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    return RunUrl(sub == "check" ? dedupd::v1::CLAIM_MODE_CLAIM
                                 : dedupd::v1::CLAIM_MODE_PEEK,
                  *std::move(args));
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
