// Built against an installed horovodcpp: one rank, one allreduce.
#include <horovodcpp/horovodcpp.h>

#include <cstdio>
#include <vector>

int main() {
  hvd::init();
  std::vector<float> values = {1.0f, 2.0f};
  hvd::allreduce(hvd::view(values), "values", hvd::ReduceOp::kSum);
  const bool ok = hvd::size() == 1 && values[0] == 1.0f && values[1] == 2.0f;
  std::printf("horovodcpp %s consumer: %s\n", hvd::version(), ok ? "ok" : "wrong result");
  hvd::shutdown();
  return ok ? 0 : 1;
}
