// run_process_group: fork/exec every child in its own process group, relay
// its output line by line with its label, and tear the whole job down on the
// first failure or when hvdrun is signalled.
//
// One thread, one poll loop. Signal handlers (SIGINT, SIGTERM, SIGCHLD) only
// write the signal number into a self-pipe, which wakes the loop up.
#include "runner/ranks/process_group.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>

#include "runner/ranks/output_lines.h"

extern char** environ;

namespace hvdrun {
namespace {

using Clock = std::chrono::steady_clock;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(sig);
  (void)!write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    default: return "signal " + std::to_string(sig);
  }
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: drop the output, keep tearing down
    done += static_cast<size_t>(n);
  }
}

struct Stream {
  int fd = -1;        // read end of the child's pipe, -1 once closed
  OutputLines lines;  // what was read, relayed as whole lines with their tag
  int out_fd = -1;    // where the lines go
  const std::function<void(const std::string&)>* on_line = nullptr;
};

struct Child {
  const ChildSpec* spec = nullptr;
  std::string name;  // "rank 2 (host h2)" for failure messages
  pid_t pid = -1;    // also its process group id
  bool reaped = false;
  // Ordered stopped (GroupOrders::stop): SIGKILL at stop_kill_at.
  bool stopping = false;
  std::chrono::steady_clock::time_point stop_kill_at{};
  int file_fd = -1;  // output_file, if any
  Stream streams[2];
};

// The job rank a child runs: its HOROVODCPP_RANK, else its index.
std::string rank_of(const ChildSpec& spec, size_t index) {
  auto rank = spec.env.find("HOROVODCPP_RANK");
  return rank != spec.env.end() ? rank->second : std::to_string(index);
}

std::string describe(const ChildSpec& spec, size_t index) {
  if (spec.label.empty()) return spec.argv.empty() ? "child" : spec.argv[0];
  auto host = spec.env.find("HOROVODCPP_HOSTNAME");
  std::string name = "rank " + rank_of(spec, index);
  name += " (" + (host != spec.env.end() ? "host " + host->second : spec.label) + ")";
  return name;
}

// Writes the lines of `s` complete with `bytes` (all of it at EOF).
void relay(Stream& s, const std::string& bytes, bool at_eof) {
  write_all(s.out_fd, s.lines.feed(bytes, at_eof, s.on_line));
}

// Builds argv/envp before fork: after fork only async-signal-safe calls.
struct ExecArgs {
  std::vector<std::string> env_strings;
  std::vector<char*> argv, envp;
  explicit ExecArgs(const ChildSpec& spec) {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      const char* eq = std::strchr(*e, '=');
      if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
    }
    for (const auto& [k, v] : spec.env) env[k] = v;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
  }
};

// A pipe's read end (close-on-exec) that holds `text` and then end of file.
bool stdin_pipe(const std::string& text, int* read_fd, std::string* error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  const bool written = text.size() <= PIPE_BUF &&
                       write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fds[1]);
  if (!written) {
    close(fds[0]);
    *error = "cannot write the child's stdin";
    return false;
  }
  *read_fd = fds[0];
  return true;
}

// Opens `path` (and its folder) for a child's output.
bool open_output_file(const std::string& path, int* fd, std::string* error) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  *fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (*fd >= 0) return true;
  *error = "cannot open " + path + ": " + std::strerror(errno);
  return false;
}

// The pipes of a child's stdout (pipes[0]) and stderr (pipes[1]).
bool output_pipes(int pipes[2][2], std::string* error) {
  if (pipe2(pipes[0], O_CLOEXEC) != 0) {
    *error = std::strerror(errno);
    return false;
  }
  if (pipe2(pipes[1], O_CLOEXEC) == 0) return true;
  close(pipes[0][0]);
  close(pipes[0][1]);
  *error = std::strerror(errno);
  return false;
}

