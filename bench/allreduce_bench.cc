// allreduce_bench: horovodcpp's allreduce, optionally next to a raw MPI_Allreduce.
//
//   hvdrun -np 2 --gloo build/bench/allreduce_bench     # horovodcpp only (Gloo)
//   hvdrun -np 2 --mpi  build/bench/allreduce_bench     # horovodcpp + raw MPI column
//   mpirun -np 2 build/bench/allreduce_bench --mpi-baseline only   # raw MPI only
//          [--max-bytes 64M] [--dtype float32] [--op sum] [--warmup 5] [--iters 20]
//          [--check]
//
// For every message size it times (a) hvd::allreduce, blocking and in place,
// through the whole coordinator path (queue, negotiation cycle, backend,
// completion), using only horovodcpp's public API (hvd::barrier before each
// iteration, hvd::allreduce(Max) of the per-rank averages), so it runs under
// any backend; and (b), only when launched by mpirun (or with
// --mpi-baseline), MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD over a
// buffer of the same size, each iteration after an MPI_Barrier. The reported
// time is the largest, over ranks, of each rank's average. Output follows
// nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n.
// See bench/README.md.

// Only MPI's C API is used: keep Open MPI's deprecated C++ bindings (which
// MPI::MPI_C does not link) out of <mpi.h>.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "horovodcpp/horovodcpp.h"
#include "parse_bytes.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
// With --auto-iters on, a size runs at most this many bytes per measurement
// (but at least kMinAutoIters iterations), so 64 MiB does not take 20 rounds.
constexpr std::size_t kAutoIterBudgetBytes = 256 * kMiB;
constexpr int kMinAutoIters = 5;

struct Options {
  std::size_t min_bytes = 4;
  std::size_t max_bytes = 64 * kMiB;
  std::size_t factor = 4;
  std::vector<std::size_t> sizes;  // --sizes: used instead of min/max/factor
  hvd::DataType dtype = hvd::DataType::kFloat32;
  hvd::ReduceOp op = hvd::ReduceOp::kSum;
  int warmup = 5;
  int iters = 20;
  bool auto_iters = true;
  bool check = false;
  // The raw MPI column. kAuto: kIsolated when launched by mpirun (and not
  // in horovodcpp's Gloo mode), else kOff. kIsolated: time raw MPI before
  // hvd::init() (no coordinator thread running); kAlongside: after it, size by
  // size next to horovodcpp, with the thread running; kInterleaved: after
  // it, iteration by iteration alternating with horovodcpp (a change in the
  // machine's state meets both alike); kOnly: raw MPI alone, horovodcpp is
  // never initialised (its columns show "-").
  enum class MpiBaseline { kAuto, kOff, kIsolated, kAlongside, kInterleaved, kOnly };
  MpiBaseline mpi_baseline = MpiBaseline::kAuto;
};

// Set once MPI_Init_thread has been called by this program.
bool g_mpi_started = false;

// True when mpirun/mpiexec (Open MPI, MPICH/Hydra, PMIx) started this process.
bool launched_by_mpirun() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name)) return true;
  }
  return false;
}

bool gloo_mode() {
  const char* ops = std::getenv("HOROVODCPP_CPU_OPERATIONS");
  if (!ops) ops = std::getenv("HOROVOD_CPU_OPERATIONS");
  return ops && std::string(ops) == "gloo";
}

