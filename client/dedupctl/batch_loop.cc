#include "client/dedupctl/batch_loop.h"

#include <memory>

#include "absl/status/statusor.h"
#include "client/dedupctl/line_io.h"

namespace dedupd::dedupctl {

int RunBatchLoop(const ServerOptions& server, BatchJob& job) {
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(server.address, server.client);
  if (!client.ok()) return ExitWithError(client.status());

  Progress progress;
  size_t done = 0;
  bool any_invalid = false;
  absl::Status status;
  while (const size_t n = job.ReadBatch()) {
    status = job.SendBatch(**client, &any_invalid);
    if (!status.ok()) break;
    done += n;
    progress.Update(done);
  }
  progress.Finish(done);
  if (status.ok()) status = job.InputStatus();
  if (absl::Status flushed = FlushStdout(); status.ok()) status = flushed;
  if (!status.ok()) return ExitWithError(status);
  return any_invalid ? kExitInvalid : kExitOk;
}

}  // namespace dedupd::dedupctl
