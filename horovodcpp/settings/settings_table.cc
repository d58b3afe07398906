// The table of settings: every variable the ranks and hvdrun read. hvdrun
// --help and docs/settings.md are generated from it (settings_doc.cc).
#include <cstdlib>

#include "settings/settings.h"

namespace hvd {
namespace settings {
namespace {

constexpr double kIntMax = 2147483647.0;
constexpr double kMaxBytes = 1e15;   // beyond any buffer; keeps the value exact in a double
constexpr double kMaxSeconds = 1e7;  // about 4 months: a timeout, not a typo
constexpr bool kHorovod = true;      // Horovod 0.28.1 has this setting
constexpr bool kOurs = false;        // horovodcpp only

using S = Setting;
using T = Type;

std::vector<Entry> build() {
  const Scope rank = Scope::kRank, hvdrun = Scope::kSetByHvdrun, launcher = Scope::kLauncher,
              no_effect = Scope::kNoEffect;
  std::vector<Entry> t = {
      {S::kCycleTime, "CYCLE_TIME", kHorovod, T::kMilliseconds, rank, "1", 0, 1e6, "",
       "the pace of negotiation cycles: submissions gather for up to this long, so that a "
       "backward pass's gradients are negotiated and fused together",
       "A thread waiting for a result (Work::wait, synchronize) or a full fusion buffer starts a "
       "cycle at once, so a lone blocking collective never waits for it "
       "([waiting](internals.md#latency-and-waiting))"},
      {S::kIdleSpinMicroseconds, "IDLE_SPIN_MICROSECONDS", kOurs, T::kInt, rank, "", 0, kIntMax, "",
       "microseconds a coordinator between cycles polls for a waiting thread, and a waiting thread "
       "for its result, before they sleep",
       "A wake-up from sleep costs tens of microseconds, more than a small collective; polling "
       "pays where cores are spare and costs the training thread its core where they are not "
       "(on a 2-core machine with 2 ranks it made a 4-byte allreduce slower, see "
       "[waiting](internals.md#latency-and-waiting))",
       nullptr, std::nullopt,
       "50 where the host has two cores for each of its ranks (the training thread and the "
       "coordinator), else 0"},
      {S::kFusionThreshold, "FUSION_THRESHOLD", kHorovod, T::kBytes, rank, "67108864", 0, kMaxBytes,
       "", "bytes of the tensor fusion buffer (64 MiB); 0 disables fusion",
       "See [tensor fusion](internals.md#tensor-fusion)"},
      {S::kCacheCapacity, "CACHE_CAPACITY", kHorovod, T::kInt, rank, "1024", 0, kIntMax, "",
       "entries of the response cache; 0 disables it",
       "See [response cache](internals.md#response-cache)"},
      {S::kAutotune, "AUTOTUNE", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: rank 0 tunes the fusion threshold and cycle time (those not set explicitly)",
       "Rank 0 measures throughput during the first steps and broadcasts its choice; a value set "
       "explicitly (`HOROVODCPP_FUSION_THRESHOLD`, `HOROVODCPP_CYCLE_TIME`) stays fixed "
       "([autotune](internals.md#autotune))"},
      {S::kAutotuneLog, "AUTOTUNE_LOG", kHorovod, T::kString, rank, "", 0, 0, "",
       "rank 0 writes each autotune sample (and the final choice) to this CSV file"},
      {S::kAutotuneWarmupSamples, "AUTOTUNE_WARMUP_SAMPLES", kHorovod, T::kInt, rank, "3", 0,
       kIntMax, "", "autotune samples discarded before the first trial"},
      {S::kAutotuneStepsPerSample, "AUTOTUNE_STEPS_PER_SAMPLE", kHorovod, T::kInt, rank, "10", 1,
       kIntMax, "", "non-idle coordinator cycles per autotune sample",
       "Raise it so a sample spans several training steps"},
      {S::kAutotuneBayesOptMaxSamples, "AUTOTUNE_BAYES_OPT_MAX_SAMPLES", kHorovod, T::kInt, rank,
       "20", 1, kIntMax, "", "at most this many autotune trial samples",
       "Horovod's name; the search here is a sweep of each knob, about 10 samples"},

      {S::kLogLevel, "LOG_LEVEL", kHorovod, T::kEnum, rank, "warning", 0, 0,
       "trace|debug|info|warning|error|fatal",
       "the least severe messages logged (fatal logs as error); every line carries the rank",
       "Any case, as in Horovod (horovodrun passes `DEBUG`). Unlike other settings, an unknown "
       "value is not an error: it logs at `warning` and says so once"},
      {S::kLogHideTime, "LOG_HIDE_TIME", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: log lines without the local time (by default each carries it, to the microsecond, "
       "as Horovod's do)",
       "A malformed value is reported once and the default kept (logging cannot fail)"},
      {S::kTimeline, "TIMELINE", kHorovod, T::kString, rank, "", 0, 0, "",
       "rank 0 writes a Chrome-trace timeline to this file; DYNAMIC: no file until "
       "start_timeline()",
       "See [timeline](internals.md#timeline); hvdrun `--timeline-filename`. `DYNAMIC` is "
       "Horovod's "
       "word: `start_timeline(path)` / `stop_timeline()` record at run time"},
      {S::kTimelineMarkCycles, "TIMELINE_MARK_CYCLES", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: the timeline marks each coordinator cycle"},
      {S::kTimelineMaxBytes, "TIMELINE_MAX_BYTES", kOurs, T::kBytes, rank, "268435456", 0,
       kMaxBytes, "", "the timeline file stops growing here (256 MiB)",
       "A note in the file says how many events were left out"},

      {S::kCpuOperations, "CPU_OPERATIONS", kHorovod, T::kEnum, rank, "", 0, 0, "mpi|gloo",
       "which transport runs the job", "", nullptr, std::nullopt,
       "the first this build has: `mpi`, else `gloo` (hvdrun `--gloo` sets `gloo`)"},
      {S::kController, "CONTROLLER", kHorovod, T::kEnum, rank, "", 0, 0, "mpi|gloo",
       "the same as CPU_OPERATIONS, which wins when both are set"},
      {S::kGpuOperations, "GPU_OPERATIONS", kHorovod, T::kEnum, rank, "", 0, 0, "nccl|mpi|gloo",
       "what runs collectives of CUDA tensors: nccl, or mpi|gloo staged through pinned host "
       "memory onto the CPU transport",
       "A name this build lacks is an error at `init()` ([GPU](gpu.md))", nullptr, std::nullopt,
       "`nccl` when built with NCCL, else staged"},
      {S::kNcclTimeoutSeconds, "NCCL_TIMEOUT_SECONDS", kOurs, T::kSeconds, rank, "300", 0,
       kMaxSeconds, "",
       "bounds every NCCL wait: on an error or after this long the communicator is aborted and "
       "the collective fails",
       "See [GPU](gpu.md)"},
      {S::kHierarchicalAllreduce, "HIERARCHICAL_ALLREDUCE", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: CUDA allreduce as NCCL inside hosts and the CPU transport across them (several hosts, "
       "equal ranks per host)",
       "NCCL reduce-scatter inside each host, the CPU transport across hosts, NCCL allgather "
       "inside the host; else a warning on rank 0 and the flat NCCL path (ignored, with that "
       "warning, when CUDA tensors are staged: `HOROVODCPP_GPU_OPERATIONS=mpi|gloo`). Rank 0's "
       "value counts ([GPU](gpu.md#hierarchical-allreduce)); not yet run on a GPU"},
      {S::kShm, "SHM", kOurs, T::kBool, rank, "1", 0, 0, "",
       "0: no shared memory between the ranks of a host (data path and negotiation: Gloo mode "
       "negotiates over TCP instead, MPI mode over MPI)",
       "When every rank runs on this host, allreduce, reducescatter, broadcast and allgather "
       "move data through one shared-memory segment; on several hosts of which one has several "
       "ranks, allreduce goes through shared memory inside each host and the transport between "
       "hosts ([where the ranks negotiate](internals.md#where-the-ranks-negotiate)). Rank 0's "
       "value counts ([shared memory](shared-memory.md))"},
      {S::kShmSlotBytes, "SHM_SLOT_BYTES", kOurs, T::kBytes, rank, "262144", 4096, 1073741824, "",
       "shared memory: bytes each rank copies in per pipeline step (256 KiB; a multiple of "
       "4096)",
       "Rank 0's value counts. The segment holds 4 steps: ranks x 4 x this"},
      {S::kGlooIface, "GLOO_IFACE", kHorovod, T::kString, rank, "", 0, 0, "",
       "Gloo: the network interface to use"},
      {S::kGlooFileStore, "GLOO_FILE_STORE", kOurs, T::kString, rank, "", 0, 0, "",
       "Gloo without hvdrun: a directory the ranks of one host meet in (with HOROVODCPP_RANK ... "
       "_CROSS_SIZE)"},

      {S::kThreadAffinity, "THREAD_AFFINITY", kHorovod, T::kString, rank, "", 0, 0, "",
       "CPU ids separated by commas, one per rank of the host: local rank i pins its "
       "coordinator threads to the i-th",
       "Horovod's format and meaning (its background thread). Fewer ids than ranks on the "
       "host, or a malformed id, fails `init()` with `hvd::InvalidArgument`"},

      {S::kStallCheckTimeSeconds, "STALL_CHECK_TIME_SECONDS", kHorovod, T::kSeconds, rank, "60", 0,
       kMaxSeconds, "",
       "rank 0 warns about tensors some ranks submitted this long ago and others have not",
       "The warning names the missing ranks ([stall inspector](internals.md#stall-inspector))",
       "no warnings"},
      {S::kStallShutdownTimeSeconds, "STALL_SHUTDOWN_TIME_SECONDS", kHorovod, T::kSeconds, rank,
       "600", 0, kMaxSeconds, "",
       "after this long such a stall fails every pending operation on every rank with "
       "hvd::RankFailure and stops the runtime",
       "The error names the tensors and missing ranks. On by default, unlike Horovod: 10 minutes "
       "leaves room for one rank to evaluate or checkpoint, yet a hung job does not hold its "
       "nodes until the scheduler's limit",
       "no shutdown"},
      {S::kStallCheckDisable, "STALL_CHECK_DISABLE", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: no stall warnings and no stall shutdown, whatever the two times say",
       "Set by hvdrun `--no-stall-check`"},
      {S::kProcessSetTimeoutSeconds, "PROCESS_SET_TIMEOUT_SECONDS", kOurs, T::kSeconds, rank, "60",
       0, kMaxSeconds, "",
       "how long add_process_set / remove_process_set wait for every rank to make the same call "
       "before failing with hvd::Timeout",
       "See [process sets](process-sets.md)"},
      {S::kPeerTimeoutSeconds, "PEER_TIMEOUT_SECONDS", kOurs, T::kSeconds, rank, "30", 0,
       kMaxSeconds, "",
       "how long a rank waits inside a collective for a peer that makes no progress; then every "
       "survivor fails with hvd::RankFailure naming it",
       "MPI, Gloo, shared memory; control and data. The error names the ranks that stopped "
       "answering (`ranks()`), and under hvdrun the job ends. hvdrun `--peer-timeout`. A frozen "
       "rank or a single collective slower than this ends the job; a rank busy in its own code "
       "does not (the stall inspector bounds that). See [faults.md](faults.md)"},
      {S::kShmTimeoutSeconds, "SHM_TIMEOUT_SECONDS", kOurs, T::kSeconds, rank, "", 0, kMaxSeconds,
       "",
       "the peer timeout for the shared-memory path alone (data, and negotiation of ranks that "
       "share a host)",
       "A peer that died is noticed within about 0.1 s", nullptr, S::kPeerTimeoutSeconds},
      {S::kGlooTimeoutSeconds, "GLOO_TIMEOUT_SECONDS", kHorovod, T::kSeconds, rank, "", 0,
       kMaxSeconds, "",
       "the peer timeout for Gloo alone (and Gloo mode's TCP negotiation); it also bounds the "
       "rendezvous",
       "Each wait of Gloo mode's TCP negotiation gets a little more per level of its tree", nullptr,
       S::kPeerTimeoutSeconds},

      {S::kFlightRecorderSize, "FLIGHT_RECORDER_SIZE", kOurs, T::kInt, rank, "4096", 0, kIntMax, "",
       "collectives each rank's flight recorder keeps (the last ones); 0 turns it off",
       "Dumped on a stall, a failure, SIGUSR1 and hvd::dump_flight_recorder(); hvdrun analyzes "
       "the dumps when a job fails ([flight recorder](faults.md#flight-recorder))"},
      {S::kFlightRecorderDir, "FLIGHT_RECORDER_DIR", kOurs, T::kString, rank, "", 0, 0, "",
       "where each rank writes its flight recorder dump "
       "(horovodcpp-flight-recorder.rank<R>.txt)",
       "hvdrun sets a folder of its own for the job's ranks (and prints it when the job fails)",
       nullptr, std::nullopt, "the working directory"},
      {S::kRank, "RANK", kHorovod, T::kInt, hvdrun, "", 0, kIntMax, "",
       "Gloo: this rank in the job",
       "With RANK ... CROSS_SIZE unset, a task that `srun` started takes its place from Slurm's "
       "variables ([slurm](slurm.md))"},
      {S::kSize, "SIZE", kHorovod, T::kInt, hvdrun, "", 1, kIntMax, "",
       "Gloo: the number of ranks"},
      {S::kLocalRank, "LOCAL_RANK", kHorovod, T::kInt, hvdrun, "", 0, kIntMax, "",
       "Gloo: this rank on its host"},
      {S::kLocalSize, "LOCAL_SIZE", kHorovod, T::kInt, hvdrun, "", 1, kIntMax, "",
       "Gloo: the ranks on this host"},
      {S::kCrossRank, "CROSS_RANK", kHorovod, T::kInt, hvdrun, "", 0, kIntMax, "",
       "Gloo: this host's place among the hosts"},
      {S::kCrossSize, "CROSS_SIZE", kHorovod, T::kInt, hvdrun, "", 1, kIntMax, "",
       "Gloo: the number of hosts"},
      {S::kHostname, "HOSTNAME", kHorovod, T::kString, hvdrun, "", 0, 0, "",
       "hvdrun's name for this rank's host"},
      {S::kGlooRendezvousAddr, "GLOO_RENDEZVOUS_ADDR", kHorovod, T::kString, hvdrun, "", 0, 0, "",
       "Gloo: the host of hvdrun's rendezvous store"},
      {S::kGlooRendezvousPort, "GLOO_RENDEZVOUS_PORT", kHorovod, T::kInt, hvdrun, "", 1, 65535, "",
       "Gloo: the port of hvdrun's rendezvous store",
       "Under `srun` with no launcher (and no _ADDR): the port rank 0 hosts the store on, "
       "instead of one derived from the job and step ids; see [slurm](slurm.md)."},
      {S::kHvdrunStore, "HVDRUN_STORE", kOurs, T::kString, hvdrun, "", 0, 0, "",
       "host:port where a rank reports its failures to hvdrun"},
      {S::kJobSecret, "JOB_SECRET", kOurs, T::kString, hvdrun, "", 0, 0, "",
       "the job's secret: what proves a connection to the rendezvous store is the job's",
       "hvdrun makes a fresh one for each job and hands it to the ranks in their environment "
       "(never on a command line); see [security](security.md). Under `srun` with no launcher, "
       "export one in the job script ([slurm](slurm.md))."},
      {S::kElasticWorker, "ELASTIC_WORKER", kOurs, T::kInt, hvdrun, "", 0, kIntMax, "",
       "elastic jobs: this worker's id"},
      {S::kElasticRoundTimeout, "ELASTIC_ROUND_TIMEOUT", kOurs, T::kSeconds, hvdrun, "630", 0,
       kMaxSeconds, "", "elastic jobs: how long a worker waits for the next round"},

      {S::kElasticTimeout, "ELASTIC_TIMEOUT", kHorovod, T::kInt, launcher, "600", 1, kIntMax, "",
       "seconds hvdrun waits for enough slots (default for --elastic-timeout)"},
      {S::kStartTimeout, "START_TIMEOUT", kHorovod, T::kInt, launcher, "30", 1, kIntMax, "",
       "seconds a remote host has to answer before the job starts (default for "
       "--start-timeout)"},

      // What each knob does in Horovod, and what horovodcpp does instead.
      {S::kHierarchicalAllgather, "HIERARCHICAL_ALLGATHER", kHorovod, T::kString, no_effect, "0", 0,
       0, "", "allgather is not hierarchical here; inside a host it goes through shared memory"},
      {S::kTorusAllreduce, "TORUS_ALLREDUCE", kHorovod, T::kString, no_effect, "0", 0, 0, "",
       "there is no 2D torus allreduce; CUDA allreduce is flat NCCL or hierarchical "
       "(HOROVODCPP_HIERARCHICAL_ALLREDUCE)"},
      {S::kAutotuneGaussianProcessNoise, "AUTOTUNE_GAUSSIAN_PROCESS_NOISE", kHorovod, T::kString,
       no_effect, "", 0, 0, "",
       "the autotuner sweeps each parameter in turn; it has no Gaussian process"},
      {S::kDisableGroupFusion, "DISABLE_GROUP_FUSION", kHorovod, T::kString, no_effect, "1", 0, 0,
       "", "a group's tensors fuse with each other, never with tensors outside the group"},
      {S::kBatchD2dMemcopies, "BATCH_D2D_MEMCOPIES", kHorovod, T::kString, no_effect, "1", 0, 0, "",
       "copies of CUDA tensors into and out of the fusion buffer are always one batched kernel"},
      {S::kNumNcclStreams, "NUM_NCCL_STREAMS", kHorovod, T::kString, no_effect, "1", 0, 0, "",
       "NCCL runs on one stream per GPU"},
      {S::kEnableXlaOps, "ENABLE_XLA_OPS", kHorovod, T::kString, no_effect, "0", 0, 0, "",
       "there are no XLA kernels; functions compiled with XLA run the collectives outside it"},
      {S::kMpiThreadsDisable, "MPI_THREADS_DISABLE", kHorovod, T::kString, no_effect, "0", 0, 0, "",
       "MPI is initialized with MPI_THREAD_MULTIPLE (at least SERIALIZED is needed: the "
       "coordinator and waiting threads call MPI, one at a time)"},
      {S::kAdasumMpiChunkSize, "ADASUM_MPI_CHUNK_SIZE", kHorovod, T::kString, no_effect, "", 0, 0,
       "", "Adasum sends each level's vectors whole"},
      {S::kCclCache, "CCL_CACHE", kHorovod, T::kString, no_effect, "", 0, 0, "",
       "there is no oneCCL backend"},
      {S::kDisableNvtxRanges, "DISABLE_NVTX_RANGES", kHorovod, T::kBool, rank, "0", 0, 0, "",
       "1: no NVTX ranges (Nsight Systems) over the negotiation and the phases of CUDA "
       "collectives",
       "Builds with the CUDA toolkit's NVTX 3 headers emit them; with no profiler attached a "
       "range costs a call that returns at once. See [gpu](gpu.md#nvtx-ranges)"},
      {S::kEnableAsyncCompletion, "ENABLE_ASYNC_COMPLETION", kHorovod, T::kString, no_effect, "1",
       0, 0, "",
       "CUDA collectives always complete asynchronously (the caller's stream waits for them)"},
  };
  return t;
}

}  // namespace

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = [] {
    std::vector<Entry> t = build();
    // The enum indexes the table: a setting out of place is a bug here.
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (static_cast<std::size_t>(t[i].id) != i) std::abort();
    }
    return t;
  }();
  return entries;
}

}  // namespace settings
}  // namespace hvd
