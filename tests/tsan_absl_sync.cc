// ThreadSanitizer annotations for Debian's prebuilt Abseil synchronization
// library, linked into every test executable of the TSan build
// (-DDEDUPD_TSAN=ON) and into nothing else.
//
// Why: libabsl_synchronization.so is not built with -fsanitize=thread, so
// absl::Mutex (atomics and futexes in uninstrumented code) creates no
// happens-before edges that TSan can see, and every field guarded by an
// absl::Mutex would be reported as a race. An Abseil built with TSan annotates
// itself (ABSL_TSAN_MUTEX_* in mutex.cc); this file adds the same annotations
// from outside: it defines the public Mutex / CondVar / Notification / Barrier
// members in the executable, where they take precedence over the shared
// library's, tells TSan about each lock, unlock and wait, and calls the
// library's own definition (found with dlsym(RTLD_NEXT, ...)).
//
// Conditions (Await, LockWhen) are evaluated by absl while it holds the real
// lock but before TSan has been told so, possibly on another thread: each is
// wrapped so that its evaluation first acquires the mutex's TSan clock.
//
// Not covered: Notification::HasBeenNotified() (inline; no test relies on it
// for ordering), BlockingCounter, and the deadlock detector (off in TSan).
//
// Example (nothing to call: linking this file is enough):
//   absl::Mutex mu; int n = 0;  // n guarded by mu
//   std::thread t([&] { absl::MutexLock l(&mu); ++n; });
//   { absl::MutexLock l(&mu); ++n; }  // no TSan report
//   t.join();
#if !defined(__has_feature)
#define __has_feature(x) 0
#endif
#if !__has_feature(thread_sanitizer) && !defined(__SANITIZE_THREAD__)
#error "tsan_absl_sync.cc is for the ThreadSanitizer build only"
#endif

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/base/config.h"
#include "absl/synchronization/barrier.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace {

#define DEDUPD_TSAN_STR2(x) #x
#define DEDUPD_TSAN_STR(x) DEDUPD_TSAN_STR2(x)

// The library's definition of `suffix`: the Itanium mangled name is
// "_ZN" ["K" for const members] "4absl" <len><inline namespace> suffix; the
// inline namespace ("debian3" on Debian 12) comes from absl's own config.
void* Real(const char* suffix, bool is_const = false) {
  const std::string ns = DEDUPD_TSAN_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  const std::string name =
      std::string(is_const ? "_ZNK" : "_ZN") + "4absl" + std::to_string(ns.size()) + ns + suffix;
  void* fn = dlsym(RTLD_NEXT, name.c_str());
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found in the Abseil library\n", name.c_str());
    std::abort();
  }
  return fn;
}

template <typename Fn>
Fn RealAs(const char* suffix, bool is_const = false) {
  return reinterpret_cast<Fn>(Real(suffix, is_const));
}

// The library calls its own public members too (AwaitWithTimeout calls
// AwaitWithDeadline, Notification locks its Mutex), and those calls land
// here: only the outermost call on a thread annotates, nested ones pass
// through.
thread_local int tls_depth = 0;
struct Outermost {
  Outermost() : outer(tls_depth++ == 0) {}
  ~Outermost() { --tls_depth; }
  const bool outer;
};
#define DEDUPD_TSAN_PASS_NESTED(...) \
  Outermost outermost;               \
  if (!outermost.outer) return real(__VA_ARGS__)

// TSan's view of taking and releasing `mu`; `flags` adds
// __tsan_mutex_read_lock for reader locks.
void AnnotateLocked(absl::Mutex* mu, unsigned flags) {
  __tsan_mutex_pre_lock(mu, flags);
  __tsan_mutex_post_lock(mu, flags, 0);
}
void AnnotateUnlocking(absl::Mutex* mu, unsigned flags) {
  __tsan_mutex_pre_unlock(mu, flags);
  __tsan_mutex_post_unlock(mu, flags);
}

