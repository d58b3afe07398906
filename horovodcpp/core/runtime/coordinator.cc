#include "core/runtime/coordinator.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <sstream>

#include "base/check.h"
#include "base/error_message.h"
#include "core/diagnostics/logging.h"
#include "core/diagnostics/nvtx_ranges.h"
#include "core/runtime/thread_affinity.h"
#include "core/runtime/usable_cpus.h"
#include "settings/settings.h"

namespace hvd {
namespace {

// A cache hit that waits this long for other ranks is renegotiated through
// rank 0, where the stall inspector reports it (and can shut down on it).
std::chrono::milliseconds hit_stall_time(const StallInspector& inspector) {
  const StallSettings& s = inspector.settings();
  const double seconds = s.check_seconds > 0 ? s.check_seconds : s.shutdown_seconds;
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

// The transports write to sockets from the thread that runs a cycle: a
// write to a peer that died must fail (and name the peer), not kill the
// process with SIGPIPE before it can say anything (only where the
// transport is not Transport::sigpipe_free: `active` false, and nothing
// changes). Only this thread's mask changes, for the object's lifetime; a
// SIGPIPE raised meanwhile is consumed, not delivered when the mask is
// restored.
class SigpipeBlocked {
 public:
  explicit SigpipeBlocked(bool active) : active_(active) {
    if (!active_) return;
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t previous;
    pthread_sigmask(SIG_BLOCK, &pipe_, &previous);
    was_blocked_ = sigismember(&previous, SIGPIPE) == 1;
  }
  ~SigpipeBlocked() {
    if (!active_ || was_blocked_) return;
    sigset_t pending;
    sigpending(&pending);
    if (sigismember(&pending, SIGPIPE) == 1) {
      const timespec now{0, 0};
      sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_UNBLOCK, &pipe_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  bool active_;
  sigset_t pipe_{};
  bool was_blocked_ = false;
};

// Polling pays only where it takes no core that work needs: each rank has
// two busy threads, the one training and the coordinator (docs/internals.md,
// "Latency and waiting").
std::chrono::microseconds default_idle_spin(const Topology& topology) {
  const bool spare_cores = 2 * topology.local_size <= usable_cpus();
  return std::chrono::microseconds(spare_cores ? 50 : 0);
}

std::string shutdown_message(const std::vector<std::int32_t>& ranks) {
  std::ostringstream out;
  out << "horovodcpp was shut down (shutdown() called on rank";
  out << (ranks.size() > 1 ? "s " : " ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  out << ") before this operation completed on every rank";
  return out.str();
}

}  // namespace

// When the thread leaves with work still urgent (another thread waits), it
// hands the cycles back at once.
class Coordinator::Helping {
 public:
  explicit Helping(Coordinator& coordinator) : c_(coordinator) { c_.helping_ = true; }
  ~Helping() {
    c_.helping_ = false;
    if (c_.queue_.urgent()) c_.queue_.wakeup()->wake();
  }
  Helping(const Helping&) = delete;
  Helping& operator=(const Helping&) = delete;

 private:
  Coordinator& c_;
};

CoordinatorSettings CoordinatorSettings::read() {
  using settings::Setting;
  CoordinatorSettings s;
  s.cycle_time = std::chrono::microseconds(
      static_cast<long long>(settings::read_milliseconds(Setting::kCycleTime) * 1000));
  if (settings::is_set(Setting::kIdleSpinMicroseconds)) {
    s.idle_spin = std::chrono::microseconds(settings::read_int(Setting::kIdleSpinMicroseconds));
  }
  s.fusion_threshold = static_cast<std::size_t>(settings::read_int(Setting::kFusionThreshold));
  s.cache_capacity = ResponseCache::capacity_from_env();
  s.stall = StallSettings::from_env();
  // Read on every rank, so that bad values fail everywhere alike.
  s.autotune = autotune_settings_from_environment();
  return s;
}

Coordinator::Coordinator(Controller& controller, Backend& backend, TensorQueue& queue,
                         const CoordinatorSettings& settings, Timeline* timeline, bool global_set,
                         DeviceOperations* device, HvdrunLink* hvdrun, FlightRecorderDumps* flight)
    : controller_(controller),
      queue_(queue),
      timeline_(timeline),
      hvdrun_(hvdrun),
      flight_(flight),
      recorder_(flight ? &flight->recorder() : nullptr),
      inline_label_(recorder_ ? recorder_->intern("inline") : ""),
      executor_(backend, controller.topology(), timeline, device, settings.fusion_threshold,
                recorder_),
      table_(controller.topology().size),
      stall_inspector_(settings.stall),
      cycle_time_(settings.cycle_time),
      dormant_look_(settings.dormant_look),
      idle_spin_(settings.idle_spin.value_or(default_idle_spin(controller.topology()))),
      thread_cpu_(settings.thread_cpu),
      sigpipe_free_(settings.sigpipe_free) {
  queue_.wakeup()->set_wait_spin(idle_spin_);
  queue_.set_urgent_bytes(settings.fusion_threshold);
  if (settings.cache_capacity > 0) {
    cache_ = std::make_unique<CacheNegotiation>(settings.cache_capacity,
                                                hit_stall_time(stall_inspector_));
    inline_input_ = [this](const Request& request, std::size_t capacity, std::string& out) {
      const TensorView* input = alone_ && request.name == alone_->request.name
                                    ? &alone_->input
                                    : queue_.input_of(request.name);
      return executor_.inline_input(request, capacity, input, out);
    };
  }
  if (global_set && controller.topology().rank == 0 && settings.autotune.enabled) {
    autotuner_ = std::make_unique<Autotuner>(
        settings.autotune, TunedParams{executor_.fusion_threshold(), cycle_time_});
  }
}

Coordinator::~Coordinator() { stop(); }

void Coordinator::start() {
  queue_.wakeup()->set_helper([this](const std::function<bool()>& done) { return help(done); });
  thread_ = std::thread([this] { loop(); });
  // Named for top -H, gdb and /proc/PID/task/*/comm.
  pthread_setname_np(thread_.native_handle(), "hvd-coordinator");
  if (thread_cpu_) pin_thread(thread_, *thread_cpu_);
}

void Coordinator::stop() {
  stop_requested_ = true;
  queue_.wakeup()->interrupt();  // no more waiting for the cycle time
  if (thread_.joinable()) thread_.join();
  queue_.wakeup()->set_helper(nullptr);  // waits for a thread running cycles
}

void Coordinator::loop() {
  const SigpipeBlocked blocked(!sigpipe_free_);
  // Looks in a row at which this rank's waiting threads had run the cycles.
  int helped_looks = 0;
  while (true) {
    NextCycle next;
    bool helper_holds_cycles = false;
    bool helped = false;
    {
      std::unique_lock<std::mutex> lock(cycle_mutex_, std::try_to_lock);
      if (lock.owns_lock()) {
        if (ended_) return;
        // A waiting thread's cycle began less than a cycle time ago: the
        // pace counts from it. (stop() needs a cycle now: its shutdown goes
        // out with one.)
        helped = !stop_requested_ && !queue_.urgent() &&
                 std::chrono::steady_clock::now() < cycle_start_ + cycle_time_;
        if (!helped && !cycle()) return;
        next = next_cycle();
      } else {
        helper_holds_cycles = helped = true;
      }
    }
    helped_looks = helped ? helped_looks + 1 : 0;
    // Twice in a row: a loop of blocking collectives, which needs this
    // thread only if the loop ends or something else is submitted.
    if (helped_looks >= 2) {
      helped_looks = 0;  // the look after a dormant sleep is paced again
      if (sleep_dormant()) continue;
    }
    if (helper_holds_cycles) {
      // This thread would only take the lock from the waiting thread
      // between two of its collectives and make it sleep. Look again a
      // cycle time later, or once it has left while a cycle is needed (it
      // wakes this thread then).
      queue_.wakeup()->sleep_until(std::chrono::steady_clock::now() + cycle_time_,
                                   std::chrono::microseconds(0),
                                   [this] { return !helping_.load(); });
      continue;
    }
    sleep_until(next);
  }
}

bool Coordinator::sleep_dormant() {
  CoordinatorWakeup& wakeup = *queue_.wakeup();
  wakeup.set_dormant(true);
  if (queue_.has_new()) {
    wakeup.set_dormant(false);
    return false;
  }
  const auto now = std::chrono::steady_clock::now();
  wakeup.sleep_until(now + std::max<std::chrono::microseconds>(dormant_look_, cycle_time_),
                     std::chrono::microseconds(0),
                     [&] { return !wakeup.dormant() || queue_.urgent(); });
  const bool submitted = !wakeup.dormant();
  wakeup.set_dormant(false);
  if (submitted && !queue_.urgent()) {
    // Horovod's pacing: the burst that submission began goes out together.
    queue_.wait_until_urgent(std::chrono::steady_clock::now() + cycle_time_, idle_spin_);
  }
  return true;
}

bool Coordinator::help(const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(cycle_mutex_, std::try_to_lock);
  if (!lock.owns_lock() || ended_) return false;
  const Helping helping(*this);  // the coordinator's thread stays out of the way (loop)
  const SigpipeBlocked blocked(!sigpipe_free_);  // three system calls: only where needed
  while (!done()) {
    if (!cycle()) return true;  // every pending operation has failed
    if (done()) break;
    // The others have not submitted what this thread waits for yet.
    if (const auto backoff = in_flight_backoff(); backoff.count() > 0) {
      lock.unlock();
      queue_.wait_for_new(std::chrono::steady_clock::now() + backoff);
      lock.lock();
      if (ended_) return true;
    }
  }
  return true;
}

bool Coordinator::run_alone(AloneCall& call) {
  const Request& request = call.request;
  const bool barrier = request.op_type == OpType::kBarrier && request.error.empty();
  if (!cache_ ||
      !(barrier ||
        CollectiveExecutor::goes_inline(request, call.input, controller_.payload_capacity())) ||
      (timeline_ && timeline_->active())) {
    return false;
  }
  // Waits if another thread runs a cycle (mostly the coordinator's, looking
  // whether one is due): falling back would queue the call and sleep until
  // that thread has run it.
  std::unique_lock<std::mutex> lock(cycle_mutex_);
  if (ended_ || stop_requested_ || join_pending_) return false;
  if (!queue_.reserve_alone(&request.name)) return false;
  {
    const Helping helping(*this);
    const SigpipeBlocked blocked(!sigpipe_free_);
    alone_ = &call;
    cycle();
    alone_ = nullptr;
  }
  if (call.work) return true;  // queued: its Work reports its end, errors included
  queue_.release_alone();
  if (call.done) return true;
  // The cycle failed before the call was queued.
  HVD_CHECK(ended_by_ != nullptr, Error, "a cycle ended without completing or queueing its call");
  std::rethrow_exception(ended_by_);
}

bool Coordinator::cycle() {
  try {
    if (run_cycle()) return true;
  } catch (const Error& e) {
    // Typed errors (RankFailure for a lost peer, BackendError, ...) reach
    // every pending Work as they are.
    HVD_LOG(Error) << "coordinator stopped: " << e.what();
    stop_on(std::current_exception());
  } catch (const std::exception& e) {
    HVD_LOG(Error) << "coordinator stopped: " << e.what();
    stop_on(std::make_exception_ptr(
        BackendError(std::string("horovodcpp coordinator failed: ") + e.what())));
  }
  ended_ = true;
  return false;
}

std::atomic<bool> Coordinator::any_stopped_on_error_{false};

void Coordinator::stop_on(std::exception_ptr error) {
  any_stopped_on_error_ = true;
  if (hvdrun_) hvdrun_->report_failure(error);
  fail_everything_left(error);
  if (flight_) flight_->dump(message_of(error));
}

Coordinator::NextCycle Coordinator::next_cycle() {
  const auto now = std::chrono::steady_clock::now();
  if (!queue_.urgent()) {
    // Submissions gather until the next cycle is due, the cycle time after
    // the last one began (Horovod's pacing): a backward pass's gradients are
    // negotiated and fused together, not one cycle each. An idle rank
    // cycles at that pace too (every rank must join every cycle, and
    // shutdown and the stall inspector need cycles).
    idle_cycles_in_a_row_ = 0;
    return {cycle_start_ + cycle_time_, false};
  }
  // A thread waits for a result (or the fusion buffer is full): the next
  // cycle starts at once, so that its collective pairs with the other
  // ranks' the moment they enter theirs and a lone tensor never waits for
  // the timer.
  return {now + in_flight_backoff(), true};
}

void Coordinator::sleep_until(const NextCycle& next) {
  if (!next.urgent) {
    queue_.wait_until_urgent(next.at, idle_spin_);
  } else if (next.at > std::chrono::steady_clock::now()) {
    queue_.wait_for_new(next.at);
  }
}

std::chrono::microseconds Coordinator::in_flight_backoff() {
  if (!idle_cycle_) {
    idle_cycles_in_a_row_ = 0;
    return std::chrono::microseconds(0);
  }
  // While this rank waits for tensors the others have not submitted yet,
  // back-to-back cycles complete at once and achieve nothing: two
  // coordinators would burn the cores the training needs. So after idle
  // cycles wait, 10 us doubling up to a quarter of the cycle time, or until
  // this rank submits. A peer that submits meanwhile waits in its
  // collective at most that long.
  const int doublings = std::min(idle_cycles_in_a_row_++, 16);
  return std::min(std::chrono::microseconds(10) * (1 << doublings), cycle_time_ / 4);
}

bool Coordinator::run_cycle() {
  cycle_start_ = std::chrono::steady_clock::now();
  std::vector<Request>& new_requests = pop_new_requests();
  if (alone_) {
    new_requests.push_back(alone_->request);
    if (recorder_) recorder_->seen(alone_->request.flight_number, cycle_start_);
  }
  const bool submitted = !new_requests.empty();
  for (const Request& request : new_requests) {
    if (request.op_type == OpType::kJoin) join_pending_ = true;
  }
  const bool stopping = stop_requested_;
  // An NVTX range over the negotiation of this rank's new requests (not of
  // idle cycles: a thousand a second would drown the trace).
  const std::uint64_t negotiating = submitted ? nvtx_range_start("NEGOTIATE") : 0;
  RequestList mine;
  std::vector<const Response*> responses;  // the cache's and the full round's
  bool full_round = true;
  bool inline_data = false;  // responses.front() came with every rank's input
  if (cache_) {
    CycleFlags flags;
    flags.shutdown = stopping;
    flags.joined = join_pending_;
    flags.root_busy =
        controller_.topology().rank == 0 && (table_.pending() > 0 || tuned_to_send_.has_value());
    CacheNegotiation::Outcome outcome =
        cache_->agree(std::move(new_requests), flags, controller_, cycle_start_, inline_input_);
    responses = std::move(outcome.ready);
    mine.requests = std::move(outcome.to_negotiate);
    full_round = outcome.full_round;
    inline_data = outcome.inline_data;
  } else {
    mine.requests = std::move(new_requests);
  }
  if (alone_) {
    // Served from the cache on every rank, alone; an allreduce with every
    // rank's input (a barrier has nothing to run).
    const bool done = !full_round && responses.size() == 1 &&
                      responses.front()->name == alone_->request.name &&
                      (inline_data || alone_->request.op_type == OpType::kBarrier);
    if (done) {
      nvtx_range_end(negotiating);
      return finish_alone();
    }
    queue_alone();
  }
  ResponseList agreed;
  if (full_round) {
    mine.shutdown = stopping;
    agreed = negotiate(mine);
    apply_tuning(agreed);
    for (const Response& response : agreed.responses) responses.push_back(&response);
  }
  nvtx_range_end(negotiating);

  idle_cycle_ = !submitted && responses.empty();
  std::size_t bytes = 0;
  if (inline_data) {
    bytes =
        executor_.execute_inline(*responses.front(), cache_->inline_inputs(), queue_, cycle_start_);
    responses.erase(responses.begin());
  }
  if (!responses.empty()) bytes += executor_.execute_all(responses, queue_, cycle_start_);
  // A peer lost in a collective stops this rank now: the next cycle's
  // negotiation would only wait a peer timeout for it before failing alike.
  if (std::exception_ptr lost = executor_.take_peer_lost()) std::rethrow_exception(lost);
  if (autotuner_) autotune(bytes);
  if (cache_) cache_->update(agreed.responses);
  for (const Response& response : agreed.responses) {
    if (response.op_type == OpType::kJoin) join_pending_ = false;
  }
  if (agreed.shutdown_ranks.empty() && agreed.stall_error.empty()) return true;
  // A shutdown() or rank 0's stall inspector stops every rank after this
  // cycle; a shutdown() explains a stall, so its message wins.
  // (Not reported to hvdrun: every rank is alive and gets this error, and
  // the application decides what follows.)
  const std::string reason =
      agreed.shutdown_ranks.empty() ? agreed.stall_error : shutdown_message(agreed.shutdown_ranks);
  const std::size_t left = fail_everything_left(std::make_exception_ptr(RankFailure(reason)));
  // A stall (every rank, the one that held it up included), or a shutdown
  // that left collectives unfinished: what each rank was doing.
  if (!agreed.stall_error.empty() || left > 0) {
    any_stopped_on_error_ = true;
    if (flight_) flight_->dump(reason);
  }
  return false;
}

bool Coordinator::finish_alone() {
  AloneCall& call = *alone_;
  alone_ = nullptr;
  std::size_t bytes = 0;
  if (recorder_) {
    recorder_->launched(call.request.flight_number, call.request.flight_number, inline_label_,
                        cycle_start_, cycle_start_);
  }
  try {
    if (call.request.op_type == OpType::kAllreduce) {
      bytes = executor_.reduce_inline(call.request, call.output, cache_->inline_inputs());
    }
  } catch (...) {
    call.error = std::current_exception();
  }
  if (recorder_) {
    // The cycle's clock reading: a lone call ends within microseconds of
    // it, and a clock read would cost as much as a tenth of the call.
    if (call.error) {
      recorder_->failed(call.request.flight_number, "the inline allreduce failed", cycle_start_);
    } else {
      recorder_->completed(call.request.flight_number, cycle_start_);
    }
  }
  call.done = true;
  idle_cycle_ = false;
  if (autotuner_) autotune(bytes);
  cache_->update({});
  return true;
}

void Coordinator::queue_alone() {
  AloneCall& call = *alone_;
  alone_ = nullptr;
  TensorEntry entry;
  entry.request = call.request;  // a copy: the name stays reserved until adopted
  entry.input = call.input;
  entry.output = call.output;
  entry.work = std::make_shared<detail::WorkState>(queue_.wakeup());
  entry.work->record_in(recorder_, entry.request.flight_number);
  call.work = entry.work;
  queue_.adopt_alone(std::move(entry));
}

std::vector<Request>& Coordinator::pop_new_requests() {
  std::vector<Request>& requests = new_requests_;
  requests.clear();
  if (!timeline_ || !timeline_->active()) {
    queue_.pop_new_requests(requests);
    if (recorder_) {
      for (const Request& request : requests) recorder_->seen(request.flight_number, cycle_start_);
    }
    return requests;
  }
  timeline_->cycle_mark();
  std::vector<std::chrono::steady_clock::time_point> submitted;
  queue_.pop_new_requests(requests, &submitted);
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < submitted.size(); ++i) {
    if (recorder_) recorder_->seen(requests[i].flight_number, cycle_start_);
    // (Unstamped: submitted before the timeline started.)
    if (submitted[i] == std::chrono::steady_clock::time_point{}) continue;
    timeline_->complete(requests[i].name, "QUEUE", submitted[i], now);
  }
  return requests;
}

ResponseList Coordinator::negotiate(const RequestList& mine) {
  std::vector<std::string> gathered = controller_.gather_to_root(serialize(mine));
  std::string agreed;
  if (controller_.topology().rank == 0) {
    ResponseList responses;
    for (std::size_t rank = 0; rank < gathered.size(); ++rank) {
      RequestList list = parse_request_list(gathered[rank]);
      if (list.shutdown) responses.shutdown_ranks.push_back(static_cast<std::int32_t>(rank));
      for (Request& request : list.requests) {
        request.rank = static_cast<std::int32_t>(rank);
        if (timeline_) {
          timeline_->negotiate_arrival(request.name, request.rank,
                                       std::chrono::steady_clock::now());
        }
        table_.add(std::move(request));
      }
    }
    responses.responses = table_.take_ready();
    if (timeline_) {
      const auto now = std::chrono::steady_clock::now();
      for (const Response& response : responses.responses) {
        timeline_->negotiate_done(response.name, now);
      }
    }
    responses.stall_error = stall_inspector_.inspect(table_).error;
    if (tuned_to_send_) {
      responses.fusion_threshold =
          static_cast<std::int64_t>(tuned_to_send_->fusion_threshold_bytes);
      responses.cycle_time_us = tuned_to_send_->cycle_time.count();
      tuned_to_send_.reset();
    }
    agreed = serialize(responses);
  }
  return parse_response_list(controller_.broadcast_from_root(agreed));
}

void Coordinator::autotune(std::size_t bytes) {
  if (!autotuner_->active()) return;
  if (auto chosen = autotuner_->record_cycle(bytes, std::chrono::steady_clock::now())) {
    tuned_to_send_ = chosen;
  }
}

void Coordinator::apply_tuning(const ResponseList& agreed) {
  if (agreed.fusion_threshold >= 0) {
    executor_.set_fusion_threshold(static_cast<std::size_t>(agreed.fusion_threshold));
    queue_.set_urgent_bytes(executor_.fusion_threshold());
  }
  if (agreed.cycle_time_us >= 0) cycle_time_ = std::chrono::microseconds(agreed.cycle_time_us);
  if (agreed.fusion_threshold >= 0 || agreed.cycle_time_us >= 0) {
    HVD_LOG(Debug) << "autotune: fusion threshold " << executor_.fusion_threshold()
                   << " bytes, cycle time " << cycle_time_.count() << " us";
  }
}

std::size_t Coordinator::fail_everything_left(std::exception_ptr reason) {
  ended_by_ = reason;
  std::vector<TensorEntry> left = queue_.close(reason);
  for (TensorEntry& entry : left) entry.work->fail(reason);
  return left.size();
}

}  // namespace hvd
