// control_bench: the control planes alone, without the coordinator: the
// time of one Controller::bitwise_and of a response cache's bit vector (the
// steady state of negotiation, one per cycle) on each plane this job can set
// up. Launched like any rank:
//
//   hvdrun -np 2 --gloo build/bench/control_bench [--iters 3000] [--words 17]
//
// Planes: "transport", the transport's own controller (MPI's under --mpi;
// under --gloo the one Gloo mode picks); "shm" and "tcp" (127.0.0.1), when
// every rank is on this host; "gloo", Gloo's own collectives (GlooController
// on a context of its own), under --gloo. Back-to-back calls after 100
// warm-up calls; the time is the largest, over ranks, of each rank's
// average. See bench/README.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/gloo/gloo_context.h"
#include "backend/gloo/gloo_controller.h"
#include "backend/gloo/tcp_controller.h"
#include "backend/shm/shm_controller.h"
#include "registry/transports.h"
#include "settings/settings.h"

namespace {

constexpr int kWarmup = 100;

struct Options {
  int iters = 3000;
  std::size_t words = 17;  // 1024 cache slots and the flags
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::atol(argv[i + 1]);
    if (flag == "--iters" && value > 0) {
      o.iters = static_cast<int>(value);
    } else if (flag == "--words" && value >= 0) {
      o.words = static_cast<std::size_t>(value);
    } else {
      std::fprintf(stderr, "control_bench: bad option %s %s\n", argv[i], argv[i + 1]);
      std::exit(2);
    }
  }
  return o;
}

// The average microseconds of one bitwise_and, the largest over ranks.
double time_bitwise_and(hvd::Controller& plane, hvd::Controller& transport, const Options& o) {
  std::vector<std::uint64_t> words(o.words, ~std::uint64_t{0});
  for (int i = 0; i < kWarmup; ++i) plane.bitwise_and(words);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) plane.bitwise_and(words);
  const double average =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      o.iters;
  const std::vector<std::string> all = transport.gather_to_root(std::to_string(average));
  double largest = average;
  for (const std::string& one : all) largest = std::max(largest, std::atof(one.c_str()));
  return largest;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    std::string name = hvd::settings::read_string(hvd::settings::Setting::kCpuOperations);
    if (name.empty()) name = hvd::available_transports().front();
    hvd::Transport transport = hvd::create_transport(name);
    hvd::Controller& setup = *transport.controller;
    const hvd::Topology& topology = setup.topology();
    std::vector<std::pair<std::string, std::unique_ptr<hvd::Controller>>> planes;
    if (topology.local_size == topology.size) {
      if (auto shm = hvd::maybe_shm_controller(setup, "nothing")) {
        planes.emplace_back("shm", std::move(shm));
      }
      hvd::TcpControllerOptions tcp;
      tcp.address = "127.0.0.1";
      planes.emplace_back("tcp", hvd::TcpController::connect(setup, tcp, "nothing"));
    }
    if (name == "gloo") {
      planes.emplace_back("gloo",
                          std::make_unique<hvd::GlooController>(hvd::GlooContext::create()));
    }
    if (topology.rank == 0) {
      char load[128] = {};
      if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        if (std::fgets(load, sizeof load, f)) load[std::strcspn(load, "\n")] = '\0';
        std::fclose(f);
      }
      std::printf("# control_bench: bitwise_and of %zu words, %d ranks, --%s, %d iters; load %s\n",
                  o.words, topology.size, name.c_str(), o.iters, load);
    }
    const double own = time_bitwise_and(setup, setup, o);
    if (topology.rank == 0) std::printf("  %-10s %10.2f us\n", "transport", own);
    for (auto& [label, plane] : planes) {
      if (!plane) continue;  // could not be set up (rank 0 logged why)
      const double us = time_bitwise_and(*plane, setup, o);
      if (topology.rank == 0) std::printf("  %-10s %10.2f us\n", label.c_str(), us);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "control_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
