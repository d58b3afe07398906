// Where ranks run: host lists from -H, a hostfile, Slurm or PBS, and the
// assignment of ranks to hosts (filled host by host, in list order).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace hvdrun {

struct Host {
  std::string name;
  int slots = 1;
};

// "h1:4,h2:4" (a host without ":N" has 1 slot). Throws UsageError.
std::vector<Host> parse_host_list(const std::string& text);
// Lines "host slots=N" or "host:N" or "host"; '#' comments. Throws UsageError.
std::vector<Host> parse_hostfile_text(const std::string& text);
// "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5.
std::vector<std::string> expand_slurm_nodelist(const std::string& text);
// From SLURM_JOB_NODELIST + SLURM_TASKS_PER_NODE ("2(x3),1"), or from the
// lines of PBS_NODEFILE (one line per slot); empty when not in an allocation.
std::vector<Host> hosts_from_environment(const std::map<std::string, std::string>& env,
                                         const std::string& pbs_nodefile_text);

struct RankPlacement {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  int local_size = 0;
  int cross_rank = 0;  // index of the host among hosts that have this local_rank
  int cross_size = 0;
};
// Throws UsageError if num_proc exceeds the total slots.
std::vector<RankPlacement> place_ranks(const std::vector<Host>& hosts, int num_proc);

}  // namespace hvdrun