// The rank before any runtime is up: from the launcher's environment.
int env_rank() {
  for (const char* name : {"HOROVODCPP_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

[[noreturn]] void usage_error(int rank, const std::string& message, int exit_code = 2) {
  if (rank == 0) {
    std::fprintf(
        stderr,
        "allreduce_bench: %s\n"
        "usage: allreduce_bench [--min-bytes N] [--max-bytes N] [--factor F]\n"
        "                       [--sizes N,N,...] [--dtype float32|float16|bfloat16|"
        "float64|int32]\n"
        "                       [--op sum|average|min|max|adasum] [--warmup N] [--iters N]\n"
        "                       [--auto-iters on|off]\n"
        "                       [--mpi-baseline auto|off|isolated|alongside|interleaved|only]\n"
        "                       [--check]\n"
        "sizes take a K, M or G suffix (powers of 1024): --max-bytes 64M\n"
        "the raw MPI column (auto) is on only when launched by mpirun outside Gloo mode\n",
        message.c_str());
  }
  if (g_mpi_started) MPI_Finalize();
  std::exit(exit_code);
}

bool parse_int(const std::string& text, int* out) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > 1000000) return false;
  *out = static_cast<int>(value);
  return true;
}

template <typename T>
struct Named {
  const char* name;
  T value;
};
constexpr Named<hvd::DataType> kDtypes[] = {{"float32", hvd::DataType::kFloat32},
                                            {"float16", hvd::DataType::kFloat16},
                                            {"bfloat16", hvd::DataType::kBFloat16},
                                            {"float64", hvd::DataType::kFloat64},
                                            {"int32", hvd::DataType::kInt32}};
constexpr Named<hvd::ReduceOp> kOps[] = {{"sum", hvd::ReduceOp::kSum},
                                         {"average", hvd::ReduceOp::kAverage},
                                         {"min", hvd::ReduceOp::kMin},
                                         {"max", hvd::ReduceOp::kMax},
                                         {"adasum", hvd::ReduceOp::kAdasum}};

template <typename T, std::size_t N>
bool lookup(const Named<T> (&table)[N], const std::string& name, T* out) {
  for (const Named<T>& entry : table) {
    if (name == entry.name) {
      *out = entry.value;
      return true;
    }
  }
  return false;
}

Options parse_options(int argc, char** argv, int rank) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    const bool flag = arg == "--check" || arg == "--help" || arg == "-h";
    if (!flag) {
      const std::size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        usage_error(rank, "missing value for " + arg);
      }
    }
    const std::string bad = "bad value '" + value + "' for " + arg;
    if (arg == "--help" || arg == "-h") {
      usage_error(rank, "collective benchmark, horovodcpp next to raw MPI", 0);
    } else if (arg == "--check") {
      options.check = true;
    } else if (arg == "--min-bytes") {
      if (!parse_bytes(value, &options.min_bytes) || options.min_bytes == 0) usage_error(rank, bad);
    } else if (arg == "--max-bytes") {
      if (!parse_bytes(value, &options.max_bytes) || options.max_bytes == 0) usage_error(rank, bad);
    } else if (arg == "--factor") {
      if (!parse_bytes(value, &options.factor) || options.factor < 2) usage_error(rank, bad);
    } else if (arg == "--sizes") {
      std::size_t start = 0;
      while (start <= value.size()) {
        std::size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        std::size_t bytes = 0;
        if (!parse_bytes(value.substr(start, comma - start), &bytes) || bytes == 0) {
          usage_error(rank, bad);
        }
        options.sizes.push_back(bytes);
        start = comma + 1;
      }
    } else if (arg == "--dtype") {
      if (!lookup(kDtypes, value, &options.dtype)) usage_error(rank, bad);
    } else if (arg == "--op") {
      if (!lookup(kOps, value, &options.op)) usage_error(rank, bad);
    } else if (arg == "--warmup") {
      if (!parse_int(value, &options.warmup)) usage_error(rank, bad);
    } else if (arg == "--iters") {
      if (!parse_int(value, &options.iters) || options.iters == 0) usage_error(rank, bad);
    } else if (arg == "--auto-iters") {
      if (value != "on" && value != "off") usage_error(rank, bad);
      options.auto_iters = value == "on";
    } else if (arg == "--mpi-baseline") {
      using B = Options::MpiBaseline;
      if (value == "auto")
        options.mpi_baseline = B::kAuto;
      else if (value == "off")
        options.mpi_baseline = B::kOff;
      else if (value == "isolated")
        options.mpi_baseline = B::kIsolated;
      else if (value == "alongside")
        options.mpi_baseline = B::kAlongside;
      else if (value == "interleaved")
        options.mpi_baseline = B::kInterleaved;
      else if (value == "only")
        options.mpi_baseline = B::kOnly;
      else
        usage_error(rank, bad);
    } else {
      usage_error(rank, "unknown option " + arg);
    }
  }
  const bool adasum = options.op == hvd::ReduceOp::kAdasum;
  if (options.mpi_baseline == Options::MpiBaseline::kAuto) {
    options.mpi_baseline = launched_by_mpirun() && !gloo_mode() && !adasum
                               ? Options::MpiBaseline::kIsolated
                               : Options::MpiBaseline::kOff;
  }
  // MPI has no Adasum, and its result has no closed form to check.
  if (adasum && options.mpi_baseline != Options::MpiBaseline::kOff) {
    usage_error(rank, "--op adasum has no raw MPI column: --mpi-baseline off");
  }
  if (adasum && options.check) usage_error(rank, "--op adasum cannot be --check'ed");
  if (options.sizes.empty()) {
    if (options.min_bytes > options.max_bytes) usage_error(rank, "--min-bytes > --max-bytes");
    for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes;) {
      options.sizes.push_back(bytes);
      if (bytes > options.max_bytes / options.factor) break;
      bytes *= options.factor;
    }
  }
  return options;
}

