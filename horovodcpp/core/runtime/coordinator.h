// Coordinator: the background thread. Each cycle it sends this rank's new
// requests to rank 0, receives the agreed responses and executes them in
// that order, so every rank runs the same collectives in the same order.
// Requests that hit the response cache skip rank 0 (see CacheNegotiation).
// A thread that waits for a result runs the cycles itself while nobody else
// does (help): one thread, not a hand-over and back, per blocking collective.
// A lone blocking allreduce that goes inline, or a barrier, runs without a
// queue entry or a Work at all (run_alone). While waiting threads run the
// cycles, the coordinator's own thread goes dormant (sleep_dormant).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "core/diagnostics/flight_recorder_dumps.h"
#include "core/diagnostics/timeline.h"
#include "core/execution/backend.h"
#include "core/negotiation/cache_negotiation.h"
#include "core/negotiation/controller.h"
#include "core/negotiation/message_table.h"
#include "core/negotiation/stall_inspector.h"
#include "core/negotiation/tensor_queue.h"
#include "core/runtime/collective_executor.h"
#include "core/runtime/hvdrun_link.h"
#include "core/tuning/autotuner.h"

namespace hvd {

// What a coordinator is configured with: read from the settings once per
// init by the Runtime (read()) and given to every process set's coordinator.
struct CoordinatorSettings {
  std::chrono::microseconds cycle_time{};  // CYCLE_TIME: cycles start this often, unless urgent
  // While this rank's waiting threads run its cycles, the coordinator's
  // thread looks this often (at least once a cycle time); not a user
  // setting (tests lengthen it).
  std::chrono::milliseconds dormant_look{50};
  // IDLE_SPIN_MICROSECONDS: polling before sleeping; unset: chosen by the
  // cores the host has for its ranks (Coordinator).
  std::optional<std::chrono::microseconds> idle_spin;
  std::size_t fusion_threshold = 0;  // FUSION_THRESHOLD: bytes; 0 disables fusion
  std::size_t cache_capacity = 0;    // CACHE_CAPACITY: response cache entries; 0: none
  StallSettings stall;
  AutotuneSettings autotune;
  // THREAD_AFFINITY: the CPU this rank's coordinator threads run on (set
  // by the Runtime, which knows the local rank); nullopt: not pinned.
  std::optional<int> thread_cpu;
  // The transport's writes on a cycle's thread cannot raise SIGPIPE (set by
  // the ProcessSetRuntime from Transport::sigpipe_free): that thread's
  // signal mask is then left alone.
  bool sigpipe_free = false;

  // InvalidArgument on a malformed or out-of-range value.
  static CoordinatorSettings read();
};

// A blocking CPU allreduce or a barrier whose caller runs it in a cycle of
// its own (Coordinator::run_alone). The request is checked and named
// (ProcessSetRuntime).
struct AloneCall {
  AloneCall(Request r, const TensorView& in, const TensorView& out)
      : request(std::move(r)), input(in), output(out) {}
  Request request;
  const TensorView& input;  // the caller's, for the whole call
  const TensorView& output;
  // Set when the cycle could not complete it: then it is an entry in
  // flight like any other, and the caller waits for this.
  std::shared_ptr<detail::WorkState> work;
  bool done = false;         // completed in the cycle (output written)
  std::exception_ptr error;  // of a done call
};

class Coordinator {
 public:
  // Rank 0 of the global set autotunes if `settings.autotune` says so.
  // `timeline` (rank 0; may be null) receives the trace events.
  // Only the global set's coordinator autotunes (`global_set`): one tuner
  // and one log per job. `device` (may be null) runs CUDA tensors' collectives.
  // `hvdrun` (may be null) hears of the error that stops this coordinator.
  // `flight` (may be null): its recorder gets each collective's progress,
  // and a dump is written when a stall or a failure stops this coordinator.
  Coordinator(Controller& controller, Backend& backend, TensorQueue& queue,
              const CoordinatorSettings& settings, Timeline* timeline = nullptr,
              bool global_set = true, DeviceOperations* device = nullptr,
              HvdrunLink* hvdrun = nullptr, FlightRecorderDumps* flight = nullptr);
  ~Coordinator();  // stop() + join

  void start();
  // Asks every rank to stop at the next cycle; returns once this rank has.
  void stop();

  // Runs `call` in a cycle on this thread, if nothing else of this rank is
  // in flight (after any cycle another thread runs): when it hits the
  // response cache on every rank, alone, and (an allreduce) every rank's
  // input came with the bit vector (the inline allreduce), it completes
  // there (done; no entry, no Work, no queue). Otherwise it ends the
  // cycle as a queued entry (work set). False if it did not run (the
  // caller submits it as usual). Throws the error that stopped the
  // coordinator if one did before it was queued.
  bool run_alone(AloneCall& call);