// Starts one child; on failure to fork, returns false with the reason.
bool start_child(Child& child, std::string* error) {
  const ChildSpec& spec = *child.spec;
  if (spec.argv.empty()) {
    *error = "empty command";
    return false;
  }
  if (!spec.output_file.empty() && !open_output_file(spec.output_file, &child.file_fd, error)) {
    return false;
  }
  int pipes[2][2];
  if (!output_pipes(pipes, error)) return false;
  int stdin_fd = -1;
  if (!spec.stdin_text.empty() && !stdin_pipe(spec.stdin_text, &stdin_fd, error)) {
    for (auto& p : pipes) {
      close(p[0]);
      close(p[1]);
    }
    return false;
  }
  ExecArgs args(spec);
  // Signals stay blocked until the child has reset its handlers: a TERM sent
  // to its group right after fork must kill it, not run our handler.
  sigset_t all, old_mask;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old_mask);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    // A background hvdrun (sh &) ignores INT/QUIT: its ranks must not.
    for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD}) signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (stdin_fd < 0) stdin_fd = open("/dev/null", O_RDONLY);
    if (stdin_fd >= 0) dup2(stdin_fd, 0);
    dup2(pipes[0][1], 1);
    dup2(pipes[1][1], 2);
    execvpe(args.argv[0], args.argv.data(), args.envp.data());
    const char* msg = "hvdrun: cannot execute ";
    (void)!write(2, msg, std::strlen(msg));
    (void)!write(2, args.argv[0], std::strlen(args.argv[0]));
    (void)!write(2, ": ", 2);
    (void)!write(2, std::strerror(errno), std::strlen(std::strerror(errno)));
    (void)!write(2, "\n", 1);
    _exit(127);
  }
  int saved = errno;
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  close(pipes[0][1]);
  close(pipes[1][1]);
  if (stdin_fd >= 0) close(stdin_fd);
  if (pid < 0) {
    close(pipes[0][0]);
    close(pipes[1][0]);
    *error = std::string("fork: ") + std::strerror(saved);
    return false;
  }
  setpgid(pid, pid);  // also here: no race with an early kill(-pid, ...)
  child.pid = pid;
  for (int i = 0; i < 2; ++i) {
    child.streams[i].fd = pipes[i][0];
    const std::string prefix =
        spec.label.empty() ? "" : spec.label + (i ? "<stderr>: " : "<stdout>: ");
    child.streams[i].lines =
        spec.srun_labels
            ? OutputLines::srun_labels(i ? "<stderr>: " : "<stdout>: ", spec.timestamps)
            : OutputLines(prefix, spec.mpirun_tags, spec.timestamps);
    child.streams[i].out_fd = child.file_fd >= 0 ? child.file_fd : (i == 0 ? 1 : 2);
  }
  return true;
}

// Fields of /proc/PID/stat: state, parent and process group (false if gone).
bool read_stat(pid_t pid, char* state, pid_t* ppid, pid_t* pgrp) {
  char stat[512] = {};
  int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY);
  if (fd < 0) return false;
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  // The command name (field 2) may hold spaces and parentheses.
  const char* paren = n > 0 ? std::strrchr(stat, ')') : nullptr;
  int parent = 0, group = 0;
  if (paren == nullptr || std::sscanf(paren + 1, " %c %d %d", state, &parent, &group) != 3) {
    return false;
  }
  *ppid = parent;
  *pgrp = group;
  return true;
}

// Calls fn(pid, state, ppid, pgrp) for every process of the machine.
template <typename Fn>
void for_each_process(Fn&& fn) {
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    char state = 0;
    pid_t ppid = 0, pgrp = 0;
    if (pid > 0 && read_stat(pid, &state, &ppid, &pgrp)) fn(pid, state, ppid, pgrp);
  }
  closedir(dir);
}

// Descendants that left our process groups (MPI ranks get their own) and
// were reparented to us, the subreaper, when their parent died: the dead
// ones are reaped, the live ones returned.
std::vector<pid_t> reap_adopted(const std::vector<Child>& children) {
  std::vector<pid_t> alive;
  const pid_t me = getpid();
  for_each_process([&](pid_t pid, char, pid_t ppid, pid_t) {
    if (ppid != me) return;
    for (const auto& c : children) {
      if (c.pid == pid && !c.reaped) return;  // tracked
    }
    if (waitpid(pid, nullptr, WNOHANG) != pid) alive.push_back(pid);
  });
  return alive;
}

// Continues the stopped processes among our children's groups and the
// adopted ones: a stopped process handles its SIGTERM only once continued.
// Only those: Open MPI's mpirun forwards a SIGCONT to its ranks, and may
// crash doing so while it aborts the job.
void continue_stopped(const std::vector<Child>& children, const std::vector<pid_t>& adopted) {
  for_each_process([&](pid_t pid, char state, pid_t, pid_t pgrp) {
    if (state != 'T' && state != 't') return;
    bool ours = std::find(adopted.begin(), adopted.end(), pid) != adopted.end();
    for (const auto& c : children) ours = ours || (c.pid > 0 && pgrp == c.pid);
    if (ours) kill(pid, SIGCONT);
  });
}