// ---- element access for the five benchmarked dtypes ------------------------

double load(hvd::DataType dtype, const void* data, std::size_t i) {
  switch (dtype) {
    case hvd::DataType::kFloat32: return static_cast<const float*>(data)[i];
    case hvd::DataType::kFloat64: return static_cast<const double*>(data)[i];
    case hvd::DataType::kInt32: return static_cast<const std::int32_t*>(data)[i];
    case hvd::DataType::kFloat16:
      return static_cast<float>(static_cast<const hvd::float16_t*>(data)[i]);
    case hvd::DataType::kBFloat16:
      return static_cast<float>(static_cast<const hvd::bfloat16_t*>(data)[i]);
    default: return 0;
  }
}

void store(hvd::DataType dtype, void* data, std::size_t i, double value) {
  switch (dtype) {
    case hvd::DataType::kFloat32: static_cast<float*>(data)[i] = static_cast<float>(value); break;
    case hvd::DataType::kFloat64: static_cast<double*>(data)[i] = value; break;
    case hvd::DataType::kInt32:
      static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(value);
      break;
    case hvd::DataType::kFloat16:
      static_cast<hvd::float16_t*>(data)[i] = hvd::float16_t(static_cast<float>(value));
      break;
    case hvd::DataType::kBFloat16:
      static_cast<hvd::bfloat16_t*>(data)[i] = hvd::bfloat16_t(static_cast<float>(value));
      break;
    default: break;
  }
}

// What `value` becomes once stored in `dtype` (the rounding of the result).
double rounded(hvd::DataType dtype, double value) {
  unsigned char scratch[8];
  store(dtype, scratch, 0, value);
  return load(dtype, scratch, 0);
}

// Rank r holds (r + 1) + (i % 5): small integers, so every sum, min, max and
// average below is exact in every dtype (also float16/bfloat16 for a few
// dozen ranks) whatever order the reduction takes.
double input_value(int rank, std::size_t i) { return (rank + 1) + static_cast<double>(i % 5); }

