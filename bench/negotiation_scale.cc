// negotiation_scale: the control plane at N simulated ranks, each rank a
// real Coordinator (negotiation, response cache, rank 0's message table,
// fusion planning) in a thread of this process, with a backend that moves
// no data. The ranks negotiate over an in-process plane ("memory": the
// negotiation code alone, every collective a rendezvous of the threads),
// Gloo mode's TCP tree on loopback ("tcp") or the shared-memory plane of
// ranks on one host ("shm"), each set up over the in-process plane. Each step, every rank's
// training thread submits the 161 gradients of a ResNet-50 (one element each: negotiation depends
// on their number and names, not their size) in backward order, `--gap-us` apart, then waits for
// all of them.
//
//   negotiation_scale [--ranks 2,8,64,256,1024] [--plane memory|tcp|shm]
//                     [--steps 4] [--gap-us 200] [--cycle-ms 1]
//
// Per N, for the first step (nothing cached) and the steady state (the
// median of the later steps): the step's wall time; the tail (the slowest
// rank, from its last submission to the end of its step); rank 0's own
// work per step in ms (between receiving the ranks' requests and
// broadcasting the responses: parsing, the message table, serializing);
// full rounds (gathers to rank 0), collectives and bytes each rank hands
// to the plane per step (means over ranks, and rank 0's bytes); the
// resident memory the ranks added by the end (threads, queues, caches and
// rank 0's table), per rank. All ranks share this machine's cores, so wall
// times measure the simulation, not a cluster.
// Exits 1 if a step's gradients are not all done within 5 minutes, or a
// step after the first takes a full round (the cache should serve it all).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/gloo/tcp_controller.h"
#include "backend/shm/shm_controller.h"
#include "base/descriptor_limit.h"
#include "core/execution/backend.h"
#include "core/runtime/coordinator.h"
#include "horovodcpp/work.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kGradients = 161;  // torchvision's ResNet-50: 53 conv + 53x2 bn + fc weight, bias

struct Options {
  std::vector<int> ranks = {2, 8, 64, 256, 1024};
  std::string plane = "memory";
  int steps = 4;
  int gap_us = 200;
  int cycle_ms = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--ranks") {
      o.ranks.clear();
      std::stringstream list(value);
      for (std::string n; std::getline(list, n, ',');) o.ranks.push_back(std::atoi(n.c_str()));
    } else if (flag == "--plane" && (value == "memory" || value == "tcp" || value == "shm")) {
      o.plane = value;
    } else if (flag == "--steps" && std::atoi(value.c_str()) >= 2) {
      o.steps = std::atoi(value.c_str());
    } else if (flag == "--gap-us") {
      o.gap_us = std::atoi(value.c_str());
    } else if (flag == "--cycle-ms") {
      o.cycle_ms = std::atoi(value.c_str());
    } else {
      std::fprintf(stderr, "negotiation_scale: bad option %s %s\n", argv[i], value.c_str());
      std::exit(2);
    }
  }
  return o;
}

// The rendezvous of N threads: each collective waits for every rank.
class MemoryPlane {
 public:
  explicit MemoryPlane(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}

  std::vector<std::string> gather(int rank, const std::string& message) {
    slots_[static_cast<std::size_t>(rank)] = message;
    arrive();
    std::vector<std::string> all;
    if (rank == 0) all = slots_;
    arrive();  // slots free for the next collective
    return all;
  }
  std::string broadcast(int rank, const std::string& message) {
    if (rank == 0) root_message_ = message;
    arrive();
    std::string out = root_message_;
    arrive();
    return out;
  }
  void bitwise_and(std::vector<std::uint64_t>& words) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (and_count_++ == 0) {
        and_ = words;
      } else {
        for (std::size_t i = 0; i < words.size() && i < and_.size(); ++i) and_[i] &= words[i];
      }
    }
    arrive();
    words = and_;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      and_count_ = 0;
    }
    arrive();
  }

 private:
  void arrive() {
    std::unique_lock<std::mutex> lock(mutex_);
    const long generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      all_in_.notify_all();
    } else {
      all_in_.wait(lock, [&] { return generation_ != generation; });
    }
  }

  int size_;
  std::mutex mutex_;
  std::condition_variable all_in_;
  int arrived_ = 0;
  long generation_ = 0;
  std::vector<std::string> slots_;
  std::string root_message_;
  std::vector<std::uint64_t> and_;
  int and_count_ = 0;
};

