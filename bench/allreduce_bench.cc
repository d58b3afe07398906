// allreduce_bench: horovodcpp's allreduce next to a raw MPI_Allreduce.
//
//   mpirun -np 2 build/bench/allreduce_bench [--max-bytes 64M] [--dtype float32]
//          [--op sum] [--warmup 5] [--iters 20] [--check]
//
// For every message size it times (a) hvd::allreduce, blocking and in place,
// through the whole coordinator path (queue, negotiation cycle, backend,
// completion) and (b) MPI_Allreduce(MPI_IN_PLACE) on MPI_COMM_WORLD over a
// buffer of the same size. Every iteration starts after an MPI_Barrier; the
// reported time is the largest, over ranks, of each rank's average. Output
// follows nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n.
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
#include <string>
#include <thread>
#include <vector>

#include "horovodcpp/horovodcpp.h"

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
  // false: time raw MPI before hvd::init() (no coordinator thread running);
  // true: after it, size by size next to horovodcpp, with the thread running.
  bool mpi_alongside = false;
};

[[noreturn]] void usage_error(int rank, const std::string& message, int exit_code = 2) {
  if (rank == 0) {
    std::fprintf(
        stderr,
        "allreduce_bench: %s\n"
        "usage: allreduce_bench [--min-bytes N] [--max-bytes N] [--factor F]\n"
        "                       [--sizes N,N,...] [--dtype float32|float16|bfloat16|"
        "float64|int32]\n"
        "                       [--op sum|average|min|max] [--warmup N] [--iters N]\n"
        "                       [--auto-iters on|off] [--mpi-baseline isolated|alongside]\n"
        "                       [--check]\n"
        "sizes take a K, M or G suffix (powers of 1024): --max-bytes 64M\n",
        message.c_str());
  }
  MPI_Finalize();
  std::exit(exit_code);
}

// "4", "64K", "64M", "1GiB" -> bytes (binary multiples).
bool parse_bytes(const std::string& text, std::size_t* out) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str()) return false;
  std::string suffix(end);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::size_t scale = 1;
  if (!suffix.empty() && (suffix[0] == 'K' || suffix[0] == 'M' || suffix[0] == 'G')) {
    scale = suffix[0] == 'K' ? 1024 : suffix[0] == 'M' ? kMiB : 1024 * kMiB;
    suffix.erase(0, 1);
    if (suffix == "I" || suffix == "IB") suffix.clear();
  }
  if (!suffix.empty() && suffix != "B") return false;
  *out = static_cast<std::size_t>(value) * scale;
  return true;
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
                                         {"max", hvd::ReduceOp::kMax}};

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
      if (value != "isolated" && value != "alongside") usage_error(rank, bad);
      options.mpi_alongside = value == "alongside";
    } else {
      usage_error(rank, "unknown option " + arg);
    }
  }
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
      // Integers: the sum divided by n, rounded toward zero (README "Reductions").
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

// Max over ranks of this rank's average seconds per iteration of `body`,
// every iteration starting after an MPI_Barrier.
template <typename Body>
double time_per_iteration(int warmup, int iters, Body&& body) {
  double total = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = std::chrono::steady_clock::now();
    body();
    const auto stop = std::chrono::steady_clock::now();
    if (it >= warmup) total += std::chrono::duration<double>(stop - start).count();
  }
  double mine = total / iters, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

