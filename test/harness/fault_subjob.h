// Fault sub-jobs for the transport suites: a few processes of the test
// binary itself, started as the ranks of a Gloo job on this host (meeting in
// a file store), one of which dies or hangs on purpose. The suite's main
// recognises its child flag and runs the scenario (play_victim,
// play_survivor); the parent checks how the survivors exited.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "horovodcpp/errors.h"

extern char** environ;

namespace hvd {
namespace fault_subjob {

// This binary's path, to start the sub-jobs' ranks from (argv0 if unknown).
inline std::string self_path(const char* argv0) {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  return length > 0 ? std::string(self, static_cast<std::size_t>(length)) : argv0;
}

// A fresh directory /tmp/<prefix>.XXXXXX for a sub-job's store ("" if it
// cannot be made); remove_temp_directories() removes them all.
inline std::vector<std::string>& temp_directories() {
  static std::vector<std::string> directories;
  return directories;
}
inline std::string temp_directory(const std::string& prefix) {
  std::string pattern = "/tmp/" + prefix + ".XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return "";
  temp_directories().push_back(pattern);
  return pattern;
}
inline void remove_temp_directories() {
  for (const std::string& directory : temp_directories()) {
    std::error_code ignored;
    std::filesystem::remove_all(directory, ignored);
  }
  temp_directories().clear();
}

// Starts rank `rank` of a `ranks`-rank job: `self` with `args`, our
// environment minus HOROVODCPP_*/HOROVOD_* (the sub-job's job description
// replaces ours), plus HOROVODCPP_RANK ... _CROSS_SIZE, _GLOO_FILE_STORE and
// `settings` (names without the HOROVODCPP_ prefix). Returns the pid.
inline pid_t spawn_rank(const std::string& self, const std::vector<std::string>& args, int rank,
                        int ranks, const std::string& store,
                        const std::vector<std::pair<std::string, std::string>>& settings) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (entry.rfind("HOROVODCPP_", 0) == 0 || entry.rfind("HOROVOD_", 0) == 0) continue;
    env_strings.push_back(entry);
  }
  std::vector<std::pair<std::string, std::string>> all = {{"RANK", std::to_string(rank)},
                                                          {"SIZE", std::to_string(ranks)},
                                                          {"LOCAL_RANK", std::to_string(rank)},
                                                          {"LOCAL_SIZE", std::to_string(ranks)},
                                                          {"CROSS_RANK", "0"},
                                                          {"CROSS_SIZE", "1"},
                                                          {"GLOO_FILE_STORE", store}};
  all.insert(all.end(), settings.begin(), settings.end());
  for (const auto& [name, value] : all) env_strings.push_back("HOROVODCPP_" + name + "=" + value);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {self};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    execve(self.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

// Waits up to `limit` for the first `survivors` pids to exit, then kills and
// reaps whatever is left (the victim, hung survivors). Returns the
// survivors' wait statuses; empty where one hung.
inline std::vector<std::optional<int>> reap(const std::vector<pid_t>& pids, int survivors,
                                            std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<std::optional<int>> status(pids.size());
  for (int r = 0; r < survivors; ++r) {
    int raw = 0;
    while (waitpid(pids[r], &raw, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    status[r] = raw;
  }
  for (std::size_t r = 0; r < pids.size(); ++r) {
    if (static_cast<int>(r) < survivors && status[r]) continue;
    kill(pids[r], SIGKILL);
    waitpid(pids[r], nullptr, 0);
  }
  status.resize(survivors);
  return status;
}

// A survivor's status is a normal exit with `expected`; `codes` explains
// the other exit codes in the failure message.
inline ::testing::AssertionResult exited_with(const std::optional<int>& status, int expected,
                                              const std::string& codes) {
  if (!status) return ::testing::AssertionFailure() << "hung";
  if (!WIFEXITED(*status)) {
    return ::testing::AssertionFailure()
           << "crashed with signal " << (WIFSIGNALED(*status) ? WTERMSIG(*status) : 0);
  }
  if (WEXITSTATUS(*status) != expected) {
    return ::testing::AssertionFailure() << "exit code " << WEXITSTATUS(*status) << " " << codes;
  }
  return ::testing::AssertionSuccess();
}

// ---- The scenario every rank of a sub-job plays: the victim dies or hangs
// ("kill_before", "kill_mid", "hang"), the survivors must throw RankFailure
// naming it within kSurvivorLimitSeconds. A survivor's exit code says how
// it went (kExitCodes explains them for exited_with).

constexpr double kSurvivorLimitSeconds = 10.0;
constexpr int kGotError = 0, kNoError = 3, kTooLate = 4, kWrongError = 5, kSetupFailed = 6,
              kNotNamed = 7;
constexpr const char* kExitCodes =
    "(3: no error, 4: too late, 5: not a RankFailure, 6: setup failed, 7: the message does not "
    "name the victim)";

// The victim: "hang" sleeps until the parent kills it, "kill_mid" dies from
// another thread 30 ms into a loop of `collective`, "kill_before" at once.
template <typename Collective>
[[noreturn]] void play_victim(const std::string& how, Collective&& collective) {
  if (how == "hang") {
    std::this_thread::sleep_for(std::chrono::minutes(10));
  } else if (how == "kill_mid") {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      raise(SIGKILL);
    }).detach();
    for (;;) collective();
  }
  raise(SIGKILL);
  std::_Exit(kNoError);  // not reached
}

// A survivor: runs `collective` once ("kill_mid": until it throws) and
// exits with kGotError if it threw a RankFailure naming rank `victim` in
// time. `tag` starts its lines on stderr.
template <typename Collective>
[[noreturn]] void play_survivor(const char* tag, int rank, int victim, const std::string& how,
                                Collective&& collective) {
  for (;;) {
    const auto start = std::chrono::steady_clock::now();
    try {
      collective();
    } catch (const RankFailure& e) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "[%s rank %d] RankFailure after %.2f s: %s\n", tag, rank, seconds,
                   e.what());
      std::fflush(stderr);
      if (std::string(e.what()).find("rank " + std::to_string(victim)) == std::string::npos) {
        std::_Exit(kNotNamed);
      }
      std::_Exit(seconds < kSurvivorLimitSeconds ? kGotError : kTooLate);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "[%s rank %d] not a RankFailure: %s\n", tag, rank, e.what());
      std::_Exit(kWrongError);
    }
    if (how != "kill_mid") break;  // kill_mid: until the victim's death shows
  }
  std::fprintf(stderr, "[%s rank %d] the collective succeeded\n", tag, rank);
  std::_Exit(kNoError);
}

}  // namespace fault_subjob
}  // namespace hvd
