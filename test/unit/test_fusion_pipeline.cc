// FusionPipeline's order of steps, its failures, and a fused allreduce
// through it on a backend that waits on a network (CpuCollectives).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/execution/cpu_collectives.h"
#include "core/execution/fusion_pipeline.h"

namespace hvd {
namespace {

constexpr std::size_t kChunk = FusionPipeline::kChunkBytes;
constexpr std::size_t kEdge = FusionPipeline::kEdgeChunkBytes;

// Every step of a run, in the order they happened: "reduce 1048576 5242880".
struct StepLog {
  void add(const std::string& step, std::size_t begin, std::size_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    steps.push_back(step + " " + std::to_string(begin) + " " + std::to_string(end));
  }
  std::size_t index_of(const std::string& step, std::size_t begin) const {
    const std::string prefix = step + " " + std::to_string(begin) + " ";
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].rfind(prefix, 0) == 0) return i;
    }
    return steps.size();
  }
  FusionPipeline::Step recorder(const char* step) {
    return [this, step](std::size_t b, std::size_t e) { add(step, b, e); };
  }
  FusionPipeline::Reduce reducer() {
    return [this](std::size_t b, std::size_t e, int) { add("reduce", b, e); };
  }
  std::mutex mutex;
  std::vector<std::string> steps;
};

TEST(FusionPipeline, SmallEdgeChunksAndARestThatJoinsTheChunkBeforeIt) {
  using Bounds = std::vector<std::size_t>;
  EXPECT_EQ(FusionPipeline::chunk_bounds(kChunk), (Bounds{0, kEdge, kChunk - kEdge, kChunk}));
  // 10 MiB: 1, 4, 4, 1.
  EXPECT_EQ(FusionPipeline::chunk_bounds(10 * kEdge),
            (Bounds{0, kEdge, kEdge + kChunk, 9 * kEdge, 10 * kEdge}));
  // A rest under half a chunk joins the one before: 1, 4, 4 + 1 MiB, 1.
  EXPECT_EQ(FusionPipeline::chunk_bounds(11 * kEdge),
            (Bounds{0, kEdge, kEdge + kChunk, 10 * kEdge, 11 * kEdge}));
  // Half a chunk and more is a chunk of its own: 1, 4, 4, 2, 1.
  EXPECT_EQ(FusionPipeline::chunk_bounds(12 * kEdge),
            (Bounds{0, kEdge, kEdge + kChunk, kEdge + 2 * kChunk, 11 * kEdge, 12 * kEdge}));
  EXPECT_EQ(FusionPipeline::chunk_bounds(100), (Bounds{0, 100}));
}

TEST(FusionPipeline, EachChunkIsCopiedInReducedAndCopiedOutInOrder) {
  const std::size_t bytes = 12 * kEdge + 8;
  const std::vector<std::size_t> bounds = FusionPipeline::chunk_bounds(bytes);
  StepLog log;
  FusionPipeline pipeline;
  pipeline.run(bounds, log.recorder("in"), log.reducer(), log.recorder("out"));
  const std::size_t chunks = bounds.size() - 1;
  ASSERT_EQ(log.steps.size(), 3 * chunks);
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    const std::string part =
        " " + std::to_string(bounds[chunk]) + " " + std::to_string(bounds[chunk + 1]);
    for (const char* step : {"in", "reduce", "out"}) {
      EXPECT_NE(std::find(log.steps.begin(), log.steps.end(), step + part), log.steps.end())
          << step << part;
    }
    EXPECT_LT(log.index_of("in", bounds[chunk]), log.index_of("reduce", bounds[chunk])) << chunk;
    EXPECT_LT(log.index_of("reduce", bounds[chunk]), log.index_of("out", bounds[chunk])) << chunk;
    if (chunk > 0) {
      EXPECT_LT(log.index_of("reduce", bounds[chunk - 1]), log.index_of("reduce", bounds[chunk]));
    }
  }
}