double expected_value(hvd::DataType dtype, hvd::ReduceOp op, int n, std::size_t i) {
  const double k = static_cast<double>(i % 5);
  const double sum = n * (n + 1) / 2.0 + n * k;
  switch (op) {
    case hvd::ReduceOp::kSum: return rounded(dtype, sum);
    case hvd::ReduceOp::kMin: return rounded(dtype, 1 + k);
    case hvd::ReduceOp::kMax: return rounded(dtype, n + k);
    case hvd::ReduceOp::kAverage:
      // Integers: the sum divided by n, rounded toward zero (docs/reductions.md).
      if (dtype != hvd::DataType::kInt32) return rounded(dtype, sum / n);
      return static_cast<double>(static_cast<long long>(sum) / n);
    default: return 0;
  }
}

void fill(hvd::DataType dtype, void* data, std::size_t count, int rank) {
  for (std::size_t i = 0; i < count; ++i) store(dtype, data, i, input_value(rank, i));
}

// Wrong elements on this rank; prints the first one to stderr.
long long verify(hvd::DataType dtype, hvd::ReduceOp op, const void* data, std::size_t count,
                 int rank, int n, const char* who) {
  long long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double got = load(dtype, data, i);
    const double want = expected_value(dtype, op, n, i);
    if (got != want) {
      if (wrong == 0) {
        std::fprintf(stderr, "rank %d: %s, %zu elements: element %zu is %.17g, expected %.17g\n",
                     rank, who, count, i, got, want);
      }
      ++wrong;
    }
  }
  return wrong;
}

// ---- the raw MPI baseline -----------------------------------------------------

bool has_mpi_datatype(hvd::DataType dtype) {
  return dtype == hvd::DataType::kFloat32 || dtype == hvd::DataType::kFloat64 ||
         dtype == hvd::DataType::kInt32;
}

MPI_Datatype mpi_datatype(hvd::DataType dtype) {
  switch (dtype) {
    case hvd::DataType::kFloat64: return MPI_DOUBLE;
    case hvd::DataType::kInt32: return MPI_INT32_T;
    default: return MPI_FLOAT;
  }
}

// MPI has no Average: Sum, then divide in place (as horovodcpp does), timed.
void mpi_allreduce(void* data, std::size_t count, hvd::DataType dtype, hvd::ReduceOp op, int n) {
  const MPI_Op mpi_op = op == hvd::ReduceOp::kMin   ? MPI_MIN
                        : op == hvd::ReduceOp::kMax ? MPI_MAX
                                                    : MPI_SUM;
  MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), mpi_datatype(dtype), mpi_op,
                MPI_COMM_WORLD);
  if (op != hvd::ReduceOp::kAverage) return;
  switch (dtype) {
    case hvd::DataType::kFloat32: {
      float* p = static_cast<float*>(data);
      for (std::size_t i = 0; i < count; ++i) p[i] /= static_cast<float>(n);
      break;
    }
    case hvd::DataType::kFloat64: {
      double* p = static_cast<double*>(data);
      for (std::size_t i = 0; i < count; ++i) p[i] /= n;
      break;
    }
    case hvd::DataType::kInt32: {
      std::int32_t* p = static_cast<std::int32_t*>(data);
      for (std::size_t i = 0; i < count; ++i) p[i] /= n;
      break;
    }
    default: break;
  }
}

// ---- timing ---------------------------------------------------------------------

// Synchronisation and the cross-rank reductions of the timing itself, either
// through raw MPI (the MPI column, and whenever horovodcpp is not running)
// or through horovodcpp's public API only (the horovodcpp column: works
// under hvdrun --gloo, where there is no MPI at all).
enum class Sync { kMpi, kHvd };

void barrier(Sync sync) {
  if (sync == Sync::kMpi) {
    MPI_Barrier(MPI_COMM_WORLD);
  } else {
    hvd::barrier();
  }
}

double max_over_ranks(Sync sync, double value) {
  double out = value;
  if (sync == Sync::kMpi) {
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  } else {
    hvd::allreduce(hvd::view(&out, {1}), "bench.time.max", hvd::ReduceOp::kMax);
  }
  return out;
}