class MemoryController : public hvd::Controller {
 public:
  MemoryController(MemoryPlane& plane, int rank, int size) : plane_(plane) {
    topology_.rank = rank;
    topology_.size = size;
    topology_.local_rank = rank;
    topology_.local_size = size;
  }
  const hvd::Topology& topology() const override { return topology_; }
  std::vector<std::string> gather_to_root(const std::string& m) override {
    return plane_.gather(topology_.rank, m);
  }
  std::string broadcast_from_root(const std::string& m) override {
    return plane_.broadcast(topology_.rank, m);
  }
  void bitwise_and(std::vector<std::uint64_t>& words) override { plane_.bitwise_and(words); }

 private:
  MemoryPlane& plane_;
  hvd::Topology topology_;
};

// What a rank hands to its plane, and rank 0's own work between the
// requests' arrival and the responses' broadcast.
struct Counts {
  long full_rounds = 0;  // gathers: the requests went to rank 0
  long collectives = 0;
  long bytes = 0;
  long root_work_ns = 0;
};

struct Traffic {
  std::atomic<long> full_rounds{0};
  std::atomic<long> collectives{0};
  std::atomic<long> bytes{0};
  std::atomic<long> root_work_ns{0};

  Counts counts() const { return {full_rounds, collectives, bytes, root_work_ns}; }
};

class CountingController : public hvd::Controller {
 public:
  CountingController(hvd::Controller& inner, Traffic& traffic) : inner_(inner), traffic_(traffic) {}
  const hvd::Topology& topology() const override { return inner_.topology(); }
  std::vector<std::string> gather_to_root(const std::string& m) override {
    ++traffic_.full_rounds;
    count(m.size());
    std::vector<std::string> all = inner_.gather_to_root(m);
    gathered_at_ = Clock::now();
    return all;
  }
  std::string broadcast_from_root(const std::string& m) override {
    if (topology().rank == 0) {
      traffic_.root_work_ns +=
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - gathered_at_).count();
      count(m.size());
    } else {
      count(0);
    }
    return inner_.broadcast_from_root(m);
  }
  void bitwise_and(std::vector<std::uint64_t>& words) override {
    count(words.size() * sizeof(std::uint64_t));
    inner_.bitwise_and(words);
  }

 private:
  void count(std::size_t bytes) {
    ++traffic_.collectives;
    traffic_.bytes += static_cast<long>(bytes);
  }
  hvd::Controller& inner_;
  Traffic& traffic_;
  Clock::time_point gathered_at_{};
};

class NoDataBackend : public hvd::Backend {
 public:
  const char* name() const override { return "none"; }
  hvd::BackendCapabilities capabilities() const override { return {}; }
  void allreduce(void*, std::size_t, hvd::DataType, hvd::ReduceOp) override {}
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, hvd::DataType) override {}
  void broadcast(void*, std::size_t, hvd::DataType, int) override {}
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, hvd::DataType) override {}
  void reducescatter(void*, void*, const std::vector<std::size_t>&, hvd::DataType,
                     hvd::ReduceOp) override {}
};

// Backward order, ResNet-50-like names ("layer3.5.conv2.weight").
std::vector<std::string> gradient_names() {
  std::vector<std::string> names;
  for (int i = kGradients - 1; i >= 0; --i) {
    names.push_back("module.layer" + std::to_string(1 + i % 4) + "." + std::to_string(i % 6) +
                    (i % 3 == 0 ? ".conv" : ".bn") + std::to_string(1 + i % 3) + ".weight." +
                    std::to_string(i));
  }
  return names;
}

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

