// backend_bench: one transport's Backend::allreduce alone, without the
// coordinator (no queue, no negotiation cycle): the data path that
// allreduce_bench measures through the whole API. Launched like any rank:
//
//   hvdrun -np 2 --mpi build/bench/backend_bench                 # shm (all ranks on this host)
//   HOROVODCPP_SHM=0 hvdrun -np 2 --mpi build/bench/backend_bench   # the MPI backend itself
//          [--sizes 4,64K,1M,16M,64M] [--warmup 5] [--iters 20]
//
// float32, Sum, in place. Every iteration starts after a 4-byte allreduce
// on the same backend (the barrier); the time is the largest, over ranks, of
// each rank's average. Output rows as allreduce_bench's peers (nccl-tests
// definitions): algbw = bytes / time, busbw = algbw * 2(n-1)/n.
// See bench/README.md.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "parse_bytes.h"
#include "registry/transports.h"

namespace {

constexpr std::size_t kAutoIterBudgetBytes = std::size_t{256} << 20;  // as allreduce_bench
constexpr int kMinAutoIters = 5;

struct Options {
  std::vector<std::size_t> sizes = {4, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
  int warmup = 5;
  int iters = 20;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--warmup") {
      o.warmup = std::atoi(value.c_str());
    } else if (flag == "--iters") {
      o.iters = std::atoi(value.c_str());
    } else if (flag == "--sizes") {
      o.sizes.clear();
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t end = std::min(value.find(',', start), value.size());
        std::size_t bytes = 0;
        if (!parse_bytes(value.substr(start, end - start), &bytes)) {
          std::fprintf(stderr, "backend_bench: bad size in --sizes %s\n", value.c_str());
          std::exit(2);
        }
        o.sizes.push_back(bytes);
        start = end + 1;
      }
    } else {
      std::fprintf(stderr, "backend_bench: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  return o;
}

std::string chosen_transport() {
  for (const char* name : {"HOROVODCPP_CPU_OPERATIONS", "HOROVOD_CPU_OPERATIONS"}) {
    if (const char* value = std::getenv(name)) return value;
  }
  return hvd::available_transports().front();
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    hvd::Transport transport = hvd::create_transport(chosen_transport());
    hvd::Backend& backend = *transport.backend;
    const hvd::Topology& topology = transport.controller->topology();
    const int n = topology.size;
    const bool root = topology.rank == 0;
    if (root) {
      std::printf(
          "# backend_bench: Backend::allreduce alone (no coordinator), backend %s, %d ranks\n",
          backend.name(), n);
      char load[128] = {};
      if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fgets(load, sizeof load, f)) load[std::strcspn(load, "\n")] = '\0';
        std::fclose(f);
      }
      std::printf("# load average: %s; dtype float32, op sum, warmup %d, iters %d\n", load,
                  o.warmup, o.iters);
      std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s\n", "size", "count", "type", "redop",
                  "iters", "time", "algbw", "busbw", "#wrong");
      std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
                  "(us)", "(GB/s)", "(GB/s)", "");
    }
    for (std::size_t size : o.sizes) {
      const std::size_t count = std::max<std::size_t>(1, size / sizeof(float));
      const std::size_t bytes = count * sizeof(float);
      int iters = o.iters, warmup = o.warmup;
      if (bytes * iters > kAutoIterBudgetBytes) {
        iters = std::max<int>(kMinAutoIters, static_cast<int>(kAutoIterBudgetBytes / bytes));
        warmup = std::min(warmup, 2);
      }
      std::vector<float> data(count, 1.0f);
      float token = 0;
      double total = 0;
      for (int i = 0; i < warmup + iters; ++i) {
        backend.allreduce(&token, 1, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);  // barrier
        const auto start = std::chrono::steady_clock::now();
        backend.allreduce(data.data(), count, hvd::DataType::kFloat32, hvd::ReduceOp::kSum);
        const auto end = std::chrono::steady_clock::now();
        if (i >= warmup) total += std::chrono::duration<double, std::micro>(end - start).count();
      }
      double average = total / iters;
      backend.allreduce(&average, 1, hvd::DataType::kFloat64, hvd::ReduceOp::kMax);
      const double algbw = static_cast<double>(bytes) / average / 1e3;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      if (root) {
        std::printf("  %10zu %11zu %8s %7s %5d  %9.2f %7.3f %7.3f %6s\n", bytes, count, "float32",
                    "Sum", iters, average, algbw, busbw, "N/A");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "backend_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