long long sum_over_ranks(Sync sync, long long value) {
  std::int64_t out = value;
  if (sync == Sync::kMpi) {
    MPI_Allreduce(&value, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  } else {
    hvd::allreduce(hvd::view(&out, {1}), "bench.wrong.sum", hvd::ReduceOp::kSum);
  }
  return out;
}

// Seconds one call of `body` takes, started after a barrier.
template <typename Body>
double timed_after_barrier(Sync sync, Body&& body) {
  barrier(sync);
  const auto start = std::chrono::steady_clock::now();
  body();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// Max over ranks of this rank's average seconds per iteration of `body`,
// every iteration starting after a barrier.
template <typename Body>
double time_per_iteration(Sync sync, int warmup, int iters, Body&& body) {
  double total = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    const double seconds = timed_after_barrier(sync, body);
    if (it >= warmup) total += seconds;
  }
  return max_over_ranks(sync, total / iters);
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string(fallback);
}

void print_header(const Options& options, int argc, char** argv, int n, bool with_hvd,
                  int mpi_thread_level) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  std::string mpi_line = "not used by this program";
  if (g_mpi_started) {
    char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int length = 0;
    MPI_Get_library_version(mpi_version, &length);
    mpi_line.assign(mpi_version, static_cast<std::size_t>(length));
    mpi_line = mpi_line.substr(0, mpi_line.find_first_of(",\n"));
    mpi_line += mpi_thread_level == MPI_THREAD_MULTIPLE ? ", thread level MPI_THREAD_MULTIPLE"
                                                        : ", thread level below MULTIPLE";
  }

  std::string cycle = env_or("HOROVODCPP_CYCLE_TIME", "");
  if (!cycle.empty()) {
    cycle += " ms (HOROVODCPP_CYCLE_TIME)";
  } else if (std::getenv("HOROVOD_CYCLE_TIME")) {
    cycle = env_or("HOROVOD_CYCLE_TIME", "") + " ms (HOROVOD_CYCLE_TIME)";
  } else {
    cycle = "unset (default 1 ms)";
  }

  std::printf("# horovodcpp %s allreduce benchmark\n", hvd::version());
  std::printf("# command: %s\n", command.c_str());
  if (with_hvd) {
    std::printf("# ranks: %d (local_size %d, hosts %d), rank 0 on %s, %u hardware threads there\n",
                n, hvd::local_size(), hvd::cross_size(), host, std::thread::hardware_concurrency());
  } else {
    std::printf("# ranks: %d, rank 0 on %s, %u hardware threads there\n", n, host,
                std::thread::hardware_concurrency());
  }
  // The machine may be shared: the load says how quiet it was.
  if (std::FILE* file = std::fopen("/proc/loadavg", "r")) {
    char load[128] = "";
    if (std::fgets(load, sizeof(load), file)) {
      load[std::strcspn(load, "\n")] = '\0';
      std::printf("# load average on rank 0's host (1, 5, 15 min, ...): %s\n", load);
    }
    std::fclose(file);
  }
  std::printf("# MPI (raw column): %s\n", mpi_line.c_str());
  std::printf("# HOROVODCPP_CYCLE_TIME: %s\n", cycle.c_str());
  std::printf("# HOROVODCPP_CPU_OPERATIONS: %s\n",
              env_or("HOROVODCPP_CPU_OPERATIONS", "unset (default transport)").c_str());
  std::printf("# dtype %s, op %s, warmup %d, iters %d, auto-iters %s%s, check %s\n",
              hvd::dtype_name(options.dtype), hvd::reduce_op_name(options.op), options.warmup,
              options.iters, options.auto_iters ? "on" : "off",
              options.auto_iters
                  ? " (iters * size capped near 256 MiB, at least 5; warmup <= 2 there)"
                  : "",
              options.check ? "on" : "off");
  using B = Options::MpiBaseline;
  std::printf("# MPI baseline: %s\n",
              options.mpi_baseline == B::kAlongside
                  ? "alongside (after hvd::init(), size by size, coordinator thread running)"
              : options.mpi_baseline == B::kInterleaved
                  ? "interleaved (after hvd::init(), iterations alternate: raw MPI, horovodcpp)"
              : options.mpi_baseline == B::kIsolated
                  ? "isolated (all sizes before hvd::init(): no coordinator thread running)"
              : options.mpi_baseline == B::kOnly ? "only (horovodcpp not initialised)"
                                                 : "off (not launched by mpirun, or Gloo mode)");
  std::printf(
      "# time: max over ranks of the per-rank average; each iteration after a barrier\n"
      "#   (horovodcpp: hvd::barrier(), max via hvd::allreduce; MPI: MPI_Barrier, "
      "MPI_Allreduce)\n");
  std::printf(
      "# algbw = size / time; busbw = algbw * 2(n-1)/n; ratio = horovodcpp busbw / MPI "
      "busbw\n");
  std::printf("#\n");
  std::printf("# %50s %-32s %-32s\n", "", "horovodcpp (hvd::allreduce)",
              "MPI_Allreduce(MPI_IN_PLACE)");
  std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s  %9s %7s %7s %6s  %7s\n", "size", "count",
              "type", "redop", "iters", "time", "algbw", "busbw", "#wrong", "time", "algbw",
              "busbw", "#wrong", "ratio");
  std::printf("# %10s %11s %8s %7s %5s  %9s %7s %7s %6s  %9s %7s %7s %6s  %7s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)",
              "", "");
  std::fflush(stdout);
}