// A condition that acquires `mu`'s TSan clock, evaluates `cond`, and
// releases into `mu` again (absl may evaluate it on the thread that is
// unlocking, after that thread's release, and the next owner must see the
// reads). It is built with Condition's void* constructor, defined in the
// (uninstrumented) library, so that absl's reads of `wrapped` itself are not
// seen; the reads of this struct are ordered by releasing and acquiring
// `this`, which the waiting thread acquires again before the struct dies.
struct AnnotatedCondition {
  AnnotatedCondition(absl::Mutex* mu, const absl::Condition& cond)
      : mu(mu), cond(&cond), wrapped(&AnnotatedCondition::Eval, this) {
    __tsan_release(this);
  }
  ~AnnotatedCondition() { __tsan_acquire(this); }
  static bool Eval(void* arg) {
    __tsan_acquire(arg);
    auto* self = static_cast<AnnotatedCondition*>(arg);
    __tsan_acquire(self->mu);
    const bool result = self->cond->Eval();
    __tsan_release(self->mu);
    __tsan_release(arg);
    return result;
  }
  absl::Mutex* const mu;
  const absl::Condition* const cond;
  const absl::Condition wrapped;
};

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

Mutex::~Mutex() {
  static auto real = RealAs<void (*)(Mutex*)>("5MutexD2Ev");
  __tsan_mutex_destroy(this, 0);
  real(this);
}