// The calling thread copies the first chunk in and the last one out itself:
// the first reduction and the return need no wake-up of the helper.
TEST(FusionPipeline, TheCallerCopiesTheFirstChunkInAndTheLastOneOut) {
  const std::thread::id caller = std::this_thread::get_id();
  std::mutex mutex;
  std::vector<std::string> on_caller;
  const auto record = [&](const char* step) {
    return [&, step](std::size_t b, std::size_t) {
      std::lock_guard<std::mutex> lock(mutex);
      if (std::this_thread::get_id() == caller) {
        on_caller.push_back(std::string(step) + " " + std::to_string(b));
      }
    };
  };
  FusionPipeline pipeline;
  const FusionPipeline::Step reduce = record("reduce");
  pipeline.run(
      FusionPipeline::chunk_bounds(10 * kEdge), record("in"),
      [&](std::size_t b, std::size_t e, int) { reduce(b, e); }, record("out"));
  const std::vector<std::string> expected = {"in 0",
                                             "reduce 0",
                                             "reduce " + std::to_string(kEdge),
                                             "reduce " + std::to_string(kEdge + kChunk),
                                             "reduce " + std::to_string(9 * kEdge),
                                             "out " + std::to_string(9 * kEdge)};
  EXPECT_EQ(on_caller, expected);
}

TEST(FusionPipeline, AFailedReductionStopsTheRunAndIsRethrown) {
  FusionPipeline pipeline;
  StepLog log;
  const auto record = [&](const char* step) { return log.recorder(step); };
  // Chunks at 0, 1, 5 and 9 MiB: the second one's reduction fails.
  EXPECT_THROW(pipeline.run(
                   FusionPipeline::chunk_bounds(10 * kEdge), record("in"),
                   [&](std::size_t b, std::size_t e, int) {
                     if (b == kEdge) throw std::runtime_error("peer lost");
                     log.add("reduce", b, e);
                   },
                   record("out")),
               std::runtime_error);
  EXPECT_LT(log.index_of("reduce", 0), log.steps.size());
  for (const std::size_t begin : {kEdge, kEdge + kChunk, 9 * kEdge}) {
    EXPECT_EQ(log.index_of("reduce", begin), log.steps.size()) << begin;
    EXPECT_EQ(log.index_of("out", begin), log.steps.size()) << begin;
  }
  // The helper is free again: the next run completes.
  log.steps.clear();
  pipeline.run(FusionPipeline::chunk_bounds(2 * kChunk), record("in"), log.reducer(),
               record("out"));
  EXPECT_EQ(log.steps.size(), 3 * (FusionPipeline::chunk_bounds(2 * kChunk).size() - 1));
}

// Two lanes: the even chunks reduced on the calling thread, the odd ones on
// another, both at once (each waits here for the other to start); each
// lane's chunks in order, each chunk copied out after its reduction.
TEST(FusionPipeline, TwoLanesReduceTheEvenAndTheOddChunksAtOnce) {
  const std::size_t bytes = 12 * kEdge + 8;
  const std::vector<std::size_t> bounds = FusionPipeline::chunk_bounds(bytes);
  const std::size_t chunks = bounds.size() - 1;
  const std::thread::id caller = std::this_thread::get_id();
  StepLog log;
  std::mutex mutex;
  std::condition_variable both;
  int first_two_in = 0;   // of chunks 0 and 1, how many entered their reduction
  int first_two_met = 0;  // how many saw the other one in its reduction too
  std::vector<int> lane_of(chunks, -1);
  std::vector<bool> on_caller(chunks, false);
  FusionPipeline pipeline;
  pipeline.run(
      bounds, log.recorder("in"),
      [&](std::size_t b, std::size_t e, int lane) {
        const std::size_t chunk =
            static_cast<std::size_t>(std::find(bounds.begin(), bounds.end(), b) - bounds.begin());
        {
          std::unique_lock<std::mutex> lock(mutex);
          lane_of[chunk] = lane;
          on_caller[chunk] = std::this_thread::get_id() == caller;
          // The first two chunks wait (boundedly) for each other: neither
          // ends its reduction before the other has begun its own.
          if (chunk < 2) {
            ++first_two_in;
            both.notify_all();
            if (both.wait_for(lock, std::chrono::seconds(10), [&] { return first_two_in == 2; })) {
              ++first_two_met;
            }
          }
        }
        log.add("reduce", b, e);
      },
      log.recorder("out"), 2);
  EXPECT_EQ(first_two_met, 2) << "the first two chunks were not reduced at the same time";
  ASSERT_EQ(log.steps.size(), 3 * chunks);
  for (std::size_t chunk = 0; chunk < chunks; ++chunk) {
    EXPECT_EQ(lane_of[chunk], static_cast<int>(chunk % 2)) << chunk;
    EXPECT_EQ(on_caller[chunk], chunk % 2 == 0) << chunk;
    EXPECT_LT(log.index_of("in", bounds[chunk]), log.index_of("reduce", bounds[chunk])) << chunk;
    EXPECT_LT(log.index_of("reduce", bounds[chunk]), log.index_of("out", bounds[chunk])) << chunk;
    if (chunk >= 2) {
      EXPECT_LT(log.index_of("reduce", bounds[chunk - 2]), log.index_of("reduce", bounds[chunk]));
    }
  }
}