// Signals become bytes on g_signal_pipe while a group runs (SIGPIPE is
// ignored: a closed stdout must not kill the teardown), and hvdrun is the
// subreaper of its children's orphans, so they can be reaped and a group
// that still has live members is told from one that has zombies. Undone
// when the group ends.
class SignalScope {
 public:
  SignalScope() {
    if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
      error_ = std::string("pipe: ") + std::strerror(errno);
      return;
    }
    struct sigaction action {};
    action.sa_handler = on_signal;
    action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
    sigaction(SIGCHLD, &action, &old_chld_);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &old_pipe_);
    prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper_);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  ~SignalScope() {
    if (!error_.empty()) return;
    prctl(PR_SET_CHILD_SUBREAPER, was_subreaper_);
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGCHLD, &old_chld_, nullptr);
    sigaction(SIGPIPE, &old_pipe_, nullptr);
    close(g_signal_pipe[0]);
    close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }
  SignalScope(const SignalScope&) = delete;
  SignalScope& operator=(const SignalScope&) = delete;
  const std::string& error() const { return error_; }

 private:
  std::string error_;
  struct sigaction old_int_ {
  }, old_term_{}, old_chld_{}, old_pipe_{};
  int was_subreaper_ = 0;
};

// The open output pipes of the children, and the poll() entries for them
// after the signal pipe's.
struct OpenStreams {
  std::vector<pollfd> fds;
  std::vector<Stream*> streams;
};

