#include "client/dedupctl/line_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "common/file_io.h"

namespace dedupd::dedupctl {
namespace {

// Read size for standard input.
constexpr size_t kReadChunkBytes = 64 << 10;
// Progress appears once a run is this old, then at most this often.
constexpr absl::Duration kProgressAfter = absl::Seconds(1);
constexpr absl::Duration kProgressEvery = absl::Milliseconds(500);

}  // namespace

bool WriteLine(const std::string& line) {
  return std::fwrite(line.data(), 1, line.size(), stdout) == line.size() &&
         std::fputc('\n', stdout) != EOF;
}

absl::Status FlushStdout() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return absl::UnavailableError(absl::StrCat("write to standard output: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void PrintError(absl::string_view message) {
  std::string line = absl::StrReplaceAll(message, {{"\n", " "}, {"\r", " "}});
  std::fprintf(stderr, "dedupctl: %s\n", line.c_str());
}

int ExitWithError(const absl::Status& status) {
  PrintError(status.message());
  return kExitError;
}

int ExitAfterOutput(absl::Status status, bool writes_ok, bool any_invalid) {
  if (status.ok()) status = FlushStdout();
  if (status.ok() && !writes_ok) {
    status = absl::UnavailableError("write to standard output failed");
  }
  if (!status.ok()) return ExitWithError(status);
  return any_invalid ? kExitInvalid : kExitOk;
}

bool IsBlank(absl::string_view line) {
  return line.find_first_not_of(" \t") == absl::string_view::npos;
}

// ------------------------------------------------------------- progress

Progress::Progress()
    : enabled_(isatty(STDERR_FILENO) == 1 && isatty(STDOUT_FILENO) != 1), start_(absl::Now()) {}

void Progress::Update(size_t done) {
  if (!enabled_) return;
  const absl::Time now = absl::Now();
  if (now - start_ < kProgressAfter || now - last_ < kProgressEvery) return;
  last_ = now;
  Print(done, now);
}

void Progress::Finish(size_t done) {
  if (!shown_) return;
  Print(done, absl::Now());
  std::fputc('\n', stderr);
}

void Progress::Print(size_t done, absl::Time now) {
  const double seconds = absl::ToDoubleSeconds(now - start_);
  std::fprintf(stderr, "\rdedupctl: %zu items, %.0f items/s", done,
               seconds > 0 ? static_cast<double>(done) / seconds : 0.0);
  std::fflush(stderr);
  shown_ = true;
}

// ----------------------------------------------------------- LineReader

bool LineReader::ReadLine(std::string* line, bool* too_long) {
  line->clear();
  *too_long = false;
  bool any = false;
  while (true) {
    const size_t newline = buffer_.find('\n', pos_);
    const size_t end = newline == std::string::npos ? buffer_.size() : newline;
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

bool LineReader::WouldBlock() const {
  if (eof_) return false;
  if (buffer_.find('\n', pos_) != std::string::npos) return false;
  pollfd p = {fd_, POLLIN, 0};
  return poll(&p, 1, 0) == 0;
}

bool LineReader::Fill() {
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
      status_ = absl::UnavailableError(absl::StrCat("read input: ", std::strerror(errno)));
    }
    buffer_.clear();
    eof_ = true;
    return false;
  }
}

// ------------------------------------------------------------ UrlSource

UrlSource UrlSource::FromArgs(std::vector<std::string> urls) {
  UrlSource s;
  s.args_ = std::move(urls);
  return s;
}

UrlSource UrlSource::FromFd(int fd) {
  UrlSource s;
  s.reader_.emplace(fd, kMaxLineBytes);
  return s;
}

UrlSource UrlSource::FromArgsOrStdin(std::vector<std::string> urls) {
  if (!urls.empty()) return FromArgs(std::move(urls));
  return FromFd(STDIN_FILENO);
}

bool UrlSource::Next(InputItem* item) {
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
      item->error = absl::StrCat("input line longer than ", kMaxLineBytes, " bytes");
      return true;
    }
    if (!IsBlank(item->url)) return true;
  }
}

bool UrlSource::NextBatch(size_t max_items, std::vector<InputItem>* batch) {
  batch->clear();
  while (batch->size() < max_items) {
    if (!batch->empty() && WouldBlock()) return true;
    InputItem item;
    if (!Next(&item)) return false;
    batch->push_back(std::move(item));
  }
  return true;
}

// ------------------------------------------------------------ InputFile

InputFile::~InputFile() {
  if (owned_) close(fd_);
}

absl::Status InputFile::Open(const std::optional<std::string>& path) {
  if (!path || *path == "-") return absl::OkStatus();
  const int fd = open(path->c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("open ", *path, ": ", std::strerror(errno)));
  }
  fd_ = fd;
  owned_ = true;
  return absl::OkStatus();
}

absl::Status ReadWholeInput(const std::string& path, size_t max_bytes, std::string* text,
                            bool* too_long) {
  const bool is_stdin = path == "-";
  // A regular file too large is refused unread (a pipe is read whole).
  struct stat st;
  const int stat_rc = is_stdin ? ::fstat(STDIN_FILENO, &st) : ::stat(path.c_str(), &st);
  if (stat_rc == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) {
    text->clear();
    *too_long = true;
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> data =
      is_stdin ? file_io::ReadFd(STDIN_FILENO, "standard input") : file_io::ReadFile(path);
  if (!data.ok()) return data.status();
  *too_long = data->size() > max_bytes;
  if (*too_long) {
    text->clear();
  } else {
    *text = *std::move(data);
  }
  return absl::OkStatus();
}

}  // namespace dedupd::dedupctl
