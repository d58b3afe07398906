// ProcessSetRuntime: one process set as a member rank runs it: the set's
// transport (controller + backend over its members only), its TensorQueue
// and its Coordinator thread. Each set negotiates and executes on its own,
// so a set waiting for a tensor never holds up another set.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/device/device_operations.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/transport.h"
#include "core/negotiation/tensor_queue.h"
#include "core/runtime/backend_factory.h"
#include "core/runtime/coordinator.h"
#include "core/runtime/hvdrun_link.h"
#include "horovodcpp/process_set.h"
#include "horovodcpp/work.h"

namespace hvd {

class ProcessSetRuntime {
 public:
  // Starts the set's coordinator, configured by `settings`; `backends`
  // builds its device operations. `timeline` (may be null) receives its
  // trace events: only the global set's, on rank 0, is given one.
  // `channel`: the job's process-set channel, for the global set only
  // (its device operations may build sub-transports at construction).
  // `hvdrun` (may be null): told when the coordinator stops on an error.
  // `flight` (may be null): the rank's flight recorder and its dumps.
  ProcessSetRuntime(ProcessSet set, Transport transport, const BackendFactory& backends,
                    const CoordinatorSettings& settings, Timeline* timeline,
                    ProcessSetChannel* channel = nullptr, HvdrunLink* hvdrun = nullptr,
                    FlightRecorderDumps* flight = nullptr);
  // stop(), then frees the transport.
  ~ProcessSetRuntime();

  const ProcessSet& set() const { return set_; }
  // This rank's place in the set.
  const Topology& topology() const { return transport_.controller->topology(); }
  const char* backend_name() const { return transport_.backend->name(); }

  // Validates locally (errors travel with the request to every member),
  // names unnamed tensors, turns a broadcast's global root rank into the
  // set's rank, and queues the entry.
  Work submit(Request request, const TensorView& input, const TensorView& output);
  // submit() and wait for it; a lone CPU allreduce or barrier runs on this
  // thread without being queued where it can (Coordinator::run_alone).
  // After `timeout`, Timeout is thrown and the operation stays in flight.
  void run_blocking(Request request, const TensorView& input, const TensorView& output,
                    std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // Submits a group (grouped_* API): `request` is the template of every
  // member; member i is named "<name>.<i>" (name automatic when empty) and
  // tagged with the group so the set's rank 0 releases the members together.
  std::vector<Work> submit_group(const Request& request, const std::vector<TensorView>& inputs,
                                 const std::vector<TensorView>& outputs);
  // Submits requests[i] on inputs[i] (in place), each its own operation as
  // if submitted one after the other, in one call: queued all, or none if
  // one is refused.
  std::vector<Work> submit_each(std::vector<Request> requests,
                                const std::vector<TensorView>& inputs);

  // Stops the coordinator together with the other members (they agree
  // through the shutdown flag of the negotiation); pending operations fail.
  // Idempotent.
  void stop();

 private:
  std::string auto_name(OpType op_type);
  // Validates and names one submission (see submit) without queueing it.
  TensorEntry make_entry(Request request, const TensorView& input, const TensorView& output);
  // make_entry's checks and naming, on the request alone.
  void prepare(Request& request, const TensorView& input, const TensorView& output);
  // The entry of a prepared request.
  TensorEntry entry_of(Request request, const TensorView& input, const TensorView& output);
  // Queues a prepared request (`caller_waits`: see TensorQueue::push).
  Work enqueue(Request request, const TensorView& input, const TensorView& output,
               bool caller_waits);

  ProcessSet set_;
  Transport transport_;
  std::unique_ptr<DeviceOperations> device_;  // CUDA tensors; null if not built
  TensorQueue queue_;                         // after device_: entries hold its events
  std::unique_ptr<Coordinator> coordinator_;
  Timeline* timeline_;        // may be null; entries are stamped only while it records
  FlightRecorder* recorder_;  // may be null
  std::array<std::atomic<long long>, kNumOpTypes> unnamed_counts_{};  // per OpType
};

}  // namespace hvd
