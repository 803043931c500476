// worker_pool.h: a fixed set of threads running queued work. The gRPC
// callback API runs handlers on a few shared threads that must not block;
// RocksDB calls block, so handlers hand their work to this pool.
//
// Example:
//   WorkerPool pool(/*threads=*/8);
//   pool.Schedule([] { DoBlockingWork(); });
//   pool.Stop();  // runs what is queued, then joins
#ifndef DEDUPD_SERVER_WORKER_POOL_H_
#define DEDUPD_SERVER_WORKER_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace dedupd {

// WorkerPool: thread-safe. The queue itself is unbounded: callers bound it
// (DedupService admits at most max_concurrent_rpcs calls).
class WorkerPool {
 public:
  // Starts `threads` threads. REQUIRES: threads >= 1.
  explicit WorkerPool(int threads);
  // Stops the pool (see Stop).
  ~WorkerPool();

  // Schedule queues `work` to run on one of the pool's threads. Returns
  // false, without running it, once Stop has begun.
  bool Schedule(std::function<void()> work);

  // Stop runs all work queued so far, then joins the threads. Idempotent;
  // not to be called concurrently with itself or the destructor.
  void Stop();

 private:
  void Run();

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_WORKER_POOL_H_
