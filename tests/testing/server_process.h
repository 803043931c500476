// server_process.h: runs the real dedupd binary as a child process on
// 127.0.0.1 port 0, for end-to-end tests. Reads the chosen port from the
// server's "serving on" line; collects its stderr.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(auto server, ServerProcess::Start(DEDUPD_BINARY, dir, {}));
//   auto client = DedupClient::Connect(server->address(), {});
//   ...
//   server->Kill();  // SIGKILL, as a crash would
#ifndef DEDUPD_TESTS_TESTING_SERVER_PROCESS_H_
#define DEDUPD_TESTS_TESTING_SERVER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace dedupd::testing {

// MakeTempDir creates a fresh directory under the test temp dir.
std::string MakeTempDir(const std::string& prefix);

// RemoveTree deletes `path` and everything below it (best effort).
void RemoveTree(const std::string& path);

// LoggedPort returns PORT from the first "<what> on 127.0.0.1:PORT" in
// `logs` (dedupd logs "metrics on ...", "health on ..."), or 0.
int LoggedPort(const std::string& logs, const std::string& what);

// ServerProcess: one running dedupd. Not thread-safe except Logs().
class ServerProcess {
 public:
  // The line dedupd prints once it serves (store open), and the one it
  // prints earlier, once it listens (health NOT_SERVING, store opening).
  static constexpr char kServingPrefix[] = "dedupd: serving on ";
  static constexpr char kListeningPrefix[] = "dedupd: listening on ";

  // Start runs `binary --listen=127.0.0.1:0 --data_dir=<data_dir> <flags>`
  // and waits up to `timeout` for it to print `ready_prefix` HOST:PORT
  // (default: to serve). On failure (the process exits or the time runs
  // out) returns an error carrying its stderr.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::string& binary, const std::string& data_dir,
      const std::vector<std::string>& extra_flags, absl::Duration timeout = absl::Seconds(60),
      const char* ready_prefix = kServingPrefix);

  // Kills the process (SIGKILL) if it still runs.
  ~ServerProcess();

  int port() const { return port_; }
  std::string address() const;
  pid_t pid() const { return pid_; }

  // Terminate sends SIGTERM and waits up to `timeout` for the exit; returns
  // the exit code (128+signal when killed by a signal). DeadlineExceeded
  // (after a SIGKILL) when it did not stop in time.
  absl::StatusOr<int> Terminate(absl::Duration timeout = absl::Seconds(30));

  // Kill sends SIGKILL and reaps the process.
  void Kill();

  // Everything the process wrote to stderr and stdout so far.
  std::string Logs() const;

 private:
  ServerProcess() = default;
  void ReadOutput(int fd);
  int Reap();  // waitpid, returns the exit code; REQUIRES: the process exited

  pid_t pid_ = -1;
  int port_ = 0;
  std::thread reader_;
  mutable absl::Mutex mu_;
  std::string logs_ ABSL_GUARDED_BY(mu_);
  bool eof_ ABSL_GUARDED_BY(mu_) = false;
};

// RunCommand runs `argv` with `stdin_data` on its standard input and
// collects stdout and the exit code (stderr to `err` when non-null).
// Bounded by `timeout` (then SIGKILL and DeadlineExceeded).
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         const std::string& stdin_data,
                                         absl::Duration timeout = absl::Seconds(60));

// ServerTest: a fixture that runs the real dedupd binary on 127.0.0.1:0
// with a fresh data directory per test (removed afterwards). Subclasses
// connect their clients in OnStarted, which runs after every start.
//
// Example:
//   class E2eTest : public ServerTest {
//    protected:
//     E2eTest() : ServerTest(DEDUPD_BINARY, "e2e_") {}
//     void OnStarted() override { channel_ = ...(server_->address()); }
//   };
//   TEST_F(E2eTest, RestartKeepsData) { ...; StartServer(); ... }
class ServerTest : public ::testing::Test {
 protected:
  ServerTest(std::string binary, std::string temp_prefix);
  void SetUp() override;
  void TearDown() override;

  // StartServer stops the running server (SIGKILL if it was not stopped),
  // starts a new one on DataDir() with `flags`, then calls OnStarted.
  // Fails the test when it does not start.
  void StartServer(std::vector<std::string> flags = {});
  virtual void OnStarted() {}

  std::string DataDir() const { return dir_ + "/data"; }

  const std::string binary_;
  const std::string temp_prefix_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_SERVER_PROCESS_H_