  // Whether a coordinator of this process stopped on an error (a failure, a
  // stall, or a peer's shutdown that left collectives unfinished): the job
  // is failing, and a rank may be stuck outside any collective.
  static bool any_stopped_on_error() { return any_stopped_on_error_.load(); }

 private:
  // While a thread other than the coordinator's runs the cycles (help,
  // run_alone): keeps the coordinator's thread out of its way.
  class Helping;

  void loop();
  // A thread waiting for an operation runs the cycles until `done()`
  // (CoordinatorWakeup::help); false if another thread runs them.
  bool help(const std::function<bool()>& done);
  // One cycle, under cycle_mutex_; false once the coordinator has ended
  // (shutdown, or an error that failed every pending operation).
  bool cycle();
  // Returns false once the job is shutting down. Sets idle_cycle_.
  bool run_cycle();
  // run_cycle's end for alone_ when it was served: an allreduce reduces
  // every rank's inline input into its output (an error goes to the call).
  bool finish_alone();
  // Else, as soon as the AND is done: alone_ becomes an entry in flight.
  void queue_alone();
  // When the next cycle is due (see coordinator.cc), and whether it is
  // urgent (then only a new submission ends the sleep early, else also a
  // waiting thread or a full fusion buffer). Under cycle_mutex_.
  struct NextCycle {
    std::chrono::steady_clock::time_point at;
    bool urgent = false;
  };
  NextCycle next_cycle();
  void sleep_until(const NextCycle& next);
  // The coordinator's thread sleeps until a submission, a thread that needs
  // a cycle, or the dormant look; after a submission, it lets the burst
  // gather for a cycle time. False, without sleeping, if submissions
  // already wait for a cycle.
  bool sleep_dormant();
  // How long to wait for a submission before the next cycle while a cycle
  // is urgent but the last one achieved nothing.
  std::chrono::microseconds in_flight_backoff();
  // This cycle's new submissions (and their QUEUE phase on the timeline),
  // in new_requests_.
  std::vector<Request>& pop_new_requests();
  ResponseList negotiate(const RequestList& mine);
  // Rank 0: feeds the cycle's bytes to the autotuner; what it chooses goes
  // out with the next full round.
  void autotune(std::size_t bytes);
  // Every rank: the tuned values rank 0 broadcast, if any.
  void apply_tuning(const ResponseList& agreed);
  std::size_t fail_everything_left(std::exception_ptr reason);  // how many it failed
  // The job cannot go on after `error`: tells hvdrun, fails what is left.
  void stop_on(std::exception_ptr error);

  Controller& controller_;
  TensorQueue& queue_;
  Timeline* timeline_;           // null unless rank 0
  HvdrunLink* hvdrun_;           // null unless hvdrun launched this rank
  FlightRecorderDumps* flight_;  // may be null
  FlightRecorder* recorder_;     // flight_'s, or null
  const char* inline_label_;     // the backend a lone call is recorded on
  CollectiveExecutor executor_;
  MessageTable table_;                          // used on rank 0 only
  StallInspector stall_inspector_;              // used on rank 0 only; settings read at init
  std::unique_ptr<CacheNegotiation> cache_;     // null when the cache is disabled
  CacheNegotiation::InlineInput inline_input_;  // from executor_ and queue_
  bool join_pending_ = false;                   // this rank is in join(), waiting for the others
  std::chrono::microseconds cycle_time_;
  std::chrono::milliseconds dormant_look_;
  std::chrono::microseconds idle_spin_;
  std::optional<int> thread_cpu_;
  bool sigpipe_free_;
  // Of the last cycle (min: none yet).
  std::chrono::steady_clock::time_point cycle_start_ = std::chrono::steady_clock::time_point::min();
  // The last cycle brought nothing new from this rank and ran nothing.
  bool idle_cycle_ = false;
  int idle_cycles_in_a_row_ = 0;
  std::unique_ptr<Autotuner> autotuner_;      // rank 0 with HOROVODCPP_AUTOTUNE=1
  std::optional<TunedParams> tuned_to_send_;  // rank 0: chosen, not yet broadcast
  std::atomic<bool> stop_requested_{false};
  // Held by whichever thread runs cycles: this coordinator's, or one that
  // waits for a result (help).
  std::mutex cycle_mutex_;
  std::atomic<bool> helping_{false};  // a waiting thread holds cycle_mutex_ (help)
  static std::atomic<bool> any_stopped_on_error_;
  bool ended_ = false;                 // under cycle_mutex_
  std::exception_ptr ended_by_;        // the error that ended it, if one did
  AloneCall* alone_ = nullptr;         // run_alone's call, during its cycle
  std::vector<Request> new_requests_;  // the cycle's (pop_new_requests), reused
  std::thread thread_;
};

}  // namespace hvd