struct Rank {
  std::unique_ptr<hvd::Controller> plane;  // memory or tcp
  std::unique_ptr<CountingController> counted;
  NoDataBackend backend;
  hvd::TensorQueue queue;
  std::unique_ptr<hvd::Coordinator> coordinator;
  Traffic traffic;
  std::vector<float> data = std::vector<float>(kGradients, 1.0f);
};

struct StepFigures {
  double wall_ms = 0;
  double tail_ms = 0;      // the slowest rank: its last submission to its step's end
  double full_rounds = 0;  // per rank
  double root_work_ms = 0;
  double collectives = 0;  // per rank
  double bytes = 0;        // per rank, mean
  double root_bytes = 0;
};

// One rank's training thread: one backward pass. Returns the time from its
// last submission to the last of its gradients done.
double train(Rank& rank, const std::vector<std::string>& names, const Options& o) {
  std::vector<hvd::Work> works;
  for (int i = 0; i < kGradients; ++i) {
    hvd::TensorEntry entry;
    entry.request.op_type = hvd::OpType::kAllreduce;
    entry.request.name = names[static_cast<std::size_t>(i)];
    entry.request.dtype = hvd::DataType::kFloat32;
    entry.request.shape = {1};
    entry.input = hvd::TensorView(&rank.data[static_cast<std::size_t>(i)], hvd::DataType::kFloat32,
                                  entry.request.shape, hvd::Device::cpu());
    entry.output = entry.input;
    entry.work = std::make_shared<hvd::detail::WorkState>(rank.queue.wakeup());
    works.emplace_back(entry.work);
    rank.queue.push(std::move(entry));
    if (o.gap_us > 0 && i + 1 < kGradients) {
      std::this_thread::sleep_for(std::chrono::microseconds(o.gap_us));
    }
  }
  const Clock::time_point last = Clock::now();
  try {
    for (hvd::Work& work : works) work.wait(std::chrono::minutes(5));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "negotiation_scale: a gradient of a step failed: %s\n", e.what());
    std::exit(1);
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - last).count();
}

