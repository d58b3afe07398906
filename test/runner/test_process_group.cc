// run_process_group with real child processes (sh, sleep): output relay,
// teardown on failure, SIGKILL after the grace period, grandchildren, and
// hvdrun itself being signalled.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "runner/ranks/process_group.h"

namespace hvdrun {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class ProcessGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hvdrun_pg_XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ChildSpec shell(const std::string& script, const std::string& label, const std::string& file) {
    ChildSpec spec;
    spec.argv = {"sh", "-c", script};
    spec.label = label;
    if (!file.empty()) spec.output_file = dir_ + "/" + file;
    return spec;
  }
  std::string read(const std::string& file) {
    std::ifstream in(dir_ + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // The number printed on the line "<label><stdout>: N" of `file`.
  pid_t pid_in(const std::string& file, const std::string& label) {
    std::istringstream lines(read(file));
    std::string line, prefix = label + "<stdout>: ";
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0)
        return static_cast<pid_t>(std::stol(line.substr(prefix.size())));
    }
    return -1;
  }
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  std::string dir_;
};

// Alive and not a zombie (an orphan may wait for a PID 1 that never reaps).
bool alive(pid_t pid) {
  if (pid <= 0 || kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = content.rfind(')');
  return paren == std::string::npos || content.size() < paren + 3 || content[paren + 2] != 'Z';
}

TEST_F(ProcessGroupTest, AllSucceedAndOutputIsPrefixed) {
  std::vector<ChildSpec> children = {
      shell("echo hello; echo oops >&2; printf 'no newline'", "[0]", "r0.log"),
      shell("echo \"$GREETING from one\"", "[1]", "sub/dir/r1.log"),
  };
  children[1].env["GREETING"] = "hi";
  JobResult result = run_process_group(children, 1.0);
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  EXPECT_EQ(result.failure, "");
  std::string r0 = read("r0.log");
  EXPECT_NE(r0.find("[0]<stdout>: hello\n"), std::string::npos) << r0;
  EXPECT_NE(r0.find("[0]<stderr>: oops\n"), std::string::npos) << r0;
  EXPECT_NE(r0.find("[0]<stdout>: no newline\n"), std::string::npos) << r0;
  EXPECT_EQ(read("sub/dir/r1.log"), "[1]<stdout>: hi from one\n");
}

TEST_F(ProcessGroupTest, StdinTextReachesTheChildThenEndOfFile) {
  std::vector<ChildSpec> children = {
      shell("IFS= read -r line && echo \"got $line\" && cat && echo eof", "[0]", "r0.log"),
      shell("cat; echo empty", "[1]", "r1.log")};
  children[0].stdin_text = "the secret\n";
  JobResult result = run_process_group(children, 1.0);
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  EXPECT_EQ(read("r0.log"), "[0]<stdout>: got the secret\n[0]<stdout>: eof\n");
  EXPECT_EQ(read("r1.log"), "[1]<stdout>: empty\n");  // /dev/null by default
}

TEST_F(ProcessGroupTest, RelaysToHvdrunStdoutAndUnlabelledAsIs) {
  std::string captured = dir_ + "/stdout.txt";
  fflush(stdout);
  int saved = dup(1);
  int fd = open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  dup2(fd, 1);
  close(fd);
  JobResult result =
      run_process_group({shell("echo one; echo two", "[3]", ""), shell("echo raw", "", "")}, 1.0);
  dup2(saved, 1);
  close(saved);
  EXPECT_EQ(result.exit_code, 0);
  std::string out = read("stdout.txt");
  EXPECT_NE(out.find("[3]<stdout>: one\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[3]<stdout>: two\n"), std::string::npos) << out;
  EXPECT_LT(out.find("[3]<stdout>: one\n"), out.find("[3]<stdout>: two\n")) << out;
  EXPECT_NE(out.find("raw\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("<stdout>: raw"), std::string::npos) << out;
}

TEST_F(ProcessGroupTest, FailureTearsDownTheOthers) {
  auto start = Clock::now();
  std::vector<ChildSpec> children = {
      shell("sleep 0.3; exit 3", "[0]", "r0.log"),
      shell("echo $$; exec sleep 100", "[1]", "r1.log"),
  };
  children[0].env["HOROVODCPP_RANK"] = "0";
  children[0].env["HOROVODCPP_HOSTNAME"] = "h0";
  JobResult result = run_process_group(children, 2.0);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.failure, "rank 0 (host h0) exited with code 3");
  pid_t sleeper = pid_in("r1.log", "[1]");
  ASSERT_GT(sleeper, 0) << read("r1.log");
  EXPECT_FALSE(alive(sleeper));
}

TEST_F(ProcessGroupTest, ChildIgnoringTermIsKilledAfterGrace) {
  auto start = Clock::now();
  JobResult result = run_process_group({shell("trap '' TERM; echo $$; sleep 100", "[0]", "r0.log"),
                                        shell("sleep 0.5; exit 1", "[1]", "r1.log")},
                                       1.0);
  double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 1.4);  // 0.5 s until the failure, then the whole grace
  EXPECT_LT(elapsed, 5.0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.failure, "rank 1 ([1]) exited with code 1");
  pid_t stubborn = pid_in("r0.log", "[0]");
  ASSERT_GT(stubborn, 0) << read("r0.log");
  EXPECT_FALSE(alive(stubborn));
}

TEST_F(ProcessGroupTest, GrandchildrenAreKilledToo) {
  JobResult result = run_process_group(
      {shell("sleep 100 & echo $!; wait", "[0]", "r0.log"), shell("sleep 0.5; exit 2", "[1]", "")},
      1.0);
  EXPECT_EQ(result.exit_code, 2);
  pid_t grandchild = pid_in("r0.log", "[0]");
  ASSERT_GT(grandchild, 0) << read("r0.log");
  EXPECT_FALSE(alive(grandchild));
}

// Like MPI ranks under mpirun: a descendant in a process group of its own.
// When its parent dies it is reparented to hvdrun (subreaper) and killed.
TEST_F(ProcessGroupTest, DescendantInItsOwnGroupIsKilled) {
  auto start = Clock::now();
  JobResult result =
      run_process_group({shell("setsid sleep 100 & echo $!; exec sleep 100", "[0]", "r0.log"),
                         shell("sleep 0.5; exit 4", "[1]", "")},
                        1.0);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 4);
  pid_t escaped = pid_in("r0.log", "[0]");
  ASSERT_GT(escaped, 0) << read("r0.log");
  EXPECT_FALSE(alive(escaped));
}

