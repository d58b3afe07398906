// gloo_allreduce_bench: raw Gloo ring allreduce, the peer of horovodcpp's
// Gloo backend. No horovodcpp, no MPI: N processes meet through a
// gloo::rendezvous::FileStore in a directory given on the command line and
// connect a full mesh of TCP pairs on 127.0.0.1 (or --host).
//
//   for r in 0 1; do RANK=$r SIZE=2 build/bench/gloo_allreduce_bench --store /tmp/s & done; wait
//   build/bench/gloo_allreduce_bench --rank 0 --size 2 --store /tmp/s ...
//
// For each size: float32, Sum, in place, gloo::allreduce with
// Algorithm::RING. Every iteration starts after a gloo::barrier; the time is
// the largest, over ranks, of each rank's average (a Gloo allreduce of the
// averages, Max). Output follows allreduce_bench's columns (nccl-tests
// definitions): algbw = bytes / time, busbw = algbw * 2(n-1)/n.
// See bench/README.md.

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "parse_bytes.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kAutoIterBudgetBytes = 256 * kMiB;  // as allreduce_bench
constexpr int kMinAutoIters = 5;

struct Options {
  int rank = -1;
  int size = -1;
  std::string store;
  std::string prefix = "gloo_allreduce_bench";
  std::string host = "127.0.0.1";
  std::vector<std::size_t> sizes;
  int warmup = 5;
  int iters = 20;
  bool auto_iters = true;
  bool check = false;
};

[[noreturn]] void usage(const std::string& message, int code = 2) {
  std::fprintf(stderr,
               "gloo_allreduce_bench: %s\n"
               "usage: gloo_allreduce_bench --store DIR [--rank R --size N] [--prefix P]\n"
               "         [--host 127.0.0.1] [--sizes 4,64K,1M,16M,64M] [--warmup 5]\n"
               "         [--iters 20] [--auto-iters on|off] [--check]\n"
               "rank and size default to $RANK and $SIZE (or $WORLD_SIZE)\n",
               message.c_str());
  std::exit(code);
}

int parse_int(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1000000) {
    usage("bad value '" + text + "' for " + what);
  }
  return static_cast<int>(value);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--check") {
      o.check = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") usage("raw Gloo ring allreduce benchmark", 0);
    if (i + 1 >= argc) usage("missing value for " + arg);
    const std::string value = argv[++i];
    if (arg == "--rank")
      o.rank = parse_int(value, arg);
    else if (arg == "--size")
      o.size = parse_int(value, arg);
    else if (arg == "--store")
      o.store = value;
    else if (arg == "--prefix")
      o.prefix = value;
    else if (arg == "--host")
      o.host = value;
    else if (arg == "--warmup")
      o.warmup = parse_int(value, arg);
    else if (arg == "--iters")
      o.iters = std::max(1, parse_int(value, arg));
    else if (arg == "--auto-iters")
      o.auto_iters = value != "off";
    else if (arg == "--sizes") {
      std::size_t start = 0;
      while (start <= value.size()) {
        std::size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        std::size_t bytes = 0;
        if (!parse_bytes(value.substr(start, comma - start), &bytes)) {
          usage("bad value '" + value + "' for --sizes");
        }
        o.sizes.push_back(bytes);
        start = comma + 1;
      }
    } else {
      usage("unknown option " + arg);
    }
  }
  auto env_int = [](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (const char* v = std::getenv(name)) return std::atoi(v);
    }
    return -1;
  };
  if (o.rank < 0) o.rank = env_int({"RANK"});
  if (o.size < 0) o.size = env_int({"SIZE", "WORLD_SIZE"});
  if (o.rank < 0 || o.size < 1 || o.rank >= o.size) usage("need --rank/--size (or RANK/SIZE)");
  if (o.store.empty()) usage("need --store DIR (a directory every rank can write)");
  if (o.sizes.empty()) o.sizes = {4, 64 * 1024, kMiB, 16 * kMiB, 64 * kMiB};
  return o;
}

using ReduceFn = void (*)(void*, const void*, const void*, std::size_t);

template <typename T>
void allreduce(const std::shared_ptr<gloo::Context>& context, T* data, std::size_t count,
               ReduceFn fn) {
  gloo::AllreduceOptions opts(context);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(data, count);
  opts.setReduceFunction(fn);
  gloo::allreduce(opts);
}

