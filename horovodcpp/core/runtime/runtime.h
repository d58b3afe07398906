// Runtime: everything init() creates and shutdown() destroys. It owns the
// registered process sets (the global one, id 0, included), each run by its
// own ProcessSetRuntime where this rank is a member, the channel through
// which every rank agrees on adding and removing sets, and the timeline.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/diagnostics/flight_recorder_dumps.h"
#include "core/diagnostics/timeline.h"
#include "core/process_sets/process_set_channel.h"
#include "core/runtime/backend_factory.h"
#include "core/runtime/hvdrun_link.h"
#include "core/runtime/process_set_runtime.h"
#include "horovodcpp/process_set.h"
#include "horovodcpp/work.h"

namespace hvd {

class Runtime {
 public:
  // Transport from HOROVODCPP_CPU_OPERATIONS / HOROVODCPP_CONTROLLER, else
  // the first one `backends` has, over `world_ranks` (empty: every launched
  // rank; see init_on_ranks()). `process_sets` are then added in order, as
  // add_process_set() would (ids 1, 2, ...).
  explicit Runtime(BackendFactory backends, const std::vector<std::vector<int>>& process_sets = {},
                   const std::vector<int>& world_ranks = {});
  ~Runtime();  // stops every process set, then the global one (a job-wide shutdown)

  // This rank's place in the job.
  const Topology& topology() const { return global_->topology(); }
  // Every host runs the same number of ranks (every rank's local_size agrees).
  bool homogeneous() const { return homogeneous_; }
  // The transport the job runs on ("mpi", "gloo").
  const std::string& transport_name() const { return transport_name_; }
  // Whether several threads may use the transport at once, as process sets
  // need (with MPI: whether MPI provides MPI_THREAD_MULTIPLE).
  bool transport_multithreaded() const { return channel_->cannot_create_transports().empty(); }
  // What the global set's collectives run on ("mpi", "shm", "shm+gloo", ...).
  std::string backend_name() const { return global_->backend_name(); }

  // Queue on `process_set`; InvalidArgument at once if it is not registered
  // or this rank is not a member.
  Work submit(Request request, const TensorView& input, const TensorView& output,
              const ProcessSet& process_set);
  // submit() and wait (ProcessSetRuntime::run_blocking).
  void run_blocking(Request request, const TensorView& input, const TensorView& output,
                    const ProcessSet& process_set,
                    std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  std::vector<Work> submit_group(const Request& request, const std::vector<TensorView>& inputs,
                                 const std::vector<TensorView>& outputs,
                                 const ProcessSet& process_set);
  // requests[i] on inputs[i] (in place), each on its own, in one call.
  std::vector<Work> submit_each(std::vector<Request> requests,
                                const std::vector<TensorView>& inputs,
                                const ProcessSet& process_set);

  // Process sets (see horovodcpp/process_set.h). add and remove are
  // collective over every rank of the job and run one at a time.
  ProcessSet global_process_set() const { return global_->set(); }
  ProcessSet add_process_set(std::vector<int> ranks);
  void remove_process_set(const ProcessSet& process_set);
  std::vector<ProcessSet> process_sets() const;

  // The timeline (rank 0 only; no-ops elsewhere). Also started at init from
  // HOROVODCPP_TIMELINE / HOROVODCPP_TIMELINE_MARK_CYCLES. Only the global
  // set writes to it.
  void start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();

  // Writes this rank's flight recorder dump now; returns its path (empty
  // when the recorder is off, or the file could not be written).
  std::string dump_flight_recorder(const std::string& reason);

 private:
  struct Registered {
    ProcessSet set;
    std::shared_ptr<ProcessSetRuntime> runtime;  // null where this rank is not a member
  };

  // The entry of `process_set`; InvalidArgument if it is not registered
  // (never was, was removed, or belongs to an earlier init). Under
  // sets_mutex_.
  const Registered& registered(const ProcessSet& process_set) const;
  // The set `process_set` names as this rank runs it. InvalidArgument if it
  // is not registered (never was, was removed, or belongs to an earlier
  // init) or this rank is not a member.
  std::shared_ptr<ProcessSetRuntime> member_runtime(const ProcessSet& process_set) const;
  // Exchanges `call` with every rank; InvalidArgument naming each rank's
  // call if they differ. Under management_mutex_.
  void agree(const std::string& call);
  // Stops and forgets every added set (not the global one).
  void stop_process_sets();

  BackendFactory backends_;
  std::string transport_name_;
  // Read once at init, shared by every process set's coordinator.
  CoordinatorSettings coordinator_settings_;  // thread_cpu set once the local rank is known
  bool homogeneous_ = true;
  Timeline timeline_;                            // outlives the coordinators, which write to it
  std::unique_ptr<HvdrunLink> hvdrun_;           // likewise; null without hvdrun
  std::unique_ptr<FlightRecorderDumps> flight_;  // likewise; null when off
  std::unique_ptr<ProcessSetChannel> channel_;
  std::chrono::milliseconds process_set_timeout_;

  std::mutex management_mutex_;  // add/remove one at a time; guards the fields below
  int next_id_ = 1;
  std::string broken_;  // why sets can no longer change (an exchange timed out)

  mutable std::mutex sets_mutex_;              // guards sets_
  std::map<int, Registered> sets_;             // by id
  std::shared_ptr<ProcessSetRuntime> global_;  // sets_[0].runtime
};

}  // namespace hvd
