#include "backend/shm/shm_wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace hvd {
namespace shm {
namespace {

// A peer running on its own core answers within microseconds; one that is
// not running needs this core (or another) first: spin briefly (the
// policy's spin_for), then yield, then sleep until the doorbell rings.
constexpr auto kYieldFor = std::chrono::microseconds(100);
// While spinning, the clock is read only every this many spins: a read
// takes longer than a look at the peers' counters.
constexpr int kSpinsPerClockRead = 16;

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Fields of /proc/PID/stat: the state (field 3) and the start time (field
// 22). The command name (field 2) may hold spaces and parentheses, so
// parsing starts after its last ')'.
bool read_stat(std::int64_t pid, char* state, std::uint64_t* start_time) {
  std::ifstream file("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(file, text)) return false;
  const std::size_t end_of_name = text.rfind(')');
  if (end_of_name == std::string::npos) return false;
  std::istringstream fields(text.substr(end_of_name + 1));
  std::string skip;
  fields >> *state;
  for (int field = 4; field < 22; ++field) fields >> skip;
  fields >> *start_time;
  return static_cast<bool>(fields);
}

}  // namespace

ProcessId this_process() {
  ProcessId id;
  id.pid = ::getpid();
  char state = 0;
  if (!read_stat(id.pid, &state, &id.start_time)) id.start_time = 0;  // no /proc: pid only
  return id;
}

bool process_alive(const ProcessId& process) {
  if (::kill(static_cast<pid_t>(process.pid), 0) != 0 && errno == ESRCH) return false;
  char state = 0;
  std::uint64_t start_time = 0;
  if (!read_stat(process.pid, &state, &start_time)) {
    // No /proc entry: gone between the two calls, or no /proc at all.
    return ::kill(static_cast<pid_t>(process.pid), 0) == 0 || errno != ESRCH;
  }
  if (state == 'Z' || state == 'X') return false;  // dead, not yet reaped
  return process.start_time == 0 || start_time == process.start_time;
}

void ring(Doorbell& bell) {
  if (bell.sleepers.load(std::memory_order_seq_cst) == 0) return;
  bell.rings.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, &bell.rings, FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

Backoff::Step Backoff::step() {
  if (spinning_ && ++spins_ < kSpinsPerClockRead) {
    cpu_relax();
    return {};
  }
  spins_ = 0;
  const Clock::time_point now = Clock::now();
  if (!waiting_) {
    waiting_ = true;
    start_ = now;
    next_check_ = now + policy_.check_interval;
  }
  Step next;
  const auto spin_for = policy_.spin ? policy_.spin_for : std::chrono::nanoseconds(0);
  spinning_ = now - start_ < spin_for;
  if (spinning_) {
    cpu_relax();  // ~65 cycles on AMD Zen: a peer's progress is seen within ~0.1 us
  } else if (now - start_ < spin_for + kYieldFor) {
    sched_yield();  // a peer waiting for this core runs now
  } else if (now < next_check_) {
    next.sleep = next_check_ - now;
  }
  if (now >= next_check_) {
    next_check_ = now + policy_.check_interval;
    next.check_due = true;
  }
  return next;
}

std::uint32_t Backoff::begin_sleep() {
  bell_.sleepers.fetch_add(1, std::memory_order_seq_cst);
  return bell_.rings.load(std::memory_order_seq_cst);
}

void Backoff::sleep(std::uint32_t seen, std::chrono::nanoseconds limit) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(limit);
  struct timespec timeout = {static_cast<time_t>(seconds.count()),
                             static_cast<long>((limit - seconds).count())};
  // Returns when woken, at the timeout, on a signal, or at once if the word
  // no longer equals `seen` (it rang since): the caller re-checks in every case.
  syscall(SYS_futex, &bell_.rings, FUTEX_WAIT, seen, &timeout, nullptr, 0);
}

void Backoff::end_sleep() { bell_.sleepers.fetch_sub(1, std::memory_order_seq_cst); }

std::chrono::nanoseconds Backoff::waited() const {
  if (!waiting_) return std::chrono::nanoseconds(0);
  return Clock::now() - start_;
}

}  // namespace shm
}  // namespace hvd