TEST(FusionPipeline, AFailureInTheSecondLaneIsRethrownAndTheNextRunCompletes) {
  FusionPipeline pipeline;
  StepLog log;
  // Chunks at 0, 1, 5 and 9 MiB: the second lane's first one fails.
  EXPECT_THROW(pipeline.run(
                   FusionPipeline::chunk_bounds(10 * kEdge), log.recorder("in"),
                   [&](std::size_t b, std::size_t e, int) {
                     if (b == kEdge) throw std::runtime_error("peer lost");
                     log.add("reduce", b, e);
                   },
                   log.recorder("out"), 2),
               std::runtime_error);
  EXPECT_EQ(log.index_of("reduce", 9 * kEdge), log.steps.size());  // the lane stopped
  EXPECT_EQ(log.index_of("out", kEdge), log.steps.size());
  log.steps.clear();
  pipeline.run(FusionPipeline::chunk_bounds(2 * kChunk), log.recorder("in"), log.reducer(),
               log.recorder("out"), 2);
  EXPECT_EQ(log.steps.size(), 3 * (FusionPipeline::chunk_bounds(2 * kChunk).size() - 1));
}

TEST(FusionPipeline, AFailedCopyIsRethrown) {
  FusionPipeline pipeline;
  EXPECT_THROW(pipeline.run(
                   FusionPipeline::chunk_bounds(2 * kChunk),
                   [](std::size_t b, std::size_t) {
                     if (b > 0) throw std::runtime_error("copy");
                   },
                   [](std::size_t, std::size_t, int) {}, [](std::size_t, std::size_t) {}),
               std::runtime_error);
}

