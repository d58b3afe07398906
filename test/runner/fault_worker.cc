// fault_worker: a rank for hvdrun's fault and multi-host tests. It loops
// allreduce (Sum) on a small tensor and can fail on purpose:
//
//   fault_worker [--iters N] [--sleep-ms MS] [--count ELEMENTS] [--tensors K]
//                [--exit-rank R --exit-at I [--exit-code C]]
//                [--kill-rank R --kill-at I [--kill-after-ms MS]] [--linger-ms MS]
//                [--busy-rank R --busy-at I --busy-ms MS] [--tag TEXT]
//
// Every rank first prints "fault_worker rank R pid P" (stdout), and rank 0
// "fault_worker step I" every 10 iterations: the fault tests stop or kill
// a rank from outside, as a user would, once the loop runs.
// --count:  elements of the float32 tensor (default 16).
// --half 1: float16 tensors instead (the two-host test counts their bytes).
// --tensors: tensors submitted per iteration, as a training step submits
//           its gradients (default 1).
// --exit-*: rank R exits with code C (default 1) at iteration I.
// --kill-*: rank R raises SIGKILL on itself at iteration I, with a
//           collective of the other ranks in flight: right after submitting
//           it, or MS milliseconds later from another thread (with a large
//           --count, while the data moves). It first prints
//           "... raises SIGKILL at iteration I at T" (T: Unix time, seconds).
// --busy-*: rank R sleeps MS milliseconds in iteration I before submitting,
//           as a rank writing a checkpoint does, while the others wait.
// --linger-ms: after an error, print "... failed at T" (Unix time) and stay
//           alive MS milliseconds before exiting 3, as a process that
//           catches the error and goes on would: peers must not need its exit.
// --tag:    ignored; a unique marker the tests find leftover processes by.
// After init every rank also prints "fault_worker rank R coordinator CPUs L"
// (L: Cpus_allowed_list of its thread named hvd-coordinator).
// On success every rank prints one line:
//   "fault_worker rank R of N host H result X ok netns net:[INODE]"
// (X == N*(N+1)/2; H: HOROVODCPP_HOSTNAME, else gethostname; the network
// namespace tells the two-host test where the rank really ran)
// and exits 0; a wrong result prints "... WRONG" and exits 2.
#include <dirent.h>
#include <horovodcpp/horovodcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

