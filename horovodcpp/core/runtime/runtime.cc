#include "core/runtime/runtime.h"

#include <algorithm>
#include <optional>

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "core/process_sets/process_set_rules.h"
#include "core/runtime/elastic_worker.h"
#include "core/runtime/thread_affinity.h"
#include "settings/settings.h"
#include "settings/slurm_environment.h"
#include "settings/torchrun_environment.h"

namespace hvd {
namespace {

using settings::Setting;

// Under `srun` without MPI's process management (no --mpi=pmix), or under
// torchrun, each rank's MPI would be a job of one: only Gloo meets the
// others. Names the launcher, or empty.
std::string launched_without_mpi() {
  const std::optional<slurm::StepTask> task = slurm::srun_task();
  if (task) return task->mpi_launched ? "" : "srun without --mpi=pmix";
  return torchrun::launched_task() ? "torchrun (RANK, WORLD_SIZE, MASTER_ADDR)" : "";
}

std::string chosen_transport(const BackendFactory& backends) {
  std::string name = settings::read_string(Setting::kCpuOperations);
  if (name.empty()) name = settings::read_string(Setting::kController);
  if (!name.empty()) {
    const std::string launcher = name == "mpi" ? launched_without_mpi() : "";
    HVD_CHECK(launcher.empty(), InvalidArgument,
              "MPI was asked for, but " << launcher << " started this rank: its MPI would be a "
                                        << "job of one; use Gloo, or launch with hvdrun --mpi");
    return name;
  }
  const std::vector<std::string> available = backends.transports();
  if (const std::string launcher = launched_without_mpi(); !launcher.empty()) {
    HVD_CHECK(std::find(available.begin(), available.end(), "gloo") != available.end(),
              InvalidArgument,
              "started by " << launcher << ", and this build has no Gloo to meet the other "
                            << "ranks with: launch with hvdrun or srun --mpi=pmix (MPI), or "
                               "build with Gloo");
    return "gloo";
  }
  return available.front();
}

// Whether every rank has the same local_size: rank 0 gathers them and
// broadcasts its verdict. Runs once, before the coordinator owns `controller`.
bool agree_homogeneous(Controller& controller) {
  const std::vector<std::string> sizes =
      controller.gather_to_root(std::to_string(controller.topology().local_size));
  std::string verdict = "1";  // what rank 0 decides; the others' `sizes` are empty
  for (const std::string& size : sizes) {
    if (size != sizes.front()) verdict = "0";
  }
  return controller.broadcast_from_root(verdict) == "1";
}

std::string set_str(const ProcessSet& set) {
  return std::to_string(set.id()) + " " + rank_list_str(set.ranks());
}

}  // namespace

Runtime::Runtime(BackendFactory backends, const std::vector<std::vector<int>>& process_sets,
                 const std::vector<int>& world_ranks)
    : backends_(std::move(backends)),
      transport_name_(chosen_transport(backends_)),
      coordinator_settings_(CoordinatorSettings::read()),
      timeline_(settings::read_int(Setting::kTimelineMaxBytes)),
      process_set_timeout_(
          settings::timeout_of(settings::read_seconds(Setting::kProcessSetTimeoutSeconds))) {
  check_elastic_transport(transport_name_);
  Transport transport = backends_.create_transport(transport_name_, world_ranks);
  channel_ = std::move(transport.process_sets);
  homogeneous_ = agree_homogeneous(*transport.controller);
  const Topology& job = transport.controller->topology();
  set_log_rank(job.rank);
  coordinator_settings_.thread_cpu = thread_affinity_from_settings(job.local_rank, job.local_size);
  hvdrun_ = HvdrunLink::connect(job.rank);
  if (job.rank == 0) {
    for (const std::string& line : settings::no_effect_warnings()) HVD_LOG(Warning) << line;
    // "DYNAMIC" (Horovod's word): no file until start_timeline() names one.
    const std::string path = settings::read_string(Setting::kTimeline);
    if (!path.empty() && path != "DYNAMIC") {
      timeline_.start(path, settings::read_bool(Setting::kTimelineMarkCycles));
    }
  }
  std::vector<int> everyone(static_cast<std::size_t>(job.size));
  for (int r = 0; r < job.size; ++r) everyone[static_cast<std::size_t>(r)] = r;
  ProcessSet global(0, std::move(everyone), job.rank);
  flight_ = FlightRecorderDumps::from_env(job.rank, job.size);
  if (flight_) flight_->watch_signal();
  global_ = std::make_shared<ProcessSetRuntime>(
      global, std::move(transport), backends_, coordinator_settings_,
      job.rank == 0 ? &timeline_ : nullptr, channel_.get(), hvdrun_.get(), flight_.get());
  sets_.emplace(0, Registered{global, global_});
  try {
    for (const std::vector<int>& ranks : process_sets) add_process_set(ranks);
  } catch (...) {
    stop_process_sets();
    global_->stop();
    set_log_rank(-1);
    throw;
  }
  HVD_LOG(Debug) << "initialized: rank " << topology().rank << " of " << topology().size
                 << ", backend " << global_->backend_name() << ", " << process_sets.size()
                 << " process sets";
}

Runtime::~Runtime() {
  stop_process_sets();
  global_->stop();  // joins the thread before the transport goes away
  timeline_.stop();
  set_log_rank(-1);
}

void Runtime::stop_process_sets() {
  std::map<int, Registered> added;
  {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    for (auto it = sets_.begin(); it != sets_.end();) {
      if (it->first == 0) {
        ++it;
        continue;
      }
      added.insert(sets_.extract(it++));
    }
  }
  for (auto& [id, entry] : added) {
    if (entry.runtime) entry.runtime->stop();
  }
}

std::string Runtime::dump_flight_recorder(const std::string& reason) {
  return flight_ && flight_->dump(reason) ? flight_->path() : "";
}

void Runtime::start_timeline(const std::string& path, bool mark_cycles) {
  if (topology().rank == 0) timeline_.start(path, mark_cycles);
}

void Runtime::stop_timeline() {
  if (topology().rank == 0) timeline_.stop();
}

const Runtime::Registered& Runtime::registered(const ProcessSet& process_set) const {
  const auto it = sets_.find(process_set.id());
  HVD_CHECK(it != sets_.end() && it->second.set == process_set, InvalidArgument,
            "process set " << set_str(process_set)
                           << " is not registered (it was removed, or never added in this "
                              "init)");
  return it->second;
}

std::shared_ptr<ProcessSetRuntime> Runtime::member_runtime(const ProcessSet& process_set) const {
  // The global set, which every rank is in and which is never removed,
  // needs no look-up (nearly every collective goes to it).
  if (process_set == global_->set()) return global_;
  std::lock_guard<std::mutex> lock(sets_mutex_);
  const Registered& entry = registered(process_set);
  HVD_CHECK(entry.runtime != nullptr, InvalidArgument,
            "rank " << topology().rank << " is not a member of process set " << set_str(process_set)
                    << " and cannot submit to it");
  return entry.runtime;
}

Work Runtime::submit(Request request, const TensorView& input, const TensorView& output,
                     const ProcessSet& process_set) {
  return member_runtime(process_set)->submit(std::move(request), input, output);
}

void Runtime::run_blocking(Request request, const TensorView& input, const TensorView& output,
                           const ProcessSet& process_set,
                           std::optional<std::chrono::milliseconds> timeout) {
  member_runtime(process_set)->run_blocking(std::move(request), input, output, timeout);
}

std::vector<Work> Runtime::submit_group(const Request& request,
                                        const std::vector<TensorView>& inputs,
                                        const std::vector<TensorView>& outputs,
                                        const ProcessSet& process_set) {
  return member_runtime(process_set)->submit_group(request, inputs, outputs);
}

std::vector<Work> Runtime::submit_each(std::vector<Request> requests,
                                       const std::vector<TensorView>& inputs,
                                       const ProcessSet& process_set) {
  return member_runtime(process_set)->submit_each(std::move(requests), inputs);
}

std::vector<ProcessSet> Runtime::process_sets() const {
  std::lock_guard<std::mutex> lock(sets_mutex_);
  std::vector<ProcessSet> sets;
  for (const auto& [id, entry] : sets_) sets.push_back(entry.set);
  return sets;
}

void Runtime::agree(const std::string& call) {
  HVD_CHECK(broken_.empty(), BackendError,
            call << ": process sets can no longer change in this run (shutdown() and init() "
                    "start afresh): "
                 << broken_);
  std::vector<std::string> calls;
  try {
    calls = channel_->allgather(call, process_set_timeout_);
  } catch (const Timeout& e) {
    broken_ = std::string("an earlier call timed out: ") + e.what();
    HVD_THROW(Timeout, call << ": " << e.what()
                            << "; every rank must make the same add_process_set / "
                               "remove_process_set calls in the same order");
  }
  const std::string diff = call_disagreement(calls);
  HVD_CHECK(diff.empty(), InvalidArgument,
            "process sets must be added and removed by every rank, in the same order and with "
            "the same arguments, but the ranks' calls differ: "
                << diff);
}

ProcessSet Runtime::add_process_set(std::vector<int> ranks) {
  std::lock_guard<std::mutex> management(management_mutex_);
  // Agreement comes first, so that every rank sees the same (possibly
  // invalid) arguments and reaches the same verdict on them.
  std::sort(ranks.begin(), ranks.end());
  agree("add_process_set(" + rank_list_str(ranks) + ")");
  check_process_set_ranks(ranks, topology().size);
  for (const ProcessSet& existing : process_sets()) {
    HVD_CHECK(existing.ranks() != ranks, InvalidArgument,
              "process set already exists: " << rank_list_str(ranks) << " is process set "
                                             << existing.id());
  }
  const int id = next_id_++;
  ProcessSet set(id, ranks, topology().rank);
  Transport transport = channel_->create_transport(id, ranks);
  std::shared_ptr<ProcessSetRuntime> runtime;
  if (set.included()) {
    runtime = std::make_shared<ProcessSetRuntime>(set, std::move(transport), backends_,
                                                  coordinator_settings_, nullptr, nullptr,
                                                  hvdrun_.get(), flight_.get());
  }
  std::lock_guard<std::mutex> lock(sets_mutex_);
  sets_.emplace(id, Registered{set, std::move(runtime)});
  HVD_LOG(Debug) << "added process set " << set_str(set);
  return set;
}

void Runtime::remove_process_set(const ProcessSet& process_set) {
  std::lock_guard<std::mutex> management(management_mutex_);
  agree("remove_process_set(" + set_str(process_set) + ")");
  HVD_CHECK(process_set.id() != 0, InvalidArgument, "the global process set cannot be removed");
  std::shared_ptr<ProcessSetRuntime> runtime;
  {
    std::lock_guard<std::mutex> lock(sets_mutex_);
    runtime = registered(process_set).runtime;
    sets_.erase(process_set.id());
  }
  // Submissions now fail with InvalidArgument; what is pending fails as the
  // members' coordinators stop together.
  if (runtime) runtime->stop();
  HVD_LOG(Debug) << "removed process set " << set_str(process_set);
}

}  // namespace hvd