void Mutex::Lock() {
  static auto real = RealAs<void (*)(Mutex*)>("5Mutex4LockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() {
  static auto real = RealAs<void (*)(Mutex*)>("5Mutex10ReaderLockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() {
  static auto real = RealAs<bool (*)(Mutex*)>("5Mutex7TryLockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_try_lock | (locked ? 0 : __tsan_mutex_try_lock_failed),
                         0);
  return locked;
}

bool Mutex::ReaderTryLock() {
  static auto real = RealAs<bool (*)(Mutex*)>("5Mutex13ReaderTryLockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  const unsigned flags = __tsan_mutex_read_lock | __tsan_mutex_try_lock;
  __tsan_mutex_pre_lock(this, flags);
  const bool locked = real(this);
  __tsan_mutex_post_lock(this, flags | (locked ? 0 : __tsan_mutex_try_lock_failed), 0);
  return locked;
}

void Mutex::Unlock() {
  static auto real = RealAs<void (*)(Mutex*)>("5Mutex6UnlockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  AnnotateUnlocking(this, 0);
  real(this);
}

void Mutex::ReaderUnlock() {
  static auto real = RealAs<void (*)(Mutex*)>("5Mutex12ReaderUnlockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  AnnotateUnlocking(this, __tsan_mutex_read_lock);
  real(this);
}

// Await*: the lock is held on entry and on return; absl releases it while
// waiting.
void Mutex::Await(const Condition& cond) {
  static auto real = RealAs<void (*)(Mutex*, const Condition&)>("5Mutex5AwaitERKNS0_9ConditionE");
  DEDUPD_TSAN_PASS_NESTED(this, cond);
  AnnotatedCondition c(this, cond);
  AnnotateUnlocking(this, 0);
  real(this, c.wrapped);
  AnnotateLocked(this, 0);
}

bool Mutex::AwaitWithTimeout(const Condition& cond, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, timeout);
  AnnotatedCondition c(this, cond);
  AnnotateUnlocking(this, 0);
  const bool ok = real(this, c.wrapped, timeout);
  AnnotateLocked(this, 0);
  return ok;
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Time)>(
      "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, deadline);
  AnnotatedCondition c(this, cond);
  AnnotateUnlocking(this, 0);
  const bool ok = real(this, c.wrapped, deadline);
  AnnotateLocked(this, 0);
  return ok;
}

// LockWhen*: not held on entry, held on return.
void Mutex::LockWhen(const Condition& cond) {
  static auto real =
      RealAs<void (*)(Mutex*, const Condition&)>("5Mutex8LockWhenERKNS0_9ConditionE");
  DEDUPD_TSAN_PASS_NESTED(this, cond);
  AnnotatedCondition c(this, cond);
  real(this, c.wrapped);
  AnnotateLocked(this, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  static auto real =
      RealAs<void (*)(Mutex*, const Condition&)>("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  DEDUPD_TSAN_PASS_NESTED(this, cond);
  AnnotatedCondition c(this, cond);
  real(this, c.wrapped);
  AnnotateLocked(this, __tsan_mutex_read_lock);
}

bool Mutex::LockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, timeout);
  AnnotatedCondition c(this, cond);
  const bool ok = real(this, c.wrapped, timeout);
  AnnotateLocked(this, 0);
  return ok;
}

bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Time)>(
      "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, deadline);
  AnnotatedCondition c(this, cond);
  const bool ok = real(this, c.wrapped, deadline);
  AnnotateLocked(this, 0);
  return ok;
}

bool Mutex::ReaderLockWhenWithTimeout(const Condition& cond, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Duration)>(
      "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, timeout);
  AnnotatedCondition c(this, cond);
  const bool ok = real(this, c.wrapped, timeout);
  AnnotateLocked(this, __tsan_mutex_read_lock);
  return ok;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  static auto real = RealAs<bool (*)(Mutex*, const Condition&, absl::Time)>(
      "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  DEDUPD_TSAN_PASS_NESTED(this, cond, deadline);
  AnnotatedCondition c(this, cond);
  const bool ok = real(this, c.wrapped, deadline);
  AnnotateLocked(this, __tsan_mutex_read_lock);
  return ok;
}

// CondVar waits: `mu` is held (exclusively) on entry and on return.
void CondVar::Wait(Mutex* mu) {
  static auto real = RealAs<void (*)(CondVar*, Mutex*)>("7CondVar4WaitEPNS0_5MutexE");
  DEDUPD_TSAN_PASS_NESTED(this, mu);
  AnnotateUnlocking(mu, 0);
  real(this, mu);
  AnnotateLocked(mu, 0);
}

bool CondVar::WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
  static auto real = RealAs<bool (*)(CondVar*, Mutex*, absl::Duration)>(
      "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  DEDUPD_TSAN_PASS_NESTED(this, mu, timeout);
  AnnotateUnlocking(mu, 0);
  const bool timed_out = real(this, mu, timeout);
  AnnotateLocked(mu, 0);
  return timed_out;
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  static auto real = RealAs<bool (*)(CondVar*, Mutex*, absl::Time)>(
      "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  DEDUPD_TSAN_PASS_NESTED(this, mu, deadline);
  AnnotateUnlocking(mu, 0);
  const bool timed_out = real(this, mu, deadline);
  AnnotateLocked(mu, 0);
  return timed_out;
}

// Notification: Notify() happens before every wait that sees it.
void Notification::Notify() {
  static auto real = RealAs<void (*)(Notification*)>("12Notification6NotifyEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  __tsan_release(this);
  real(this);
}

void Notification::WaitForNotification() const {
  static auto real = RealAs<void (*)(const Notification*)>("12Notification19WaitForNotificationEv",
                                                           /*is_const=*/true);
  DEDUPD_TSAN_PASS_NESTED(this);
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  static auto real = RealAs<bool (*)(const Notification*, absl::Duration)>(
      "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
      /*is_const=*/true);
  DEDUPD_TSAN_PASS_NESTED(this, timeout);
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  static auto real = RealAs<bool (*)(const Notification*, absl::Time)>(
      "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
      /*is_const=*/true);
  DEDUPD_TSAN_PASS_NESTED(this, deadline);
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

// Barrier: everything before Block() in any thread happens before everything
// after Block() in every thread.
bool Barrier::Block() {
  static auto real = RealAs<bool (*)(Barrier*)>("7Barrier5BlockEv");
  DEDUPD_TSAN_PASS_NESTED(this);
  __tsan_release(this);
  const bool last = real(this);
  __tsan_acquire(this);
  return last;
}

ABSL_NAMESPACE_END
}  // namespace absl