// One row of the table: the element count and iterations for one size.
struct Step {
  std::size_t count = 0;
  std::size_t bytes = 0;
  int warmup = 0;
  int iters = 0;
};

std::vector<Step> plan(const Options& options, int rank) {
  const std::size_t element = hvd::dtype_size(options.dtype);
  std::vector<Step> steps;
  for (const std::size_t requested : options.sizes) {
    Step step;
    step.count = std::max<std::size_t>(1, requested / element);
    step.bytes = step.count * element;
    // MPI takes an int count.
    if (step.count > static_cast<std::size_t>(INT_MAX)) {
      usage_error(rank, "size " + std::to_string(requested) + " is over INT_MAX elements");
    }
    step.iters = options.iters;
    step.warmup = options.warmup;
    if (options.auto_iters) {
      const int budget =
          static_cast<int>(std::max<std::size_t>(kMinAutoIters, kAutoIterBudgetBytes / step.bytes));
      if (budget < step.iters) {
        step.iters = budget;
        step.warmup = std::min(step.warmup, 2);
      }
    }
    steps.push_back(step);
  }
  return steps;
}

struct Result {
  double seconds = 0;    // max over ranks of the average per iteration
  long long wrong = -1;  // wrong elements summed over ranks; -1: not checked
};

// One column's allreduce of the step's buffer: how it synchronises and the
// call it times.
struct Side {
  Sync sync;
  const char* who;
  std::function<void()> call;
};

Side mpi_side(const Options& options, const Step& step, void* buffer, int n) {
  return {Sync::kMpi, "MPI_Allreduce", [&options, &step, buffer, n] {
            mpi_allreduce(buffer, step.count, options.dtype, options.op, n);
          }};
}

Side hvd_side(const Options& options, const Step& step, void* buffer) {
  const std::string name = "bench.allreduce." + std::to_string(step.bytes);
  const hvd::TensorView view(buffer, options.dtype, {static_cast<std::int64_t>(step.count)});
  return {Sync::kHvd, "horovodcpp",
          [&options, name, view] { hvd::allreduce(view, name, options.op); }};
}