void barrier(const std::shared_ptr<gloo::Context>& context) {
  gloo::BarrierOptions opts(context);
  gloo::barrier(opts);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = o.host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore file_store(o.store);
    gloo::rendezvous::PrefixStore store(o.prefix, file_store);
    auto context = std::make_shared<gloo::rendezvous::Context>(o.rank, o.size);
    context->setTimeout(std::chrono::seconds(120));
    context->connectFullMesh(store, device);
    const int n = o.size;
    const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;

    if (o.rank == 0) {
      char host[256] = "?";
      gethostname(host, sizeof(host) - 1);
      std::printf("# raw Gloo allreduce benchmark (gloo::allreduce, Algorithm::RING, tcp)\n");
      std::string command;
      for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
      std::printf("# command: %s\n", command.c_str());
      std::printf("# ranks: %d, rank 0 on %s, %u hardware threads there\n", n, host,
                  std::thread::hardware_concurrency());
      if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
        char load[128] = "";
        if (std::fgets(load, sizeof(load), f)) {
          load[std::strcspn(load, "\n")] = '\0';
          std::printf("# load average on rank 0's host (1, 5, 15 min, ...): %s\n", load);
        }
        std::fclose(f);
      }
      std::printf("# dtype float32, op sum, warmup %d, iters %d, auto-iters %s, check %s\n",
                  o.warmup, o.iters, o.auto_iters ? "on" : "off", o.check ? "on" : "off");
      std::printf(
          "# time: max over ranks of the per-rank average; each iteration after "
          "gloo::barrier\n");
      std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s\n", "size", "count", "type", "redop",
                  "iters", "time", "algbw", "busbw", "#wrong");
      std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "",
                  "(us)", "(GB/s)", "(GB/s)", "");
      std::fflush(stdout);
    }

    std::size_t largest = 0;
    for (std::size_t b : o.sizes) largest = std::max(largest, b);
    std::vector<float> buffer(std::max<std::size_t>(1, largest / sizeof(float)));
    long long wrong_total = 0;
    for (const std::size_t requested : o.sizes) {
      const std::size_t count = std::max<std::size_t>(1, requested / sizeof(float));
      const std::size_t bytes = count * sizeof(float);
      int iters = o.iters, warmup = o.warmup;
      if (o.auto_iters) {
        const int budget =
            static_cast<int>(std::max<std::size_t>(kMinAutoIters, kAutoIterBudgetBytes / bytes));
        if (budget < iters) {
          iters = budget;
          warmup = std::min(warmup, 2);
        }
      }
      float* data = buffer.data();
      auto fill = [&] {
        for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>((o.rank + 1) + i % 5);
      };
      std::string wrong_text = "N/A";
      if (o.check) {
        fill();
        allreduce(context, data, count, &gloo::sum<float>);
        double wrong = 0;
        for (std::size_t i = 0; i < count; ++i) {
          const float want = static_cast<float>(n * (n + 1) / 2.0 + n * static_cast<double>(i % 5));
          if (data[i] != want) {
            if (wrong == 0) {
              std::fprintf(stderr, "rank %d: element %zu is %g, expected %g\n", o.rank, i, data[i],
                           want);
            }
            ++wrong;
          }
        }
        allreduce(context, &wrong, 1, &gloo::sum<double>);
        wrong_total += static_cast<long long>(wrong);
        wrong_text = std::to_string(static_cast<long long>(wrong));
      }
      fill();
      double total = 0;
      for (int it = 0; it < warmup + iters; ++it) {
        barrier(context);
        const auto start = std::chrono::steady_clock::now();
        allreduce(context, data, count, &gloo::sum<float>);
        const auto stop = std::chrono::steady_clock::now();
        if (it >= warmup) total += std::chrono::duration<double>(stop - start).count();
      }
      double seconds = total / iters;
      allreduce(context, &seconds, 1, &gloo::max<double>);
      if (o.rank == 0) {
        const double algbw = bytes / seconds / 1e9;
        std::printf("  %10zu %11zu %8s %7s %5d  %9.2f %7.3f %7.3f %6s\n", bytes, count, "float32",
                    "sum", iters, seconds * 1e6, algbw, algbw * bus_factor, wrong_text.c_str());
        std::fflush(stdout);
      }
    }
    if (o.rank == 0 && o.check) {
      std::printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    }
    barrier(context);
    return wrong_total ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: gloo_allreduce_bench failed: %s\n", o.rank, e.what());
    return 1;
  }
}
