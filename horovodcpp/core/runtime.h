// Runtime: everything init() creates and shutdown() destroys. It owns the
// transport (controller + backend), the queue and the coordinator, and
// turns API calls into queued entries.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/coordinator.h"
#include "core/tensor_queue.h"
#include "core/timeline.h"
#include "core/transport.h"
#include "horovodcpp/work.h"

namespace hvd {

class Runtime {
 public:
  // Transport from HOROVODCPP_CPU_OPERATIONS / HOROVODCPP_CONTROLLER, else
  // the first one this build has.
  Runtime();
  ~Runtime();  // stops the coordinator (a job-wide shutdown)

  const Topology& topology() const { return transport_.controller->topology(); }

  // Validates locally (errors travel with the request to every rank),
  // names unnamed tensors and queues the entry.
  Work submit(Request request, const TensorView& input, const TensorView& output);

  // The timeline (rank 0 only; no-ops elsewhere). Also started at init from
  // HOROVODCPP_TIMELINE / HOROVODCPP_TIMELINE_MARK_CYCLES.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();
  // Submits a group (grouped_* API): `request` is the template of every
  // member; member i is named "<name>.<i>" (name automatic when empty) and
  // tagged with the group so rank 0 releases the members together.
  std::vector<Work> submit_group(const Request& request, const std::vector<TensorView>& inputs,
                                 const std::vector<TensorView>& outputs);

 private:
  std::string auto_name(OpType op_type);

  Transport transport_;
  TensorQueue queue_;
  Timeline timeline_;  // outlives the coordinator, which writes to it
  std::unique_ptr<Coordinator> coordinator_;
  std::array<std::atomic<long long>, kNumOpTypes> unnamed_counts_{};  // per OpType
};

}  // namespace hvd
