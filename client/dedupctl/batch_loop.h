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
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/dedupctl/flags.h"
#include "client/dedupctl/line_io.h"

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

// SendAndPrint is the body of a per-item job's SendBatch: it sends the
// request items of the inputs without a local error (`input.error`, an
// optional message) in one call, `send(items)` -> StatusOr<vector<Result>>
// with one result per item, then prints one line per input in input order,
// `line(input, result)` with result nullptr for an input with a local
// error. `*any_invalid` is set for such an input and for a result that
// `invalid(result)` calls bad. Errors: the call's, or Unavailable when
// standard output fails.
template <typename Input, typename Item, typename Send, typename Invalid, typename Line>
absl::Status SendAndPrint(const std::vector<Input>& batch, std::vector<Item> items, Send send,
                          Invalid invalid, Line line, bool* any_invalid) {
  using Results = typename decltype(send(items))::value_type;
  Results results;
  if (!items.empty()) {
    auto r = send(items);
    if (!r.ok()) return r.status();
    results = *std::move(r);
  }
  size_t next = 0;
  bool write_ok = true;
  for (const Input& input : batch) {
    const auto* result = input.error ? nullptr : &results[next++];
    if (result == nullptr || invalid(*result)) *any_invalid = true;
    write_ok = WriteLine(line(input, result)) && write_ok;
  }
  absl::Status flushed = FlushStdout();
  if (flushed.ok() && !write_ok) {
    return absl::UnavailableError("write to standard output failed");
  }
  return flushed;
}

// RunBatchLoop connects to `server` and runs `job` until its input ends.
// Returns the exit code: kExitOk, kExitInvalid when some item was bad, or
// kExitError (with the one-line error printed) when connecting, a call,
// reading the input or writing the output failed.
int RunBatchLoop(const ServerOptions& server, BatchJob& job);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_BATCH_LOOP_H_
