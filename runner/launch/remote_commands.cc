#include "runner/launch/remote_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace hvdrun {
namespace {

struct Running {
  pid_t pid = -1;
  int fd = -1;  // its stdout+stderr
};

Running start(RemoteCommand& command) {
  Running r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  std::vector<char*> argv;
  for (std::string& w : command.argv) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  r.pid = pid;
  r.fd = fds[0];
  return r;
}

void drain(RemoteCommand& command, int fd) {
  char buffer[512];
  ssize_t n;
  while (fd >= 0 && (n = read(fd, buffer, sizeof buffer)) > 0) {
    command.output.append(buffer, static_cast<std::size_t>(n));
    if (command.output.size() > 8192) command.output.erase(0, command.output.size() - 8192);
  }
}

}  // namespace

bool succeeded(const RemoteCommand& c) {
  return c.done && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

void run_remote_commands(std::vector<RemoteCommand>& commands, double seconds, bool stop_early) {
  std::vector<Running> running;
  for (RemoteCommand& c : commands) {
    running.push_back(start(c));
    if (running.back().pid < 0) {
      c.done = true;
      c.status = 127 << 8;
      c.output = "cannot start " + (c.argv.empty() ? std::string("a command") : c.argv[0]);
    }
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  for (;;) {
    bool all_done = true, one_failed = false;
    for (std::size_t i = 0; i < commands.size(); ++i) {
      RemoteCommand& c = commands[i];
      drain(c, running[i].fd);
      if (!c.done && waitpid(running[i].pid, &c.status, WNOHANG) == running[i].pid) {
        c.done = true;
        drain(c, running[i].fd);
      }
      all_done = all_done && c.done;
      one_failed = one_failed || (c.done && !succeeded(c));
    }
    if (all_done || (stop_early && one_failed)) break;
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (running[i].pid > 0 && !commands[i].done) {
      kill(-running[i].pid, SIGKILL);
      kill(running[i].pid, SIGKILL);
      waitpid(running[i].pid, nullptr, 0);
    }
    if (running[i].fd >= 0) close(running[i].fd);
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  return "was killed by signal " + std::to_string(WTERMSIG(status));
}

std::string last_line(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  std::size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

}  // namespace hvdrun
