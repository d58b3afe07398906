// FusionPipeline's order of steps, its failures, and a fused allreduce
// through it on a backend that waits on a network (CpuCollectives).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/execution/cpu_collectives.h"
#include "core/execution/fusion_pipeline.h"

namespace hvd {
namespace {

constexpr std::size_t kChunk = FusionPipeline::kChunkBytes;

// Every step of a run, in the order they happened.
struct StepLog {
  void add(const std::string& step, std::size_t begin, std::size_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    steps.push_back(step + " " + std::to_string(begin / kChunk) + " " + std::to_string(end));
  }
  std::size_t index_of(const std::string& step) const {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].rfind(step + " ", 0) == 0) return i;
    }
    return steps.size();
  }
  std::mutex mutex;
  std::vector<std::string> steps;
};

TEST(FusionPipeline, EachChunkIsCopiedInReducedAndCopiedOutInOrder) {
  const std::size_t bytes = 2 * kChunk + kChunk / 2;
  StepLog log;
  FusionPipeline pipeline;
  pipeline.run(
      bytes, [&](std::size_t b, std::size_t e) { log.add("in", b, e); },
      [&](std::size_t b, std::size_t e) { log.add("reduce", b, e); },
      [&](std::size_t b, std::size_t e) { log.add("out", b, e); });
  ASSERT_EQ(log.steps.size(), 9u);
  for (std::size_t chunk = 0; chunk < 3; ++chunk) {
    const std::string c = std::to_string(chunk);
    EXPECT_LT(log.index_of("in " + c), log.index_of("reduce " + c)) << c;
    EXPECT_LT(log.index_of("reduce " + c), log.index_of("out " + c)) << c;
  }
  EXPECT_LT(log.index_of("out 1"), log.index_of("out 2"));
  // The last chunk ends where the buffer does.
  EXPECT_NE(std::find(log.steps.begin(), log.steps.end(), "reduce 2 " + std::to_string(bytes)),
            log.steps.end());
}

TEST(FusionPipeline, AFailedReductionStopsTheRunAndIsRethrown) {
  FusionPipeline pipeline;
  StepLog log;
  const auto record = [&](const char* step) {
    return [&log, step](std::size_t b, std::size_t e) { log.add(step, b, e); };
  };
  EXPECT_THROW(pipeline.run(
                   3 * kChunk, record("in"),
                   [&](std::size_t b, std::size_t e) {
                     if (b == kChunk) throw std::runtime_error("peer lost");
                     log.add("reduce", b, e);
                   },
                   record("out")),
               std::runtime_error);
  EXPECT_EQ(log.index_of("reduce 1"), log.steps.size());
  EXPECT_EQ(log.index_of("out 1"), log.steps.size());
  // The helper is free again: the next run completes.
  log.steps.clear();
  pipeline.run(2 * kChunk, record("in"), record("reduce"), record("out"));
  EXPECT_EQ(log.steps.size(), 6u);
}

TEST(FusionPipeline, AFailedCopyIsRethrown) {
  FusionPipeline pipeline;
  EXPECT_THROW(pipeline.run(
                   2 * kChunk,
                   [](std::size_t b, std::size_t) {
                     if (b > 0) throw std::runtime_error("copy");
                   },
                   [](std::size_t, std::size_t) {}, [](std::size_t, std::size_t) {}),
               std::runtime_error);
}

// Two ranks holding the same data, over a network: the sum is twice the
// input. Records the chunks it is given.
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
  }
  void allgatherv(const void*, void*, const std::vector<std::size_t>&, DataType) override {}
  void broadcast(void*, std::size_t, DataType, int) override {}
  void alltoallv(const void*, const std::vector<std::size_t>&, void*,
                 const std::vector<std::size_t>&, DataType) override {}
  void reducescatter(void*, void*, const std::vector<std::size_t>&, DataType, ReduceOp) override {}
  std::vector<std::size_t> counts;
};

TEST(FusionPipeline, AFusedAllreduceAcrossChunksGivesEveryTensorItsResult) {
  NetworkBackend backend;
  Topology topology;
  topology.size = 2;
  ExecutionTrace trace(nullptr, "network");
  CpuCollectives collectives(backend, topology, trace);
  // Tensors that straddle chunk boundaries: 18 MB in all, one in place.
  const std::vector<std::size_t> sizes = {1500000, 2000000, 1000000, 3};
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
    request.prescale_factor = 3.0;
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

  const std::size_t total = std::accumulate(sizes.begin(), sizes.end(), std::size_t{0});
  const std::size_t chunk_elements = kChunk / sizeof(float);
  ASSERT_EQ(backend.counts.size(), (total + chunk_elements - 1) / chunk_elements);
  EXPECT_EQ(std::accumulate(backend.counts.begin(), backend.counts.end(), std::size_t{0}), total);
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    const std::vector<float>& result = t == 1 ? inputs[t] : outputs[t];
    for (std::size_t i = 0; i < sizes[t]; ++i) {
      // (x * 3) summed over 2 ranks, averaged, times 0.5: 1.5 x.
      const float x = static_cast<float>(t * 10) + static_cast<float>(i);
      ASSERT_FLOAT_EQ(result[i], 1.5f * x) << "tensor " << t << " element " << i;
    }
  }
}

}  // namespace
}  // namespace hvd