void run(int size, const Options& o) {
  const long rss_before = resident_kib();
  hvd::raise_descriptor_limit(static_cast<long>(size) * 12 + 256);
  MemoryPlane memory(size);
  std::deque<Rank> ranks(static_cast<std::size_t>(size));
  std::vector<std::unique_ptr<MemoryController>> setup;
  for (int r = 0; r < size; ++r)
    setup.push_back(std::make_unique<MemoryController>(memory, r, size));
  if (o.plane != "memory") {
    std::vector<std::thread> connecting;
    for (int r = 0; r < size; ++r) {
      connecting.emplace_back([&, r] {
        hvd::Controller& over = *setup[static_cast<std::size_t>(r)];
        std::unique_ptr<hvd::Controller>& plane = ranks[static_cast<std::size_t>(r)].plane;
        if (o.plane == "shm") {
          plane = hvd::maybe_shm_controller(over, "none");
          return;
        }
        hvd::TcpControllerOptions tcp;
        tcp.address = "127.0.0.1";
        tcp.timeout = std::chrono::seconds(120);
        plane = hvd::TcpController::connect(over, tcp, "none");
      });
    }
    for (std::thread& t : connecting) t.join();
    for (const Rank& rank : ranks) {
      if (!rank.plane) {
        std::fprintf(stderr, "negotiation_scale: the %s plane did not set up at %d ranks\n",
                     o.plane.c_str(), size);
        std::exit(1);
      }
    }
  }
  hvd::CoordinatorSettings settings;
  settings.cycle_time = std::chrono::milliseconds(o.cycle_ms);
  settings.fusion_threshold = 64 << 20;
  settings.cache_capacity = 1024;
  settings.stall.check_seconds = 0;  // oversubscribed ranks wait long: no warnings
  settings.stall.shutdown_seconds = 0;
  for (int r = 0; r < size; ++r) {
    Rank& rank = ranks[static_cast<std::size_t>(r)];
    hvd::Controller& plane =
        rank.plane ? *rank.plane
                   : static_cast<hvd::Controller&>(*setup[static_cast<std::size_t>(r)]);
    rank.counted = std::make_unique<CountingController>(plane, rank.traffic);
    rank.coordinator = std::make_unique<hvd::Coordinator>(*rank.counted, rank.backend, rank.queue,
                                                          settings, nullptr, false);
    rank.coordinator->start();
  }

  const std::vector<std::string> names = gradient_names();
  std::vector<StepFigures> figures;
  for (int step = 0; step < o.steps; ++step) {
    std::vector<Counts> before;
    for (const Rank& rank : ranks) before.push_back(rank.traffic.counts());
    std::vector<double> tails(ranks.size());
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> training;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      training.emplace_back([&, r] { tails[r] = train(ranks[r], names, o); });
    }
    for (std::thread& t : training) t.join();
    StepFigures f;
    f.wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    f.tail_ms = *std::max_element(tails.begin(), tails.end());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      const Counts now = ranks[r].traffic.counts();
      f.full_rounds += static_cast<double>(now.full_rounds - before[r].full_rounds) / size;
      f.collectives += static_cast<double>(now.collectives - before[r].collectives) / size;
      f.bytes += static_cast<double>(now.bytes - before[r].bytes) / size;
      if (r == 0) {
        f.root_work_ms = static_cast<double>(now.root_work_ns - before[0].root_work_ns) / 1e6;
        f.root_bytes = static_cast<double>(now.bytes - before[0].bytes);
      }
    }
    figures.push_back(f);
  }
  const long rss_after = resident_kib();  // every rank's cache and table filled
  for (Rank& rank : ranks) rank.coordinator->stop();
  for (Rank& rank : ranks) rank.coordinator.reset();

  // Steady state: the median of the steps after the first, by wall time.
  std::vector<StepFigures> steady(figures.begin() + 1, figures.end());
  std::sort(steady.begin(), steady.end(),
            [](const StepFigures& a, const StepFigures& b) { return a.wall_ms < b.wall_ms; });
  const StepFigures& median = steady[steady.size() / 2];
  const double per_rank_kib = static_cast<double>(rss_after - rss_before) / size;
  for (const auto& [label, f] :
       {std::pair<const char*, const StepFigures&>{"first", figures[0]}, {"steady", median}}) {
    std::printf("%6d  %-6s  %-6s  %9.1f  %9.1f  %11.2f  %11.1f  %10.1f  %10.0f  %11.0f  %8.0f\n",
                size, o.plane.c_str(), label, f.wall_ms, f.tail_ms, f.root_work_ms, f.full_rounds,
                f.collectives, f.bytes, f.root_bytes, per_rank_kib);
  }
  // The steady state must not go through rank 0: every tensor is cached.
  for (std::size_t step = 1; step < figures.size(); ++step) {
    if (figures[step].full_rounds > 0) {
      std::fprintf(stderr,
                   "negotiation_scale: step %zu at %d ranks took %.1f full rounds per rank; the "
                   "steady state should take none\n",
                   step, size, figures[step].full_rounds);
      std::exit(1);
    }
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::printf("# %d gradients per step, %d us apart, cycle %d ms, %d steps; %ld cores\n",
              kGradients, o.gap_us, o.cycle_ms, o.steps, sysconf(_SC_NPROCESSORS_ONLN));
  std::printf("%6s  %-6s  %-6s  %9s  %9s  %11s  %11s  %10s  %10s  %11s  %8s\n", "ranks", "plane",
              "step", "wall ms", "tail ms", "rank0 work", "rounds/rank", "colls/rank", "bytes/rank",
              "rank0 bytes", "KiB/rank");
  for (int size : o.ranks) run(size, o);
  return 0;
}