TEST_F(ProcessGroupTest, LeftoverGrandchildOfASuccessfulChildIsStopped) {
  auto start = Clock::now();
  JobResult result = run_process_group({shell("sleep 100 & echo $!", "[0]", "r0.log")}, 1.0);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  EXPECT_FALSE(alive(pid_in("r0.log", "[0]")));
}

TEST_F(ProcessGroupTest, KilledBySignalIsReported) {
  JobResult result =
      run_process_group({shell("kill -9 $$", "[0]", ""), shell("exec sleep 100", "[1]", "")}, 1.0);
  EXPECT_EQ(result.exit_code, 128 + 9);
  EXPECT_EQ(result.failure, "rank 0 ([0]) was killed by signal 9 (SIGKILL)");
}

TEST_F(ProcessGroupTest, MissingProgramFailsWith127) {
  ChildSpec spec;
  spec.argv = {"/nonexistent/hvdrun-test-program"};
  spec.label = "[0]";
  spec.output_file = dir_ + "/r0.log";
  JobResult result = run_process_group({spec}, 1.0);
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_NE(read("r0.log").find("[0]<stderr>: hvdrun: cannot execute"), std::string::npos);
}

// A stopped process (SIGSTOP, a job scheduler's suspend) handles its TERM
// only once continued: the teardown continues it, so it ends at once and
// cleanly, not after the grace period by SIGKILL.
TEST_F(ProcessGroupTest, StoppedChildGetsItsTermAtOnce) {
  auto start = Clock::now();
  JobResult result = run_process_group(
      {shell("trap 'echo got TERM; exit 0' TERM; kill -STOP $$; sleep 100 & wait", "[0]", "r0.log"),
       shell("sleep 0.5; exit 1", "[1]", "")},
      10.0);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(read("r0.log").find("[0]<stdout>: got TERM"), std::string::npos) << read("r0.log");
}

// A failure a rank reports (JobWatch::reported_failure) ends the job like a
// failed child; every line of output reaches JobWatch::on_line;
// signal_remote gets TERM, then KILL.
TEST_F(ProcessGroupTest, ReportedFailureEndsTheJob) {
  const auto start = Clock::now();
  JobWatch watch;
  watch.reported_failure = [start] {
    return seconds_since(start) > 0.5 ? ReportedFailure{"rank 1 stopped answering", {1}}
                                      : ReportedFailure{};
  };
  std::vector<std::string> lines;
  watch.on_line = [&lines](const std::string& line) { lines.push_back(line); };
  std::vector<int> remote_signals;
  watch.signal_remote = [&remote_signals](int sig) { remote_signals.push_back(sig); };
  JobResult result = run_process_group(
      {shell("echo a; echo b; trap '' TERM; exec sleep 100", "[0]", "r0.log")}, 0.5, watch);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.failure, "rank 1 stopped answering");
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(remote_signals, (std::vector<int>{SIGTERM, SIGKILL}));
}

// The survivors may report before hvdrun sees the blamed rank's own exit
// (it ran on another host): that exit, within the failure grace, is the
// job's failure; an exit of a rank nobody blamed is not.
TEST_F(ProcessGroupTest, BlamedRanksOwnExitIsTheCause) {
  const auto start = Clock::now();
  JobWatch watch;
  watch.failure_grace = 10;
  watch.reported_failure = [start] {
    return seconds_since(start) > 0.2
               ? ReportedFailure{"rank 2 stopped answering (rank 0: it closed)", {2}}
               : ReportedFailure{};
  };
  JobResult result = run_process_group(
      {shell("sleep 0.8; exit 1", "[0]", ""), shell("sleep 1.0; exit 5", "[1]", ""),
       shell("sleep 1.2; exit 7", "[2]", "")},
      1.0, watch);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(result.failure, "rank 2 ([2]) exited with code 7");
}

