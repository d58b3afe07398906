// hvdrun --help: the flags, generated from the flag table (runner/flags.cc),
// then the environment variables the ranks and hvdrun read.
#include <sstream>

#include "runner/flags.h"
#include "runner/options.h"

namespace hvdrun {
namespace {

constexpr std::size_t kHelpColumn = 29;
constexpr std::size_t kWidth = 79;

// "  -np N, --num-proc N" padded to the help column, or on a line of its own.
std::string flag_column(const Flag& flag) {
  std::string left = " ";
  for (const std::string& s : flag.spellings) {
    left += (left.size() > 1 ? ", " : " ") + s + (flag.metavar.empty() ? "" : " " + flag.metavar);
  }
  if (left.size() + 2 > kHelpColumn) return left + "\n" + std::string(kHelpColumn, ' ');
  return left + std::string(kHelpColumn - left.size(), ' ');
}

// `text` wrapped at kWidth, continuation lines indented to the help column.
std::string wrapped(const std::string& text) {
  std::istringstream words(text);
  std::string out, word;
  std::size_t column = kHelpColumn;
  while (words >> word) {
    if (column > kHelpColumn && column + 1 + word.size() > kWidth) {
      out += "\n" + std::string(kHelpColumn, ' ');
      column = kHelpColumn;
    } else if (column > kHelpColumn) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
  }
  return out + "\n";
}

std::string flags_text() {
  std::string out, section;
  for (const Flag& flag : flag_table()) {
    if (flag.section != section) {
      section = flag.section;
      out += "\n" + section + ":\n";
    }
    std::string help = flag.help;
    if (!flag.config_key.empty()) {
      help += " [" + flag.config_key + (flag.config_value.empty() ? "" : ": " + flag.config_value) +
              "]";
    }
    out += flag_column(flag) + wrapped(help);
  }
  return out;
}

}  // namespace

std::string help_text() {
  return R"(usage: hvdrun -np N [options] command [args...]

Launches N copies of `command` as one horovodcpp job: through mpirun (MPI
mode) or by starting every rank itself (Gloo mode). Options end at the first
word that is not an option (or at "--"); the rest is the command. Every flag
of horovodrun 0.28.1 is accepted; those whose feature hvdrun lacks fail with
the reason. In [brackets]: the flag's key in a --config-file.
)" + flags_text() +
         R"(
Environment read by the ranks (each HOROVODCPP_X may also be given as
Horovod's HOROVOD_X; the HOROVODCPP_ name wins):
  HOROVODCPP_CYCLE_TIME             ms an idle rank waits before a negotiation cycle
                                    (default 1; submissions start one at once)
  HOROVODCPP_IDLE_SPIN_MICROSECONDS us an idle rank polls before sleeping (default 0)
  HOROVODCPP_LOG_LEVEL              trace|debug|info|warning|error|fatal, any case
                                    (default warning)
  HOROVODCPP_LOG_HIDE_TIME          0: log lines carry the local time (default 1)
  HOROVODCPP_CPU_OPERATIONS         transport: mpi or gloo (alias
    (or HOROVODCPP_CONTROLLER)      HOROVOD_CPU_OPERATIONS / HOROVOD_CONTROLLER)
  HOROVODCPP_FUSION_THRESHOLD       fusion buffer bytes (default 64 MiB; 0 disables)
  HOROVODCPP_CACHE_CAPACITY         response cache entries (default 1024; 0 disables)
  HOROVODCPP_AUTOTUNE               1: rank 0 tunes fusion threshold and cycle time
  HOROVODCPP_AUTOTUNE_LOG           rank 0's CSV log of the autotune samples
  HOROVODCPP_TIMELINE               rank 0 writes a Chrome-trace timeline to this file;
                                    DYNAMIC: no file until start_timeline()
  HOROVODCPP_TIMELINE_MARK_CYCLES   1: mark each coordinator cycle in the timeline
  HOROVODCPP_TIMELINE_MAX_BYTES     the timeline stops growing here (default 256 MiB)
  HOROVODCPP_STALL_CHECK_TIME_SECONDS     warn about tensors missing on some ranks
                                        after this many seconds (default 60; 0: off)
  HOROVODCPP_STALL_SHUTDOWN_TIME_SECONDS  fail every pending operation after this
                                        many seconds of stall (default 600; 0: off)
  HOROVODCPP_STALL_CHECK_DISABLE    1: neither stall warnings nor stall shutdown
  HOROVODCPP_PROCESS_SET_TIMEOUT_SECONDS  add/remove_process_set: how long to wait
                                        for every rank's call (default 60)
  HOROVODCPP_SHM                    0: no shared memory when all ranks share a host
                                    (data path; Gloo mode's negotiation goes over
                                    TCP instead) (default 1: use it)
  HOROVODCPP_PEER_TIMEOUT_SECONDS   wait inside a collective for a peer that does
                                    not answer (default 30); a dead peer fails at
                                    once where the transport sees it (shared
                                    memory, a closed connection)
  HOROVODCPP_SHM_TIMEOUT_SECONDS    the same for shared memory alone
  HOROVODCPP_SHM_SLOT_BYTES         shared-memory chunk per rank (default 256 KiB)
  HOROVODCPP_GLOO_TIMEOUT_SECONDS   the same for Gloo alone, rendezvous and Gloo
                                    mode's TCP negotiation included
  HOROVODCPP_GPU_OPERATIONS         CUDA tensors: nccl (default when built) or
                                    mpi|gloo (staged through pinned host memory
                                    onto the job's CPU transport)
  HOROVODCPP_NCCL_TIMEOUT_SECONDS   NCCL wait before aborting (default 300)
  HOROVODCPP_HIERARCHICAL_ALLREDUCE 1: CUDA allreduce as NCCL inside hosts and
                                    the CPU transport across them (several
                                    hosts, equal ranks per host; default 0)
  HOROVODCPP_GLOO_IFACE             Gloo network interface (alias HOROVOD_GLOO_IFACE)
  HOROVODCPP_GLOO_FILE_STORE        Gloo without hvdrun: a directory shared by
                                    ranks on one host (with HOROVODCPP_RANK, _SIZE,
                                    _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE)
Set by hvdrun in Gloo mode, for every rank: HOROVODCPP_RANK, _SIZE,
_LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE, _HOSTNAME and the same
as Horovod's HOROVOD_RANK, ..., HOROVOD_HOSTNAME (for scripts that shard
their data before init()).
Environment read by hvdrun:
  HVDRUN_REMOTE_SHELL               default for --remote-shell
  HOROVOD_START_TIMEOUT             default for --start-timeout
  SLURM_JOB_NODELIST, SLURM_TASKS_PER_NODE, SLURM_NTASKS, PBS_NODEFILE
                                    the allocation's hosts and slots

Exit status: the job's (0 only if every rank succeeded); 2 for usage errors.
)";
}

}  // namespace hvdrun