// One run of a process group: starting, reaping, judging exits, tearing
// down (SIGTERM, then SIGKILL after the grace) and relaying output.
class GroupRun {
 public:
  GroupRun(double grace_seconds, const JobWatch& watch, const GroupControl* control)
      : watch_(watch),
        control_(control),
        grace_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(grace_seconds))) {}

  JobResult run(const std::vector<ChildSpec>& specs) {
    children_.reserve(specs.size());
    for (const ChildSpec& spec : specs) {
      if (!terminating_) start(spec);
    }
    take_orders();
    while (true) {
      note_reported_failure();
      bool all_reaped = reap_children();
      // After the reaping: a rank that asks for a new round because a peer
      // died must not get a round that still counts the dead peer.
      if (Clock::now() >= next_orders_at_) {
        take_orders();
        all_reaped = all_reaped && every_child_reaped();
      }
      if (failed_ && !terminating_ && !accounted_ && watch_.all_accounted &&
          watch_.all_accounted()) {
        // Every rank has spoken; a moment more lets each finish its own
        // output (a Python traceback) and exit by itself.
        accounted_ = true;
        teardown_at_ = std::min(teardown_at_, Clock::now() + std::chrono::seconds(1));
      }
      if (failed_ && !terminating_ && Clock::now() >= teardown_at_) begin_teardown();
      if (all_reaped || terminating_) track_adopted();
      OpenStreams open = open_streams();
      const Clock::time_point now = Clock::now();
      if (all_reaped && !(more_to_come_ && !terminating_)) {
        // Every child is gone; grandchildren left in their groups are not let be.
        if (!leftovers() && open.streams.empty()) break;
        begin_teardown();
      }
      if (terminating_ && !killed_ && now >= kill_at_) {
        killed_ = true;
        signal_all(SIGKILL);
        if (watch_.signal_remote) watch_.signal_remote(SIGKILL);
        give_up_at_ = now + std::chrono::seconds(2);
      }
      // A process that left our process groups (setsid) may hold a pipe forever.
      if (killed_ && all_reaped && now >= give_up_at_) break;
      if (poll(open.fds.data(), open.fds.size(), poll_timeout(now)) < 0 && errno != EINTR) break;
      if (open.fds[0].revents & POLLIN) read_signals();
      relay_output(open);
    }
    close_outputs();
    return result_;
  }

 private:
  // SIGTERM is each child's own stop signal (ChildSpec::stop_signal).
  void signal_all(int sig) {
    for (auto& c : children_) {
      if (c.pid <= 0) continue;
      kill(-c.pid, sig == SIGTERM ? c.spec->stop_signal : sig);  // the group: grandchildren too
    }
    for (pid_t pid : adopted_) kill(pid, sig);
  }

  void begin_teardown() {
    if (terminating_) return;
    if (failed_ && watch_.dump_grace > 0 && !dump_asked_) {
      // The ranks still running write their flight recorder dumps; SIGTERM
      // follows after the dump grace. (A stopped rank is left stopped: let
      // go, it would fail on its own, and its exit would read as the cause.)
      dump_asked_ = true;
      signal_all(SIGUSR1);
      if (watch_.signal_remote) watch_.signal_remote(SIGUSR1);
      teardown_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(watch_.dump_grace));
      return;
    }
    terminating_ = true;
    signal_all(SIGTERM);
    continue_stopped(children_, adopted_);
    if (watch_.signal_remote) watch_.signal_remote(SIGTERM);
    kill_at_ = Clock::now() + grace_;
  }

  // The first failure is the job's. The other ranks then have up to the
  // failure grace to end by themselves (they are likely failing on the same
  // cause and saying so), unless `at_once`.
  void fail(int code, const std::string& why, bool at_once) {
    if (!failed_) {
      failed_ = true;
      result_.exit_code = code;
      result_.failure = why;
      teardown_at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(watch_.failure_grace));
    }
    if (at_once) begin_teardown();
  }

  // A blamed rank's own end (before hvdrun signals it) says why the
  // survivors gave up.
  void explain(std::size_t index, int code, const std::string& why) {
    if (terminating_) return;
    const std::string rank = rank_of(*children_[index].spec, index);
    if (std::find(blamed_.begin(), blamed_.end(), rank) == blamed_.end()) return;
    blamed_.clear();
    result_.exit_code = code;
    result_.failure = why;
  }

  void start(const ChildSpec& spec) {
    Child& child = children_.emplace_back();
    child.spec = &spec;
    child.name = describe(spec, children_.size() - 1);
    std::string error;
    if (!start_child(child, &error)) fail(1, child.name + ": " + error, true);
    for (auto& s : child.streams) s.on_line = &watch_.on_line;
  }

  // The driver's orders, at most every 100 ms and at once after an exit.
  void take_orders() {
    if (control_ == nullptr || terminating_) return;
    GroupOrders orders = control_->poll();
    more_to_come_ = orders.more_to_come;
    next_orders_at_ = Clock::now() + std::chrono::milliseconds(100);
    for (ChildSpec& spec : orders.start) {
      if (!terminating_) start(started_later_.emplace_back(std::move(spec)));
    }
    for (std::size_t i : orders.stop) {
      Child& c = children_.at(i);
      if (c.reaped || c.stopping || c.pid <= 0) continue;
      c.stopping = true;
      c.stop_kill_at = Clock::now() + grace_;
      kill(-c.pid, c.spec->stop_signal);
    }
    if (!orders.failure.empty()) fail(1, orders.failure, true);
  }

  void note_reported_failure() {
    if (failed_ || !watch_.reported_failure) return;
    const ReportedFailure reported = watch_.reported_failure();
    if (reported.summary.empty()) return;
    fail(1, reported.summary, false);
    for (int r : reported.blamed) blamed_.push_back(std::to_string(r));
  }

  // Reaps what has exited: our children, and their orphaned descendants
  // (reparented to us as subreaper) by process group; never waitpid(-1).
  // True when every child is reaped.
  bool reap_children() {
    bool all_reaped = true;
    for (std::size_t index = 0; index < children_.size(); ++index) {
      Child& c = children_[index];
      if (c.pid <= 0) continue;
      if (c.stopping && !c.reaped && Clock::now() >= c.stop_kill_at) {
        kill(-c.pid, SIGKILL);
        c.stop_kill_at = Clock::time_point::max();
      }
      int status = 0;
      while (!c.reaped) {
        pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r == 0) break;
        if (r < 0 && errno == EINTR) continue;
        c.reaped = true;
        if (r >= 0) judge_exit(index, status);
      }
      if (c.reaped) {
        while (waitpid(-c.pid, &status, WNOHANG) > 0) {
        }
      }
      all_reaped = all_reaped && c.reaped;
    }
    return all_reaped;
  }

  void judge_exit(std::size_t index, int status) {
    const Child& c = children_[index];
    if (control_ != nullptr && !terminating_ && control_->on_exit(index, status)) {
      next_orders_at_ = Clock::now();
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
      const std::string why = c.name + " exited with code " + std::to_string(WEXITSTATUS(status));
      explain(index, WEXITSTATUS(status), why);
      fail(WEXITSTATUS(status), why, false);
    } else if (WIFSIGNALED(status)) {
      int sig = WTERMSIG(status);
      const std::string why =
          c.name + " was killed by signal " + std::to_string(sig) + " (" + signal_name(sig) + ")";
      explain(index, 128 + sig, why);
      fail(128 + sig, why, false);
    }
  }

  bool every_child_reaped() const {
    for (const Child& c : children_) {
      if (c.pid > 0 && !c.reaped) return false;
    }
    return true;
  }

  // Orphans adopted from our children's groups; those adopted after the
  // signals went out get them now.
  void track_adopted() {
    std::vector<pid_t> found = reap_adopted(children_);
    std::vector<pid_t> late;
    for (pid_t pid : found) {
      bool known = std::find(adopted_.begin(), adopted_.end(), pid) != adopted_.end();
      if (terminating_ && !known) {
        kill(pid, killed_ ? SIGKILL : SIGTERM);
        late.push_back(pid);
      }
    }
    if (!late.empty() && !killed_) continue_stopped({}, late);
    adopted_ = std::move(found);
  }

  bool leftovers() const {
    bool left = !adopted_.empty();
    for (const auto& c : children_) left |= c.pid > 0 && kill(-c.pid, 0) == 0;
    return left;
  }

  OpenStreams open_streams() {
    OpenStreams open;
    open.fds.push_back({g_signal_pipe[0], POLLIN, 0});
    for (auto& c : children_) {
      for (auto& s : c.streams) {
        if (s.fd >= 0) {
          open.fds.push_back({s.fd, POLLIN, 0});
          open.streams.push_back(&s);
        }
      }
    }
    return open;
  }

  // Until the next deadline: the teardown's, the SIGKILL's, the driver's orders.
  int poll_timeout(Clock::time_point now) const {
    int timeout_ms = 200;
    if (failed_ && !killed_) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      (terminating_ ? kill_at_ : teardown_at_) - now)
                      .count();
      timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 200)));
    }
    if (control_ != nullptr && !terminating_) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(next_orders_at_ - now).count();
      timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left, timeout_ms)));
    }
    return timeout_ms;
  }

  void read_signals() {
    unsigned char sigs[64];
    ssize_t n;
    while ((n = read(g_signal_pipe[0], sigs, sizeof sigs)) > 0) {
      for (ssize_t i = 0; i < n; ++i) {
        if (sigs[i] == SIGCHLD) continue;
        bool again = terminating_ && result_.failure.rfind("hvdrun received", 0) == 0;
        fail(128 + sigs[i], "hvdrun received " + signal_name(sigs[i]) + ", stopping every rank",
             true);
        if (again && !killed_) kill_at_ = Clock::now();  // second Ctrl-C: KILL at once
      }
    }
  }

  void relay_output(const OpenStreams& open) {
    for (Stream* s : open.streams) {  // a prompt or a progress bar: no newline for a while
      write_all(s->out_fd, s->lines.flush_stale(Clock::now(), s->on_line));
    }
    for (size_t i = 0; i < open.streams.size(); ++i) {
      if (!open.fds[i + 1].revents) continue;
      Stream& s = *open.streams[i];
      char buf[16384];
      ssize_t n = read(s.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        relay(s, std::string(buf, static_cast<size_t>(n)), false);
      } else {
        relay(s, "", true);
        close(s.fd);
        s.fd = -1;
      }
    }
  }

  void close_outputs() {
    for (auto& c : children_) {
      for (auto& s : c.streams) {
        if (s.fd >= 0) close(s.fd);
      }
      if (c.file_fd >= 0) close(c.file_fd);
    }
  }

  const JobWatch& watch_;
  const GroupControl* control_;
  const Clock::duration grace_;
  JobResult result_;
  std::vector<Child> children_;
  std::deque<ChildSpec> started_later_;  // the driver's; stable addresses
  std::vector<pid_t> adopted_;
  bool dump_asked_ = false;   // SIGUSR1 sent (JobWatch::dump_grace)
  bool terminating_ = false;  // SIGTERM sent to every group
  bool killed_ = false;       // SIGKILL sent to every group
  bool failed_ = false;
  bool accounted_ = false;           // watch.all_accounted() said so
  std::vector<std::string> blamed_;  // by the reported failure that is the job's
  bool more_to_come_ = false;        // the driver starts more children later
  Clock::time_point kill_at_{}, give_up_at_{}, teardown_at_{}, next_orders_at_{};
};

}  // namespace

JobResult run_process_group(const std::vector<ChildSpec>& specs, double grace_seconds,
                            const JobWatch& watch, const GroupControl* control) {
  SignalScope signals;
  if (!signals.error().empty()) return {1, signals.error()};
  return GroupRun(grace_seconds, watch, control).run(specs);
}

}  // namespace hvdrun
