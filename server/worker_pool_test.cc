#include "server/worker_pool.h"

#include <atomic>
#include <set>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

TEST(WorkerPoolTest, RunsEveryScheduledItem) {
  std::atomic<int> ran{0};
  {
    WorkerPool pool(4);
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(pool.Schedule([&ran] { ran.fetch_add(1); }));
    }
    pool.Stop();  // runs what is queued before joining
    EXPECT_EQ(ran.load(), 1000);
  }
}

TEST(WorkerPoolTest, WorkRunsOffTheCallingThreadOnSeveralThreads) {
  WorkerPool pool(3);
  absl::Mutex mu;
  std::set<std::thread::id> ids;
  absl::Notification release;
  std::atomic<int> started{0};
  // Three items that block until released can only all start when three
  // different threads run them.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(pool.Schedule([&] {
      {
        absl::MutexLock lock(&mu);
        ids.insert(std::this_thread::get_id());
      }
      started.fetch_add(1);
      release.WaitForNotification();
    }));
  }
  {
    absl::MutexLock lock(&mu);
    auto three = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return ids.size() == 3; };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&three), absl::Seconds(30)));
    EXPECT_EQ(ids.count(std::this_thread::get_id()), 0u);
  }
  release.Notify();
  pool.Stop();
  EXPECT_EQ(started.load(), 3);
}

TEST(WorkerPoolTest, ScheduleAfterStopIsRefused) {
  WorkerPool pool(1);
  pool.Stop();
  bool ran = false;
  EXPECT_FALSE(pool.Schedule([&ran] { ran = true; }));
  EXPECT_FALSE(ran);
  pool.Stop();  // idempotent
}

}  // namespace
}  // namespace dedupd
