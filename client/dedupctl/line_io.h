// line_io.h: dedupctl's input and output plumbing: JSON lines to standard
// output through stdio's buffer, one-line errors on stderr, a progress line,
// and streaming readers of input lines and URLs.
//
// Example:
//   UrlSource source = UrlSource::FromFd(STDIN_FILENO);
//   InputItem item;
//   while (source.Next(&item)) WriteLine(item.url);
//   DEDUPD_RETURN_IF_ERROR(source.status());
//   DEDUPD_RETURN_IF_ERROR(FlushStdout());
//
// Not thread-safe: dedupctl runs on one thread.
#ifndef DEDUPD_CLIENT_DEDUPCTL_LINE_IO_H_
#define DEDUPD_CLIENT_DEDUPCTL_LINE_IO_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dedupd::dedupctl {

// Exit codes: 0 every item valid, 1 some item invalid (or a bad input
// line), 2 usage, config, connection or RPC error.
constexpr int kExitOk = 0;
constexpr int kExitInvalid = 1;
constexpr int kExitError = 2;

// Input lines longer than this are not sent or normalized: they get a local
// error (the normalizer's own limit is far lower; this one bounds memory).
constexpr size_t kMaxLineBytes = 64 << 10;

// WriteLine writes `line` and "\n" to stdout through stdio's buffer.
// Returns false when the write failed.
bool WriteLine(const std::string& line);

// FlushStdout flushes stdout. Returns Unavailable for a failed write (a
// closed pipe, a full disk), so that the exit code says so.
absl::Status FlushStdout();

// PrintError prints "dedupctl: <message>" as one line on stderr, whatever
// line breaks the message holds.
void PrintError(absl::string_view message);

// ExitWithError prints `status` (PrintError) and returns kExitError.
int ExitWithError(const absl::Status& status);

// ExitAfterOutput flushes stdout and returns the exit code of an offline
// command whose output lines are written: kExitError (printed) when
// `status`, the flush or an earlier write (`writes_ok` false) failed, else
// kExitInvalid when some input was bad, else kExitOk.
int ExitAfterOutput(absl::Status status, bool writes_ok, bool any_invalid);

// IsBlank: empty or only spaces and tabs.
bool IsBlank(absl::string_view line);

// Progress on stderr: items done and rate, on runs longer than a second.
// Only when stderr is a terminal and stdout is not (on a terminal the
// output lines are the progress, and the two would mix).
class Progress {
 public:
  Progress();

  // Update shows `done` items, at most every 500 ms.
  void Update(size_t done);

  // Finish prints the final count and ends the line, if progress was shown.
  void Finish(size_t done);

 private:
  void Print(size_t done, absl::Time now);

  const bool enabled_;
  const absl::Time start_;
  absl::Time last_ = absl::InfinitePast();
  bool shown_ = false;
};

// LineReader reads lines from a file descriptor, streaming: it never holds
// more than one line (at most max_line_bytes of it) plus one read chunk.
class LineReader {
 public:
  LineReader(int fd, size_t max_line_bytes) : fd_(fd), max_line_bytes_(max_line_bytes) {}

  // ReadLine reads one line without its "\n" (and without a trailing "\r")
  // into `*line`, keeping at most max_line_bytes of it (`*too_long` when
  // more were dropped). Returns false at the end of the input or on a read
  // error (see status()).
  bool ReadLine(std::string* line, bool* too_long);

  // The 1-based number of the line ReadLine returned last.
  size_t line_number() const { return line_number_; }

  // WouldBlock returns true when the next ReadLine() may have to wait for
  // input: no complete line is buffered and the descriptor has nothing to
  // read right now. Lets a caller send what it has instead of waiting
  // (e.g. `tail -f log | dedupctl url check`).
  bool WouldBlock() const;

  // Set `before_block` to run before a read that would wait for input
  // (e.g. to flush output a person at the other end is waiting for).
  void set_before_block(std::function<void()> before_block) {
    before_block_ = std::move(before_block);
  }

  const absl::Status& status() const { return status_; }

 private:
  // Reads the next chunk into the (empty) buffer. Returns false at end of
  // input or on error.
  bool Fill();

  int fd_;
  size_t max_line_bytes_;
  std::string buffer_;
  size_t pos_ = 0;
  size_t line_number_ = 0;
  bool eof_ = false;
  absl::Status status_;
  std::function<void()> before_block_;
};

// One URL to process: the input as read, or a local error instead.
struct InputItem {
  std::string url;
  std::optional<std::string> error;  // set: do not process, report this
};

// UrlSource yields URLs from the command line or, streaming, from a file
// descriptor (one per line).
class UrlSource {
 public:
  static UrlSource FromArgs(std::vector<std::string> urls);
  static UrlSource FromFd(int fd);
  // FromArgsOrStdin: the arguments, or standard input when there are none.
  static UrlSource FromArgsOrStdin(std::vector<std::string> urls);

  // Next stores the next URL in `*item`; returns false at the end of the
  // input or on a read error (see status()). Lines: a trailing "\r" is
  // stripped; blank lines (empty or only spaces and tabs) are skipped.
  // Arguments are taken as given.
  bool Next(InputItem* item);

  bool WouldBlock() const { return reader_ && reader_->WouldBlock(); }

  // NextBatch replaces `*batch` with up to `max_items` items, sending a
  // partial batch rather than waiting for input; false once the input is
  // exhausted (the batch may still hold the last items).
  bool NextBatch(size_t max_items, std::vector<InputItem>* batch);

  void set_before_block(std::function<void()> before_block) {
    if (reader_) reader_->set_before_block(std::move(before_block));
  }

  absl::Status status() const { return reader_ ? reader_->status() : absl::OkStatus(); }

 private:
  UrlSource() = default;

  std::vector<std::string> args_;
  size_t next_arg_ = 0;
  std::optional<LineReader> reader_;
};

// InputFile opens FILE for reading: "-" or absent is standard input (not
// closed). Not copyable; closes the file it opened.
class InputFile {
 public:
  InputFile() = default;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  // Open opens `path` ("-": standard input). Errors: FailedPrecondition
  // "open <path>: <strerror>".
  absl::Status Open(const std::optional<std::string>& path);

  int fd() const { return fd_; }

 private:
  int fd_ = 0;  // STDIN_FILENO
  bool owned_ = false;
};

// ReadWholeInput reads all of `path` ("-": standard input) with
// file_io::ReadFile. `*too_long` is set when it holds more than `max_bytes`
// (then `*text` is cleared; a regular file that large is not read at all,
// a pipe is). Errors: file_io::ErrnoStatus of the failed open or read
// ("standard input: read: ..." for "-").
absl::Status ReadWholeInput(const std::string& path, size_t max_bytes, std::string* text,
                            bool* too_long);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_LINE_IO_H_