// With --check: one untimed call on freshly filled buffers, and its wrong
// elements summed over ranks (else -1). Leaves the buffer filled for timing.
long long check(const Options& options, const Step& step, void* buffer, int rank, int n,
                const Side& side) {
  long long wrong = -1;
  if (options.check) {
    fill(options.dtype, buffer, step.count, rank);
    side.call();
    wrong = sum_over_ranks(
        side.sync, verify(options.dtype, options.op, buffer, step.count, rank, n, side.who));
  }
  fill(options.dtype, buffer, step.count, rank);
  return wrong;
}

// In place, the values change from one timed iteration to the next (Sum
// grows); that does not change the work done. --check verifies one separate
// call on freshly filled buffers.
Result measure(const Options& options, const Step& step, void* buffer, int rank, int n,
               const Side& side) {
  Result result;
  result.wrong = check(options, step, buffer, rank, n, side);
  result.seconds = time_per_iteration(side.sync, step.warmup, step.iters, side.call);
  return result;
}

// Both sides, iteration by iteration in turn, each after its own barrier:
// {horovodcpp, MPI}.
std::pair<Result, Result> measure_interleaved(const Options& options, const Step& step,
                                              void* buffer, int rank, int n) {
  const Side sides[2] = {mpi_side(options, step, buffer, n), hvd_side(options, step, buffer)};
  Result mpi, hvd;
  mpi.wrong = check(options, step, buffer, rank, n, sides[0]);
  hvd.wrong = check(options, step, buffer, rank, n, sides[1]);
  double total[2] = {0, 0};
  for (int it = 0; it < step.warmup + step.iters; ++it) {
    for (int s = 0; s < 2; ++s) {
      const double seconds = timed_after_barrier(sides[s].sync, sides[s].call);
      if (it >= step.warmup) total[s] += seconds;
    }
  }
  mpi.seconds = max_over_ranks(Sync::kMpi, total[0] / step.iters);
  hvd.seconds = max_over_ranks(Sync::kHvd, total[1] / step.iters);
  return {hvd, mpi};
}

std::string wrong_str(const Result& result) {
  return result.wrong < 0 ? std::string("N/A") : std::to_string(result.wrong);
}