// After the first failure the others may end by themselves within the
// failure grace (each saying what it saw) before they are signalled.
TEST_F(ProcessGroupTest, OthersGetTheFailureGraceToEndByThemselves) {
  JobWatch watch;
  watch.failure_grace = 10;
  auto start = Clock::now();
  JobResult result = run_process_group(
      {shell("sleep 0.3; exit 3", "[0]", ""),
       shell("trap 'echo too late' TERM; sleep 1; echo saw it; exit 4", "[1]", "r1.log")},
      1.0, watch);
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.failure, "rank 0 ([0]) exited with code 3");
  EXPECT_EQ(read("r1.log"), "[1]<stdout>: saw it\n");
}

// The grace ends a second after every rank is accounted for by a report.
TEST_F(ProcessGroupTest, FailureGraceEndsOnceEveryRankIsAccountedFor) {
  JobWatch watch;
  watch.failure_grace = 30;
  watch.all_accounted = [] { return true; };
  auto start = Clock::now();
  JobResult result = run_process_group(
      {shell("sleep 0.3; exit 3", "[0]", ""), shell("echo $$; exec sleep 100", "[1]", "r1.log")},
      1.0, watch);
  const double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 1.2);
  EXPECT_LT(elapsed, 5.0);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_FALSE(alive(pid_in("r1.log", "[1]")));
}

TEST_F(ProcessGroupTest, HvdrunSignalledStopsEveryChild) {
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    kill(getpid(), SIGTERM);
  });
  auto start = Clock::now();
  JobResult result = run_process_group({shell("echo $$; exec sleep 100", "[0]", "r0.log"),
                                        shell("echo $$; exec sleep 100", "[1]", "r1.log")},
                                       1.0);
  signaller.join();
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_EQ(result.exit_code, 128 + SIGTERM);
  EXPECT_NE(result.failure.find("SIGTERM"), std::string::npos) << result.failure;
  EXPECT_FALSE(alive(pid_in("r0.log", "[0]")));
  EXPECT_FALSE(alive(pid_in("r1.log", "[1]")));
  // The handlers are restored: hvdrun's own SIGTERM disposition is back.
  struct sigaction now {};
  sigaction(SIGTERM, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

// GroupControl (an elastic job's driver): it starts children as it goes,
// decides what their exits mean, stops them, and may fail the job.
TEST_F(ProcessGroupTest, ControlStartsAndStopsChildrenAndJudgesExits) {
  std::vector<int> statuses;
  GroupControl control;
  control.on_exit = [&](std::size_t, int status) {
    statuses.push_back(status);
    return true;  // not a job failure: the driver's business
  };
  int phase = 0;
  control.poll = [&] {
    GroupOrders orders;
    orders.more_to_come = statuses.size() < 2;  // also while no child runs
    if (phase == 0) {
      orders.start.push_back(shell("echo first; exit 3", "[0]", "r0.log"));
      phase = 1;
    } else if (phase == 1 && statuses.size() == 1) {
      orders.start.push_back(shell("echo $$; exec sleep 100", "[1]", "r1.log"));
      phase = 2;
    } else if (phase == 2 && !read("r1.log").empty()) {
      orders.stop.push_back(1);
      phase = 3;
    }
    return orders;
  };
  auto start = Clock::now();
  JobResult result = run_process_group({}, 1.0, JobWatch{}, &control);
  EXPECT_EQ(result.exit_code, 0) << result.failure;
  ASSERT_EQ(statuses.size(), 2u);
  EXPECT_TRUE(WIFEXITED(statuses[0]) && WEXITSTATUS(statuses[0]) == 3);
  EXPECT_TRUE(WIFSIGNALED(statuses[1]) && WTERMSIG(statuses[1]) == SIGTERM);
  EXPECT_FALSE(alive(pid_in("r1.log", "[1]")));
  EXPECT_LT(seconds_since(start), 10.0);
}

TEST_F(ProcessGroupTest, ControlFailsTheJob) {
  GroupControl control;
  control.on_exit = [](std::size_t, int) { return true; };
  bool started = false;
  control.poll = [&] {
    GroupOrders orders;
    orders.more_to_come = true;
    if (!started) {
      orders.start.push_back(shell("echo $$; exec sleep 100", "[0]", "r0.log"));
      started = true;
    } else if (!read("r0.log").empty()) {
      orders.failure = "not enough slots";
    }
    return orders;
  };
  JobResult result = run_process_group({}, 1.0, JobWatch{}, &control);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.failure, "not enough slots");
  EXPECT_FALSE(alive(pid_in("r0.log", "[0]")));
}

}  // namespace
}  // namespace hvdrun
