// batch_loop.h: the one loop of the commands that stream input to a
// server (`url`, `content`, `chunks`, `admin forget`): connect, then read a
// batch, send it, print its lines, show progress, until the input ends or
// a call fails; the exit code says how it went.
//
// Example:
//   class UrlJob : public BatchJob { ... };
//   UrlJob job(...);
//   return RunBatchLoop(options.server, job);
//
// Not thread-safe: one loop at a time, on one thread.
#ifndef DEDUPD_CLIENT_DEDUPCTL_BATCH_LOOP_H_
#define DEDUPD_CLIENT_DEDUPCTL_BATCH_LOOP_H_

#include <cstddef>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/dedupctl/flags.h"

namespace dedupd::dedupctl {

// BatchJob: what one command does with the loop's batches.
class BatchJob {
 public:
  virtual ~BatchJob() = default;

  // ReadBatch replaces the batch with the next items of the input (by the
  // job's own measure, sending a partial batch rather than waiting for
  // input). Returns how many it holds; 0 ends the loop.
  virtual size_t ReadBatch() = 0;

  // SendBatch sends the batch and prints its output lines (each item that
  // is bad, locally or as the server says, sets `*any_invalid`). An error
  // ends the run with exit code 2 (a failed call, a failed write).
  virtual absl::Status SendBatch(const DedupClient& client, bool* any_invalid) = 0;

  // InputStatus: a read error of the input, checked once it has ended.
  virtual absl::Status InputStatus() const = 0;
};

// RunBatchLoop connects to `server` and runs `job` until its input ends.
// Returns the exit code: kExitOk, kExitInvalid when some item was bad, or
// kExitError (with the one-line error printed) when connecting, a call,
// reading the input or writing the output failed.
int RunBatchLoop(const ServerOptions& server, BatchJob& job);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_BATCH_LOOP_H_
