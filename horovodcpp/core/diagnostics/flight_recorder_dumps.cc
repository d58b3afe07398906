#include "core/diagnostics/flight_recorder_dumps.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>

#include "core/diagnostics/logging.h"
#include "settings/settings.h"

namespace hvd {
namespace {

// The SIGUSR1 handler's only state: the pipe to wake the watcher, and the
// handler it replaced.
std::atomic<int> g_wake_fd{-1};
struct sigaction g_previous {};

void on_sigusr1(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const int fd = g_wake_fd.load();
  if (fd >= 0) {
    const char byte = 1;
    [[maybe_unused]] ssize_t n = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) g_previous.sa_sigaction(signal, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signal);
  }
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "?";
  return name;
}

long long now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::unique_ptr<FlightRecorderDumps> FlightRecorderDumps::from_env(int rank, int size) {
  const std::size_t capacity = FlightRecorder::capacity_from_env();
  if (capacity == 0) return nullptr;
  std::string directory = settings::read_string(settings::Setting::kFlightRecorderDir);
  if (directory.empty()) directory = ".";
  return std::make_unique<FlightRecorderDumps>(capacity, std::move(directory), rank, size);
}

FlightRecorderDumps::FlightRecorderDumps(std::size_t capacity, std::string directory, int rank,
                                         int size)
    : recorder_(capacity),
      path_(directory + "/horovodcpp-flight-recorder.rank" + std::to_string(rank) + ".txt"),
      rank_(rank),
      size_(size) {}

FlightRecorderDumps::~FlightRecorderDumps() {
  if (!watcher_.joinable()) return;
  int expected = wake_fds_[1];
  if (g_wake_fd.compare_exchange_strong(expected, -1)) sigaction(SIGUSR1, &g_previous, nullptr);
  ::close(wake_fds_[1]);  // the watcher's read sees the end
  watcher_.join();
  ::close(wake_fds_[0]);
}

bool FlightRecorderDumps::dump(const std::string& reason) {
  std::lock_guard<std::mutex> lock(dump_mutex_);
  // hvdrun names a folder of its own that the first dump makes.
  ::mkdir(path_.substr(0, path_.rfind('/')).c_str(), 0755);
  const std::string temporary = path_ + ".partial." + std::to_string(::getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (out) {
      std::string why = reason;
      for (char& c : why) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      }
      out << "horovodcpp flight recorder 1\n"
          << "rank " << rank_ << " size " << size_ << " pid " << ::getpid() << " host "
          << host_name() << "\n"
          << "dumped_us " << now_us() << "\n"
          << "reason " << why << "\n";
      recorder_.write(out);
      out << "end\n";
    }
    if (!out) {
      HVD_LOG(Warning) << "flight recorder: cannot write " << temporary;
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path_.c_str()) != 0) {
    HVD_LOG(Warning) << "flight recorder: cannot rename " << temporary << " to " << path_;
    std::remove(temporary.c_str());
    return false;
  }
  HVD_LOG(Info) << "flight recorder: " << reason << ": dumped to " << path_;
  return true;
}

void FlightRecorderDumps::watch_signal() {
  if (watcher_.joinable() || g_wake_fd.load() >= 0) return;
  if (::pipe2(wake_fds_, O_CLOEXEC) != 0) return;
  struct sigaction action {};
  action.sa_sigaction = on_sigusr1;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  g_wake_fd.store(wake_fds_[1]);
  sigaction(SIGUSR1, &action, &g_previous);
  watcher_ = std::thread([this] { watch(); });
}

void FlightRecorderDumps::watch() {
  // Every signal the thread takes goes to the others (it only reads).
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  char byte;
  while (true) {
    const ssize_t n = ::read(wake_fds_[0], &byte, 1);
    if (n == 0) return;  // closed: shutting down
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    dump("SIGUSR1");
  }
}

}  // namespace hvd
