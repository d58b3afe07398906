#include "runner/cli/check_build.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace hvdrun {

std::string check_build_text(const BuildInfo& info) {
  auto mark = [](bool yes) { return yes ? "[X] " : "[ ] "; };
  std::string text = "horovodcpp v" + info.version + ":\n\n";
  text += "Available Frameworks:\n";
  text += std::string("    ") + mark(info.tensorflow) + "TensorFlow\n";
  text += std::string("    ") + mark(info.torch) + "PyTorch\n";
  text += std::string("    ") + mark(false) + "MXNet\n\n";
  text += "Available Controllers:\n";
  text += std::string("    ") + mark(info.mpi) + "MPI\n";
  text += std::string("    ") + mark(info.gloo) + "Gloo\n\n";
  text += "Available Tensor Operations:\n";
  text += std::string("    ") + mark(info.nccl) + "NCCL\n";
  text += std::string("    ") + mark(false) + "DDL\n";
  text += std::string("    ") + mark(false) + "CCL\n";
  text += std::string("    ") + mark(info.mpi) + "MPI\n";
  text += std::string("    ") + mark(info.gloo) + "Gloo\n";
  return text;
}

bool python_module_imports(const std::string& module, int seconds) {
  pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    setpgid(0, 0);  // its own group: a timeout kills whatever it started
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    std::string code = "import " + module;
    execlp("python3", "python3", "-c", code.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace hvdrun
