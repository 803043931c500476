#include "tests/testing/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dedupd::testing {
namespace {

int ExitCode(int wstatus) {
  if (WIFEXITED(wstatus)) return WEXITSTATUS(wstatus);
  if (WIFSIGNALED(wstatus)) return 128 + WTERMSIG(wstatus);
  return -1;
}

std::vector<char*> Argv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

// Parses the port from a "<prefix>HOST:PORT[ ...]" line in `logs`.
int FindPort(const std::string& logs, const std::string& prefix) {
  const size_t at = logs.find(prefix);
  if (at == std::string::npos) return 0;
  const size_t eol = logs.find('\n', at);
  if (eol == std::string::npos) return 0;
  std::string addr = logs.substr(at + prefix.size(), eol - at - prefix.size());
  addr = addr.substr(0, addr.find(' '));
  int port = 0;
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos || !absl::SimpleAtoi(addr.substr(colon + 1), &port)) {
    return 0;
  }
  return port;
}

}  // namespace

int LoggedPort(const std::string& logs, const std::string& what) {
  const std::string prefix = what + " on 127.0.0.1:";
  const size_t at = logs.find(prefix);
  if (at == std::string::npos) return 0;
  const size_t begin = at + prefix.size();
  const size_t end = logs.find_first_not_of("0123456789", begin);
  int port = 0;
  return absl::SimpleAtoi(logs.substr(begin, end - begin), &port) ? port : 0;
}

std::string MakeTempDir(const std::string& prefix) {
  std::string templ = absl::StrCat(::testing::TempDir(), "/", prefix, "XXXXXX");
  char* made = mkdtemp(templ.data());
  return made == nullptr ? std::string() : std::string(made);
}

void RemoveTree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::string& binary, const std::string& data_dir,
    const std::vector<std::string>& extra_flags, absl::Duration timeout, const char* ready_prefix) {
  std::vector<std::string> args = {binary, "--listen=127.0.0.1:0", "--data_dir=" + data_dir};
  args.insert(args.end(), extra_flags.begin(), extra_flags.end());
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> argv = Argv(args);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  p->pid_ = pid;
  const int read_fd = fds[0];
  p->reader_ = std::thread([raw = p.get(), read_fd] { raw->ReadOutput(read_fd); });

  absl::MutexLock lock(&p->mu_);
  const std::string prefix = ready_prefix;
  auto ready = [raw = p.get(), &prefix]() ABSL_SHARED_LOCKS_REQUIRED(p->mu_) {
    return raw->eof_ || FindPort(raw->logs_, prefix) != 0;
  };
  p->mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
  p->port_ = FindPort(p->logs_, prefix);
  if (p->port_ == 0) {
    std::string logs = p->logs_;
    p->mu_.Unlock();
    p->Kill();
    p->mu_.Lock();
    return absl::UnavailableError(
        absl::StrCat("dedupd did not print \"", prefix, "HOST:PORT\"; its output:\n", logs));
  }
  return p;
}

void ServerProcess::ReadOutput(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    absl::MutexLock lock(&mu_);
    logs_.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  absl::MutexLock lock(&mu_);
  eof_ = true;
}

ServerProcess::~ServerProcess() {
  Kill();
  if (reader_.joinable()) reader_.join();
}

std::string ServerProcess::address() const { return absl::StrCat("127.0.0.1:", port_); }

std::string ServerProcess::Logs() const {
  absl::MutexLock lock(&mu_);
  return logs_;
}

int ServerProcess::Reap() {
  int wstatus = 0;
  while (waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return ExitCode(wstatus);
}

absl::StatusOr<int> ServerProcess::Terminate(absl::Duration timeout) {
  if (pid_ <= 0) return absl::FailedPreconditionError("not running");
  kill(pid_, SIGTERM);
  // The output pipe closes when the process exits: wait for that, bounded.
  bool exited;
  {
    absl::MutexLock lock(&mu_);
    exited = mu_.AwaitWithTimeout(absl::Condition(&eof_), timeout);
  }
  if (!exited) {
    Kill();
    return absl::DeadlineExceededError(
        absl::StrCat("dedupd did not stop within ", absl::FormatDuration(timeout)));
  }
  const int code = Reap();
  if (reader_.joinable()) reader_.join();
  return code;
}

void ServerProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  Reap();
  if (reader_.joinable()) reader_.join();
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& args,
                                         const std::string& stdin_data, absl::Duration timeout) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  std::vector<char*> argv = Argv(args);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    execv(args[0].c_str(), argv.data());
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  // Feed stdin and drain both outputs together, so no pipe fills up.
  signal(SIGPIPE, SIG_IGN);
  fcntl(in[1], F_SETFL, O_NONBLOCK);
  CommandResult result;
  size_t written = 0;
  int in_fd = in[1];
  if (stdin_data.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  int out_fd = out[0], err_fd = err[0];
  const absl::Time deadline = absl::Now() + timeout;
  bool timed_out = false;
  while (out_fd >= 0 || err_fd >= 0) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      timed_out = true;
      break;
    }
    pollfd fds[3] = {{in_fd, POLLOUT, 0}, {out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    const int ready = poll(fds, 3, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) break;
    if (in_fd >= 0 && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = write(in_fd, stdin_data.data() + written, stdin_data.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN) written = stdin_data.size();
      if (written == stdin_data.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    char buf[65536];
    for (int k : {1, 2}) {
      int& fd = k == 1 ? out_fd : err_fd;
      std::string& sink = k == 1 ? result.out : result.err;
      if (fd >= 0 && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
          sink.append(buf, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fd);
          fd = -1;
        }
      }
    }
  }
  if (in_fd >= 0) close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0) close(err_fd);
  if (timed_out) kill(pid, SIGKILL);
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(
        absl::StrCat(args[0], " did not finish within ", absl::FormatDuration(timeout)));
  }
  result.exit_code = ExitCode(wstatus);
  return result;
}

ServerTest::ServerTest(std::string binary, std::string temp_prefix)
    : binary_(std::move(binary)), temp_prefix_(std::move(temp_prefix)) {}

void ServerTest::SetUp() {
  dir_ = MakeTempDir(temp_prefix_);
  ASSERT_FALSE(dir_.empty());
  StartServer();
}

void ServerTest::TearDown() {
  server_.reset();
  RemoveTree(dir_);
}

void ServerTest::StartServer(std::vector<std::string> flags) {
  server_.reset();
  absl::StatusOr<std::unique_ptr<ServerProcess>> s =
      ServerProcess::Start(binary_, DataDir(), flags);
  ASSERT_TRUE(s.ok()) << s.status();
  server_ = *std::move(s);
  OnStarted();
}

}  // namespace dedupd::testing
