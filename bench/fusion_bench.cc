// Tensor fusion benchmark: the time of one training-like step that averages
// many gradient-sized tensors (default 200 x 64 KiB of float32; or the
// element counts of --elements-list, e.g. a model's parameters). Run it with
// HOROVODCPP_FUSION_THRESHOLD=0 (no fusion) and with fusion to compare:
//   HOROVODCPP_FUSION_THRESHOLD=0 hvdrun -np 2 build/bench/fusion_bench
#include <horovodcpp/horovodcpp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  int tensors = 200, elements = 16384, steps = 20, warmup = 3;
  std::vector<long> element_list;  // --elements-list: one count per tensor
  for (int i = 1; i + 1 < argc; i += 2) {
    const int value = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--tensors"))
      tensors = value;
    else if (!std::strcmp(argv[i], "--elements"))
      elements = value;
    else if (!std::strcmp(argv[i], "--steps"))
      steps = value;
    else if (!std::strcmp(argv[i], "--warmup"))
      warmup = value;
    else if (!std::strcmp(argv[i], "--elements-list")) {
      std::stringstream list(argv[i + 1]);
      for (std::string item; std::getline(list, item, ',');)
        element_list.push_back(std::stol(item));
    } else {
      std::fprintf(stderr,
                   "usage: fusion_bench [--tensors N] [--elements N] [--elements-list "
                   "N,N,...] [--steps N] [--warmup N]\n");
      return 2;
    }
  }
  if (element_list.empty()) element_list.assign(tensors, elements);
  tensors = static_cast<int>(element_list.size());
  hvd::init();
  std::vector<std::vector<float>> grads;
  for (long n : element_list) grads.emplace_back(n, 1.0f);
  auto step = [&] {
    std::vector<hvd::Work> works;
    works.reserve(tensors);
    for (int t = 0; t < tensors; ++t) {
      works.push_back(hvd::allreduce_async(hvd::view(grads[t]), "grad." + std::to_string(t)));
    }
    for (hvd::Work& w : works) w.wait();
  };
  for (int i = 0; i < warmup; ++i) step();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
      steps;
  hvd::allreduce(hvd::view(&ms, {1}), "step_ms", hvd::ReduceOp::kMax);
  if (hvd::rank() == 0) {
    const char* threshold = std::getenv("HOROVODCPP_FUSION_THRESHOLD");
    long total = 0;
    for (long n : element_list) total += n;
    std::printf("ranks=%d tensors=%d (%ld float32) fusion_threshold=%s: %.3f ms/step\n",
                hvd::size(), tensors, total, threshold ? threshold : "default", ms);
  }
  hvd::shutdown();
  return 0;
}
