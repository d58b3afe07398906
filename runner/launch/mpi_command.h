// MPI mode: the exact mpirun/mpiexec argv for a job, as pure functions of
// the options, the hosts and what hvdrun found out about this machine.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runner/cli/options.h"
#include "runner/placement/hosts.h"

namespace hvdrun {

enum class MpiFlavor { kUnknown, kOpenMpi, kMpich };

// From the text `mpirun --version` prints: "mpirun (Open MPI) 4.1.4" ->
// kOpenMpi (also IBM Spectrum MPI); "HYDRA build details" (MPICH, MVAPICH,
// Intel MPI) -> kMpich; anything else -> kUnknown.
MpiFlavor detect_mpi_flavor(const std::string& version_text);
const char* mpi_flavor_name(MpiFlavor flavor);

struct MpiLaunch {
  MpiFlavor flavor = MpiFlavor::kOpenMpi;
  bool is_root = false;     // Open MPI: --allow-run-as-root
  std::vector<Host> hosts;  // all listed hosts, in order
  int num_proc = 1;
  // Cores of the hosts that are this machine (name -> cores); a host whose
  // slots exceed its cores gets Open MPI's --oversubscribe.
  std::map<std::string, int> local_host_cores;
  // Variables passed on to the ranks by name (they are in mpirun's own
  // environment): forwarded_environment() of hvdrun's.
  std::map<std::string, std::string> forwarded;
  // Open MPI parameters the user set in hvdrun's environment
  // (OMPI_MCA_<name>): hvdrun's own choice of them steps aside.
  std::set<std::string> user_mca;
  // Open MPI's btl parameter as this machine's configuration sets it
  // (open_mpi_btl_setting of ompi_info's report; "" when unset).
  std::string site_btl;
  // The hosts are a Slurm allocation's: mpirun starts its daemons there
  // with srun (never ssh), so the ranks run inside the job.
  bool slurm = false;
};

// Open MPI:
//   mpirun [--allow-run-as-root] --tag-output -np N -H h1:4,h2:4
//     --bind-to none --map-by slot [--oversubscribe] -mca pml ob1 [-mca btl B]
//     [-mca coll_libnbc_iallreduce_algorithm 3]
//     [-mca btl_tcp_if_include IF1,IF2 -x NCCL_SOCKET_IFNAME=IF1,IF2]
//     [-mca plm_rsh_args "-p PORT -i KEY"] [-mca plm_rsh_agent AGENT]
//     (in a Slurm allocation instead: -mca plm slurm)
//     [--output-filename DIR] -x VAR... -x SETTING=VALUE... [MPI_ARGS...] command...
// MPICH (Hydra):
//   mpiexec -prepend-rank -n N -hosts h1:4,h2:4 -bind-to none [-iface IF]
//     [-launcher-exec AGENT] (in a Slurm allocation: -launcher slurm)
//     [-outfile-pattern DIR/rank.%r.stdout
//     -errfile-pattern DIR/rank.%r.stderr] [-genvlist VAR,...]
//     [-genv SETTING VALUE]... [MPI_ARGS...] command...
// B: the site's btl exclusions and openib (btl_without_openib).
// --binding-args replaces "--bind-to none --map-by slot" (MPICH: "-bind-to
// none"); --mpi-args are the MPI_ARGS.
// Throws UsageError for what the flavor cannot express.
std::vector<std::string> mpi_command(const Options& options, const MpiLaunch& launch);

// The value of Open MPI's btl parameter in `ompi_info --parsable --level 9
// --param btl all` output ("mca:btl:base:param:btl:value:^uct,openib,ofi");
// "" when the text has none.
std::string open_mpi_btl_setting(const std::string& ompi_info_text);

// The btl selection hvdrun passes, or nullopt for none: Horovod keeps Open
// MPI off the openib BTL (`-mca btl ^openib`; registered memory breaks the
// fork() of data-loader workers), but a command-line value replaces the
// site's own: Debian's and Ubuntu's exclude uct, openib and ofi, and with
// ofi back every MPI call polls libfabric (small messages 2.5x slower).
// So openib joins the site's exclusions instead: "" -> "^openib",
// "^uct,ofi" -> "^uct,ofi,openib"; nullopt where openib is excluded
// already, and for an include list (the site's explicit choice).
std::optional<std::string> btl_without_openib(const std::string& site_btl);

// -np when the user gave none: SLURM_NTASKS, else the total slots of the
// allocation's hosts (from hosts_from_environment); nullopt outside one.
std::optional<int> default_num_proc(const std::map<std::string, std::string>& env,
                                    const std::vector<Host>& allocation_hosts);

// "h1:4,h2:4".
std::string host_list_text(const std::vector<Host>& hosts);

}  // namespace hvdrun