// Two ranks holding the same data, over a network: the sum is twice the
// input. Records the chunks it is given, and where.
class NetworkBackend : public Backend {
 public:
  const char* name() const override { return "network"; }
  BackendCapabilities capabilities() const override {
    BackendCapabilities capabilities;
    capabilities.waits_on_network = true;
    return capabilities;
  }
  void allreduce(void* buffer, std::size_t count, DataType dtype, ReduceOp op) override {
    EXPECT_EQ(dtype, DataType::kFloat32);
    EXPECT_EQ(op, ReduceOp::kSum);
    float* data = static_cast<float*>(buffer);
    for (std::size_t i = 0; i < count; ++i) data[i] *= 2;
    counts.push_back(count);
    buffers.push_back(data);
  }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {}
  void broadcast(void*, std::size_t, DataType, int) override {}
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override {}
  void reducescatter(void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {}
  std::vector<std::size_t> counts;
  std::vector<const float*> buffers;
};

// A fused Average of tensors of `sizes` floats (the second in place, the
// others not), scaled by `prescale` and 0.5, through CpuCollectives on
// NetworkBackend: checks every result and returns the tensors' memory.
std::vector<std::vector<float>> fused_average(NetworkBackend& backend,
                                              const std::vector<std::size_t>& sizes,
                                              double prescale) {
  Topology topology;
  topology.size = 2;
  ExecutionTrace trace(nullptr, "network");
  CpuCollectives collectives(backend, topology, trace);
  std::vector<std::vector<float>> inputs, outputs;
  std::vector<TensorEntry> entries(sizes.size());
  std::vector<const TensorEntry*> group;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    inputs.emplace_back(sizes[t]);
    std::iota(inputs[t].begin(), inputs[t].end(), static_cast<float>(t * 10));
    outputs.emplace_back(t == 1 ? 0 : sizes[t], -1.0f);
    Request& request = entries[t].request;
    request.name = "t" + std::to_string(t);
    request.reduce_op = ReduceOp::kAverage;
    request.prescale_factor = prescale;
    request.postscale_factor = 0.5;
    request.shape = {static_cast<std::int64_t>(sizes[t])};
    entries[t].input = TensorView(inputs[t].data(), DataType::kFloat32, request.shape);
    entries[t].output = t == 1 ? entries[t].input
                               : TensorView(outputs[t].data(), DataType::kFloat32, request.shape);
    group.push_back(&entries[t]);
  }
  Response response;
  std::vector<std::int64_t> splits;
  collectives.run(response, group, splits);
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    const std::vector<float>& result = t == 1 ? inputs[t] : outputs[t];
    for (std::size_t i = 0; i < sizes[t]; ++i) {
      // (x * prescale) summed over 2 ranks, averaged, times 0.5.
      const float x = static_cast<float>(t * 10) + static_cast<float>(i);
      const float want = static_cast<float>(prescale * 0.5) * x;
      if (result[i] != want) {
        ADD_FAILURE() << "tensor " << t << " element " << i << ": " << result[i] << ", not "
                      << want;
        break;
      }
    }
  }
  inputs[0] = std::move(outputs[0]);  // what holds each tensor's result
  for (std::size_t t = 2; t < sizes.size(); ++t) inputs[t] = std::move(outputs[t]);
  return inputs;
}

// 30 MB of tensors, one small: the small one is packed first, each large
// one follows in chunks of its own: one chunk up to 8 MiB, the 20 MB one
// in three.
const std::vector<std::size_t> kSizes = {1500000, 5000000, 1000000, 3};
const std::vector<std::size_t> kChunkCounts = {3, 1500000, 1666666, 1666667, 1666667, 1000000};

TEST(FusionPipeline, AFusedAllreduceGivesEveryTensorItsResult) {
  NetworkBackend backend;
  fused_average(backend, kSizes, 3.0);
  EXPECT_EQ(backend.counts, kChunkCounts);
}

// In place and without a prescale, a large tensor is reduced in its own
// memory, not in the fusion buffer; the others still go through it.
TEST(FusionPipeline, ALargeTensorInPlaceIsReducedInItsOwnMemory) {
  NetworkBackend backend;
  const std::vector<std::vector<float>> tensors = fused_average(backend, kSizes, 1.0);
  ASSERT_EQ(backend.counts, kChunkCounts);
  const float* in_place = tensors[1].data();
  EXPECT_EQ(backend.buffers[2], in_place);
  EXPECT_EQ(backend.buffers[3], in_place + 1666666);
  EXPECT_EQ(backend.buffers[4], in_place + 3333333);
  for (const std::size_t chunk : {0, 1, 5}) {
    for (const auto& tensor : tensors) {
      EXPECT_FALSE(backend.buffers[chunk] >= tensor.data() &&
                   backend.buffers[chunk] < tensor.data() + tensor.size())
          << "chunk " << chunk << " was reduced in a tensor that is not in place";
    }
  }
  // Prescaled, nothing is reduced in place.
  NetworkBackend prescaled;
  const std::vector<std::vector<float>> copied = fused_average(prescaled, kSizes, 3.0);
  EXPECT_NE(prescaled.buffers[2], copied[1].data());
}

}  // namespace
}  // namespace hvd