// float16 bits of an integer in 1..2048 (exact), and a normal float16's value.
std::uint16_t half_of_small_int(int v) {
  const int e = 31 - __builtin_clz(static_cast<unsigned>(v));
  return static_cast<std::uint16_t>(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}
float float_of_half(std::uint16_t bits) {
  return std::ldexp(static_cast<float>(1024 + (bits & 0x3ff)), ((bits >> 10) & 0x1f) - 25);
}

struct Flags {
  int iters = 10;
  int sleep_ms = 0;
  int exit_rank = -1, exit_at = 0, exit_code = 1;
  int kill_rank = -1, kill_at = 0, kill_after_ms = 0;
  int count = 16;
  bool half = false;
  int tensors = 1;
  int linger_ms = 0;
  int busy_rank = -1, busy_at = 0, busy_ms = 0;
};

// The CPUs the coordinator thread may run on, as /proc lists them.
std::string coordinator_cpus() {
  DIR* tasks = opendir("/proc/self/task");
  if (!tasks) return "?";
  std::string cpus = "none";
  while (dirent* task = readdir(tasks)) {
    const std::string dir = std::string("/proc/self/task/") + task->d_name;
    std::ifstream comm(dir + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name != "hvd-coordinator") continue;
    std::ifstream status(dir + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0)
        cpus = line.substr(line.find_last_of("\t ") + 1);
    }
  }
  closedir(tasks);
  return cpus;
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Flags parse(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "fault_worker: %s needs a value\n", a.c_str());
      std::exit(64);
    }
    int v = std::atoi(argv[++i]);
    if (a == "--iters")
      f.iters = v;
    else if (a == "--sleep-ms")
      f.sleep_ms = v;
    else if (a == "--exit-rank")
      f.exit_rank = v;
    else if (a == "--exit-at")
      f.exit_at = v;
    else if (a == "--exit-code")
      f.exit_code = v;
    else if (a == "--kill-rank")
      f.kill_rank = v;
    else if (a == "--kill-at")
      f.kill_at = v;
    else if (a == "--kill-after-ms")
      f.kill_after_ms = v;
    else if (a == "--count")
      f.count = v;
    else if (a == "--half")
      f.half = v != 0;
    else if (a == "--linger-ms")
      f.linger_ms = v;
    else if (a == "--tensors")
      f.tensors = std::max(1, v);
    else if (a == "--busy-rank")
      f.busy_rank = v;
    else if (a == "--busy-at")
      f.busy_at = v;
    else if (a == "--busy-ms")
      f.busy_ms = v;
    else if (a == "--tag")
      continue;
    else {
      std::fprintf(stderr, "fault_worker: unknown flag %s\n", a.c_str());
      std::exit(64);
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f = parse(argc, argv);
  int rank = -1;
  try {
    hvd::init();
    rank = hvd::rank();
    const int size = hvd::size();
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const char* listed = std::getenv("HOROVODCPP_HOSTNAME");
    std::string where = listed ? listed : host;
    std::printf("fault_worker rank %d pid %d\n", rank, static_cast<int>(getpid()));
    std::printf("fault_worker rank %d coordinator CPUs %s\n", rank, coordinator_cpus().c_str());
    std::fflush(stdout);
    std::vector<std::vector<float>> tensors(
        static_cast<std::size_t>(f.tensors),
        std::vector<float>(static_cast<std::size_t>(std::max(1, f.count))));
    std::vector<float>& values = tensors[0];
    for (int it = 0; it < f.iters; ++it) {
      if (rank == 0 && it % 10 == 0) {
        std::printf("fault_worker step %d\n", it);
        std::fflush(stdout);
      }
      if (rank == f.busy_rank && it == f.busy_at) {
        std::this_thread::sleep_for(std::chrono::milliseconds(f.busy_ms));
      }
      if (rank == f.exit_rank && it == f.exit_at) {
        std::fprintf(stderr, "fault_worker rank %d exits with code %d at iteration %d\n", rank,
                     f.exit_code, it);
        std::fflush(stderr);
        std::_Exit(f.exit_code);
      }
      std::vector<hvd::Work> works;
      for (std::size_t t = 0; t < tensors.size(); ++t) {
        const std::string name = t == 0 ? "fault.t" : "fault.t" + std::to_string(t);
        if (f.half) {  // float16 in the first half of the float buffer
          auto* bits = reinterpret_cast<std::uint16_t*>(tensors[t].data());
          std::fill(bits, bits + tensors[t].size(), half_of_small_int(rank + 1));
          works.push_back(
              hvd::allreduce_async(hvd::TensorView(bits, hvd::DataType::kFloat16,
                                                   {static_cast<std::int64_t>(tensors[t].size())}),
                                   name, hvd::ReduceOp::kSum));
        } else {
          std::fill(tensors[t].begin(), tensors[t].end(), static_cast<float>(rank + 1));
          works.push_back(hvd::allreduce_async(hvd::view(tensors[t]), name, hvd::ReduceOp::kSum));
        }
      }
      if (rank == f.kill_rank && it == f.kill_at) {
        std::thread([rank, it, delay = f.kill_after_ms] {
          std::this_thread::sleep_for(std::chrono::milliseconds(delay));
          const double now = unix_time();
          std::fprintf(stderr, "fault_worker rank %d raises SIGKILL at iteration %d at %.3f\n",
                       rank, it, now);
          std::fflush(stderr);
          raise(SIGKILL);
        }).detach();
        if (f.kill_after_ms == 0) std::this_thread::sleep_for(std::chrono::hours(1));
      }
      for (hvd::Work& w : works) w.wait();
      const float expected = static_cast<float>(size) * static_cast<float>(size + 1) / 2.0f;
      const auto* bits = reinterpret_cast<const std::uint16_t*>(values.data());
      const float first = f.half ? float_of_half(bits[0]) : values[0];
      const float last = f.half ? float_of_half(bits[values.size() - 1]) : values.back();
      if (first != expected || last != expected) {
        std::printf("fault_worker rank %d of %d host %s result %g WRONG (expected %g)\n", rank,
                    size, where.c_str(), first, expected);
        return 2;
      }
      if (f.sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(f.sleep_ms));
    }
    char netns[64] = {};
    if (readlink("/proc/self/ns/net", netns, sizeof netns - 1) < 0) std::strcpy(netns, "unknown");
    const float result =
        f.half ? float_of_half(*reinterpret_cast<const std::uint16_t*>(values.data())) : values[0];
    std::printf("fault_worker rank %d of %d host %s result %g ok netns %s\n", rank, size,
                where.c_str(), result, netns);
    std::fflush(stdout);
    hvd::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_worker: %s\n", e.what());
    if (f.linger_ms > 0) {
      std::fprintf(stderr, "fault_worker rank %d failed at %.3f\n", rank, unix_time());
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::milliseconds(f.linger_ms));
    }
    return 3;
  }
  return 0;
}