void print_row(const Options& options, const Step& step, const Result* hvd_result,
               const Result* mpi_result, int n) {
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  std::printf("  %10zu %11zu %8s %7s %5d", step.bytes, step.count, hvd::dtype_name(options.dtype),
              hvd::reduce_op_name(options.op), step.iters);
  if (hvd_result) {
    const double hvd_algbw = step.bytes / hvd_result->seconds / 1e9;
    std::printf("  %9.2f %7.3f %7.3f %6s", hvd_result->seconds * 1e6, hvd_algbw,
                hvd_algbw * bus_factor, wrong_str(*hvd_result).c_str());
  } else {
    std::printf("  %9s %7s %7s %6s", "-", "-", "-", "-");
  }
  if (mpi_result && hvd_result) {
    const double mpi_algbw = step.bytes / mpi_result->seconds / 1e9;
    // The busbw ratio is the time ratio (and stays defined for n == 1).
    std::printf("  %9.2f %7.3f %7.3f %6s  %7.4f\n", mpi_result->seconds * 1e6, mpi_algbw,
                mpi_algbw * bus_factor, wrong_str(*mpi_result).c_str(),
                mpi_result->seconds / hvd_result->seconds);
  } else if (mpi_result) {
    const double mpi_algbw = step.bytes / mpi_result->seconds / 1e9;
    std::printf("  %9.2f %7.3f %7.3f %6s  %7s\n", mpi_result->seconds * 1e6, mpi_algbw,
                mpi_algbw * bus_factor, wrong_str(*mpi_result).c_str(), "-");
  } else {
    std::printf("  %9s %7s %7s %6s  %7s\n", "-", "-", "-", "-", "-");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  using B = Options::MpiBaseline;
  const Options options = parse_options(argc, argv, env_rank());  // exits on a bad option
  const bool with_hvd = options.mpi_baseline != B::kOnly;
  // Raw MPI only when asked for (or launched by mpirun): under hvdrun --gloo
  // there is no mpirun, and the program must not touch MPI at all.
  const bool with_mpi = options.mpi_baseline != B::kOff && has_mpi_datatype(options.dtype);
  int provided = MPI_THREAD_SINGLE;
  if (options.mpi_baseline != B::kOff) {
    // Before hvd::init(), which then finds MPI started and uses it.
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    g_mpi_started = true;
  }
  int rank = env_rank(), n = 1;
  if (g_mpi_started) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
  }
  if (options.mpi_baseline == B::kOnly && !with_mpi) {
    usage_error(rank, std::string("--mpi-baseline only: ") + hvd::dtype_name(options.dtype) +
                          " has no MPI datatype");
  }
  const std::vector<Step> steps = plan(options, rank);

  std::size_t largest = 0;
  for (const Step& step : steps) largest = std::max(largest, step.bytes);
  std::vector<std::uint64_t> storage(largest / 8 + 1);
  void* buffer = storage.data();

  // Isolated baseline: raw MPI before hvd::init(), with no horovodcpp
  // coordinator thread in the process.
  std::vector<Result> mpi_results(steps.size());
  if (with_mpi && options.mpi_baseline != B::kAlongside &&
      options.mpi_baseline != B::kInterleaved) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      mpi_results[i] =
          measure(options, steps[i], buffer, rank, n, mpi_side(options, steps[i], buffer, n));
    }
  }

  long long wrong_total = 0;
  try {
    if (with_hvd) {
      hvd::init();
      rank = hvd::rank();
      n = hvd::size();
    }
    if (rank == 0) print_header(options, argc, argv, n, with_hvd, provided);
    double hvd_busbw_sum = 0, mpi_busbw_sum = 0;
    const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      Result hvd_result;
      if (with_mpi && options.mpi_baseline == B::kInterleaved) {
        std::tie(hvd_result, mpi_results[i]) =
            measure_interleaved(options, steps[i], buffer, rank, n);
      } else if (with_hvd) {
        hvd_result =
            measure(options, steps[i], buffer, rank, n, hvd_side(options, steps[i], buffer));
      }
      if (with_mpi && options.mpi_baseline == B::kAlongside) {
        mpi_results[i] =
            measure(options, steps[i], buffer, rank, n, mpi_side(options, steps[i], buffer, n));
      }
      wrong_total += std::max(0LL, hvd_result.wrong);
      if (with_mpi) wrong_total += std::max(0LL, mpi_results[i].wrong);
      if (with_hvd) hvd_busbw_sum += steps[i].bytes / hvd_result.seconds / 1e9 * bus_factor;
      if (with_mpi) mpi_busbw_sum += steps[i].bytes / mpi_results[i].seconds / 1e9 * bus_factor;
      if (rank == 0) {
        print_row(options, steps[i], with_hvd ? &hvd_result : nullptr,
                  with_mpi ? &mpi_results[i] : nullptr, n);
      }
    }
    if (rank == 0) {
      if (options.check) {
        std::printf("# Out of bounds values : %lld %s\n", wrong_total,
                    wrong_total ? "FAILED" : "OK");
      }
      std::printf("# Avg bus bandwidth    :");
      if (with_hvd) {
        std::printf(" horovodcpp %.3f GB/s", hvd_busbw_sum / static_cast<double>(steps.size()));
      }
      if (with_mpi) {
        std::printf("%s MPI %.3f GB/s", with_hvd ? "," : "",
                    mpi_busbw_sum / static_cast<double>(steps.size()));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    if (with_hvd) hvd::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: allreduce_bench failed: %s\n", rank, e.what());
    std::fflush(stderr);
    // Another rank may be blocked in a collective: do not wait for it (the
    // launcher, mpirun or hvdrun, stops the others when this one exits).
    if (g_mpi_started) MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  if (g_mpi_started) MPI_Finalize();
  return wrong_total ? 1 : 0;
}