long long sum_over_ranks(long long value) {
  long long total = 0;
  MPI_Allreduce(&value, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string(fallback);
}

void print_header(const Options& options, int argc, char** argv, int n, int mpi_thread_level) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  char mpi_version[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int length = 0;
  MPI_Get_library_version(mpi_version, &length);
  std::string mpi_line(mpi_version, static_cast<std::size_t>(length));
  mpi_line = mpi_line.substr(0, mpi_line.find_first_of(",\n"));

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
  std::printf("# ranks: %d (local_size %d, hosts %d), rank 0 on %s, %u hardware threads there\n", n,
              hvd::local_size(), hvd::cross_size(), host, std::thread::hardware_concurrency());
  // The machine may be shared: the load says how quiet it was.
  if (std::FILE* file = std::fopen("/proc/loadavg", "r")) {
    char load[128] = "";
    if (std::fgets(load, sizeof(load), file)) {
      load[std::strcspn(load, "\n")] = '\0';
      std::printf("# load average on rank 0's host (1, 5, 15 min, ...): %s\n", load);
    }
    std::fclose(file);
  }
  std::printf("# MPI: %s, thread level %s\n", mpi_line.c_str(),
              mpi_thread_level == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE" : "below MULTIPLE");
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
  std::printf("# MPI baseline: %s\n",
              options.mpi_alongside
                  ? "alongside (after hvd::init(), size by size, coordinator thread running)"
                  : "isolated (all sizes before hvd::init(): no coordinator thread running)");
  std::printf("# time: max over ranks of the per-rank average; each iteration after MPI_Barrier\n");
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

// In place, the values change from one timed iteration to the next (Sum
// grows); that does not change the work done. --check verifies one separate
// call on freshly filled buffers.
Result measure_mpi(const Options& options, const Step& step, void* buffer, int rank, int n) {
  Result result;
  if (options.check) {
    fill(options.dtype, buffer, step.count, rank);
    mpi_allreduce(buffer, step.count, options.dtype, options.op, n);
    result.wrong = sum_over_ranks(
        verify(options.dtype, options.op, buffer, step.count, rank, n, "MPI_Allreduce"));
  }
  fill(options.dtype, buffer, step.count, rank);
  result.seconds = time_per_iteration(step.warmup, step.iters, [&] {
    mpi_allreduce(buffer, step.count, options.dtype, options.op, n);
  });
  return result;
}

Result measure_hvd(const Options& options, const Step& step, void* buffer, int rank, int n) {
  const std::string name = "bench.allreduce." + std::to_string(step.bytes);
  const hvd::TensorView view(buffer, options.dtype, {static_cast<std::int64_t>(step.count)});
  Result result;
  if (options.check) {
    fill(options.dtype, buffer, step.count, rank);
    hvd::allreduce(view, name, options.op);
    result.wrong = sum_over_ranks(
        verify(options.dtype, options.op, buffer, step.count, rank, n, "horovodcpp"));
  }
  fill(options.dtype, buffer, step.count, rank);
  result.seconds =
      time_per_iteration(step.warmup, step.iters, [&] { hvd::allreduce(view, name, options.op); });
  return result;
}

std::string wrong_str(const Result& result) {
  return result.wrong < 0 ? std::string("N/A") : std::to_string(result.wrong);
}

void print_row(const Options& options, const Step& step, const Result& hvd_result,
               const Result* mpi_result, int n) {
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
  const double hvd_algbw = step.bytes / hvd_result.seconds / 1e9;
  std::printf("  %10zu %11zu %8s %7s %5d  %9.2f %7.3f %7.3f %6s", step.bytes, step.count,
              hvd::dtype_name(options.dtype), hvd::reduce_op_name(options.op), step.iters,
              hvd_result.seconds * 1e6, hvd_algbw, hvd_algbw * bus_factor,
              wrong_str(hvd_result).c_str());
  if (mpi_result) {
    const double mpi_algbw = step.bytes / mpi_result->seconds / 1e9;
    // The busbw ratio is the time ratio (and stays defined for n == 1).
    std::printf("  %9.2f %7.3f %7.3f %6s  %7.4f\n", mpi_result->seconds * 1e6, mpi_algbw,
                mpi_algbw * bus_factor, wrong_str(*mpi_result).c_str(),
                mpi_result->seconds / hvd_result.seconds);
  } else {
    std::printf("  %9s %7s %7s %6s  %7s\n", "-", "-", "-", "-", "-");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const Options options = parse_options(argc, argv, rank);  // exits on a bad option
  const bool with_mpi = has_mpi_datatype(options.dtype);
  const std::vector<Step> steps = plan(options, rank);

  std::size_t largest = 0;
  for (const Step& step : steps) largest = std::max(largest, step.bytes);
  std::vector<std::uint64_t> storage(largest / 8 + 1);
  void* buffer = storage.data();

  // Isolated baseline: raw MPI before hvd::init(), with no horovodcpp
  // coordinator thread in the process.
  std::vector<Result> mpi_results(steps.size());
  if (with_mpi && !options.mpi_alongside) {
    for (std::size_t i = 0; i < steps.size(); ++i) {
      mpi_results[i] = measure_mpi(options, steps[i], buffer, rank, n);
    }
  }

  long long wrong_total = 0;
  try {
    hvd::init();
    if (rank == 0) print_header(options, argc, argv, n, provided);
    double hvd_busbw_sum = 0, mpi_busbw_sum = 0;
    const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 0.0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const Result hvd_result = measure_hvd(options, steps[i], buffer, rank, n);
      if (with_mpi && options.mpi_alongside) {
        mpi_results[i] = measure_mpi(options, steps[i], buffer, rank, n);
      }
      wrong_total += std::max(0LL, hvd_result.wrong) + std::max(0LL, mpi_results[i].wrong);
      hvd_busbw_sum += steps[i].bytes / hvd_result.seconds / 1e9 * bus_factor;
      if (with_mpi) mpi_busbw_sum += steps[i].bytes / mpi_results[i].seconds / 1e9 * bus_factor;
      if (rank == 0)
        print_row(options, steps[i], hvd_result, with_mpi ? &mpi_results[i] : nullptr, n);
    }
    if (rank == 0) {
      if (options.check) {
        std::printf("# Out of bounds values : %lld %s\n", wrong_total,
                    wrong_total ? "FAILED" : "OK");
      }
      std::printf("# Avg bus bandwidth    : horovodcpp %.3f GB/s",
                  hvd_busbw_sum / static_cast<double>(steps.size()));
      if (with_mpi) {
        std::printf(", MPI %.3f GB/s", mpi_busbw_sum / static_cast<double>(steps.size()));
      }
      std::printf("\n");
      std::fflush(stdout);
    }
    hvd::shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: allreduce_bench failed: %s\n", rank, e.what());
    std::fflush(stderr);
    // Another rank may be blocked in a collective: do not wait for it.
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
