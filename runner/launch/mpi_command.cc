#include "runner/launch/mpi_command.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "base/text.h"

namespace hvdrun {
namespace {

[[noreturn]] void usage(const std::string& message) { throw UsageError{message}; }

bool contains(const std::string& text, const char* needle) {
  return text.find(needle) != std::string::npos;
}

// The remote hosts: those not known to be this machine.
bool has_remote_host(const MpiLaunch& launch) {
  for (const Host& h : launch.hosts) {
    if (!launch.local_host_cores.count(h.name)) return true;
  }
  return false;
}

bool oversubscribed(const MpiLaunch& launch) {
  for (const Host& h : launch.hosts) {
    auto it = launch.local_host_cores.find(h.name);
    if (it != launch.local_host_cores.end() && h.slots > it->second) return true;
  }
  return false;
}

// "ssh -o BatchMode=yes {host}" -> "ssh -o BatchMode=yes" (the agent mpirun
// runs as AGENT HOST COMMAND).
std::string remote_shell_agent(const std::string& remote_shell) {
  const std::string suffix = "{host}";
  std::size_t at = remote_shell.find(suffix);
  std::string before = remote_shell.substr(0, at == std::string::npos ? 0 : at);
  bool ok = at != std::string::npos && at + suffix.size() == remote_shell.size() &&
            remote_shell.find(suffix, at + 1) == std::string::npos && !before.empty() &&
            before.back() == ' ';
  if (!ok) {
    usage("--remote-shell '" + remote_shell +
          "' cannot be used with --mpi: mpirun needs the host as the last word "
          "(e.g. 'ssh -o BatchMode=yes {host}'); use --gloo for other templates");
  }
  before.pop_back();
  return before;
}

// "eth0,eth1".
std::string interface_list(const Options& options) {
  std::string list;
  for (const std::string& name : options.network_interfaces) {
    list += (list.empty() ? "" : ",") + name;
  }
  return list;
}

// Settings the ranks get with a value: the interfaces' and --fusion... etc.
std::map<std::string, std::string> set_values(const Options& options) {
  std::map<std::string, std::string> values = options.rank_settings;
  if (!options.network_interfaces.empty()) values["NCCL_SOCKET_IFNAME"] = interface_list(options);
  return values;
}

// hvdrun's binding words, or --binding-args instead (as in horovodrun).
void append_binding(const Options& options, std::vector<std::string>& argv,
                    const std::vector<std::string>& default_words) {
  const auto& words = options.binding_args.empty() ? default_words : options.binding_args;
  argv.insert(argv.end(), words.begin(), words.end());
}

// --mpi-args: right before the command, where horovodrun puts them.
void append_command(const Options& options, std::vector<std::string>& argv) {
  argv.insert(argv.end(), options.mpi_args.begin(), options.mpi_args.end());
  argv.insert(argv.end(), options.command.begin(), options.command.end());
}

std::vector<std::string> open_mpi_command(const Options& options, const MpiLaunch& launch) {
  std::vector<std::string> argv = {"mpirun"};
  if (launch.is_root) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {"--tag-output", "-np", std::to_string(launch.num_proc), "-H",
                           host_list_text(launch.hosts)});
  append_binding(options, argv, {"--bind-to", "none", "--map-by", "slot"});
  if (oversubscribed(launch)) {
    // Open MPI only yields the core while waiting when it knows it is
    // oversubscribed; the slots hvdrun declares hide that, and busy-polling
    // ranks then starve each other (3x slower suites on 2 cores).
    for (const char* word : {"--oversubscribe", "-mca", "mpi_yield_when_idle", "1"}) {
      argv.push_back(word);
    }
  }
  // hvdrun's MCA defaults give way to the user's (OMPI_MCA_<name>, or
  // --mpi-args "-mca <name> ..."): mpirun refuses a parameter given twice,
  // and its command line would silently override the environment.
  const auto user_sets = [&](const std::string& name) {
    return launch.user_mca.count(name) > 0 ||
           std::find(options.mpi_args.begin(), options.mpi_args.end(), name) !=
               options.mpi_args.end();
  };
  if (!user_sets("pml")) argv.insert(argv.end(), {"-mca", "pml", "ob1"});
  const std::optional<std::string> btl = btl_without_openib(launch.site_btl);
  if (btl && !user_sets("btl")) argv.insert(argv.end(), {"-mca", "btl", *btl});
  // horovodcpp's MPI collectives are non-blocking (bounded waits), and Open
  // MPI's non-blocking allreduce takes a binomial tree for up to 4 ranks at
  // every size: half the bandwidth of MPI_Allreduce at 1-64 MiB on 2 ranks.
  // Rabenseifner's matches it (the library sets the same default when it
  // initializes MPI itself; this covers programs that do).
  const char* nbc_allreduce = "coll_libnbc_iallreduce_algorithm";
  if (!user_sets(nbc_allreduce)) argv.insert(argv.end(), {"-mca", nbc_allreduce, "3"});
  if (!options.network_interfaces.empty()) {
    argv.insert(argv.end(), {"-mca", "btl_tcp_if_include", interface_list(options)});
  }
  if (launch.slurm) {
    if (!user_sets("plm")) argv.insert(argv.end(), {"-mca", "plm", "slurm"});
  } else if (has_remote_host(launch)) {
    std::string rsh_args;
    if (options.ssh_port) rsh_args = "-p " + std::to_string(*options.ssh_port);
    if (!options.ssh_identity_file.empty()) {
      rsh_args += (rsh_args.empty() ? "" : " ") + std::string("-i ") + options.ssh_identity_file;
    }
    if (!rsh_args.empty()) argv.insert(argv.end(), {"-mca", "plm_rsh_args", rsh_args});
    if (!options.remote_shell.empty()) {
      argv.insert(argv.end(), {"-mca", "plm_rsh_agent", remote_shell_agent(options.remote_shell)});
    }
  }
  if (!options.output_filename.empty()) {
    argv.insert(argv.end(), {"--output-filename", options.output_filename});
  }
  std::map<std::string, std::string> values = set_values(options);
  for (const auto& entry : launch.forwarded) {
    if (!values.count(entry.first)) argv.insert(argv.end(), {"-x", entry.first});
  }
  for (const auto& [name, value] : values) argv.insert(argv.end(), {"-x", name + "=" + value});
  append_command(options, argv);
  return argv;
}

std::vector<std::string> mpich_command(const Options& options, const MpiLaunch& launch) {
  std::vector<std::string> argv = {"mpiexec", "-prepend-rank",
                                   "-n",      std::to_string(launch.num_proc),
                                   "-hosts",  host_list_text(launch.hosts)};
  append_binding(options, argv, {"-bind-to", "none"});
  if (options.network_interfaces.size() > 1) {
    usage("MPICH (Hydra) takes one network interface (-iface), got " + interface_list(options) +
          "; use --gloo or Open MPI for several");
  }
  if (!options.network_interfaces.empty()) {
    argv.insert(argv.end(), {"-iface", options.network_interfaces.front()});
  }
  if (launch.slurm) {
    argv.insert(argv.end(), {"-launcher", "slurm"});
  } else if (has_remote_host(launch)) {
    if (options.ssh_port || !options.ssh_identity_file.empty()) {
      usage(
          "-p/-i are not supported with MPICH (Hydra): put the port and key in ~/.ssh/config, "
          "or use --gloo");
    }
    if (!options.remote_shell.empty()) {
      std::string agent = remote_shell_agent(options.remote_shell);
      if (agent.find(' ') != std::string::npos) {
        usage("--remote-shell with MPICH (Hydra) must be one program followed by {host}, got '" +
              options.remote_shell + "'");
      }
      argv.insert(argv.end(), {"-launcher", "ssh", "-launcher-exec", agent});
    }
  }
  if (!options.output_filename.empty()) {
    argv.insert(argv.end(), {"-outfile-pattern", options.output_filename + "/rank.%r.stdout",
                             "-errfile-pattern", options.output_filename + "/rank.%r.stderr"});
  }
  std::map<std::string, std::string> values = set_values(options);
  std::string names;
  for (const auto& entry : launch.forwarded) {
    if (!values.count(entry.first)) names += (names.empty() ? "" : ",") + entry.first;
  }
  if (!names.empty()) argv.insert(argv.end(), {"-genvlist", names});
  for (const auto& [name, value] : values) argv.insert(argv.end(), {"-genv", name, value});
  append_command(options, argv);
  return argv;
}

}  // namespace

MpiFlavor detect_mpi_flavor(const std::string& version_text) {
  if (contains(version_text, "Open MPI") || contains(version_text, "OpenRTE") ||
      contains(version_text, "Spectrum MPI")) {
    return MpiFlavor::kOpenMpi;
  }
  if (contains(version_text, "HYDRA") || contains(version_text, "MPICH") ||
      contains(version_text, "Intel(R) MPI") || contains(version_text, "MVAPICH")) {
    return MpiFlavor::kMpich;
  }
  return MpiFlavor::kUnknown;
}

const char* mpi_flavor_name(MpiFlavor flavor) {
  switch (flavor) {
    case MpiFlavor::kOpenMpi: return "Open MPI";
    case MpiFlavor::kMpich: return "MPICH";
    case MpiFlavor::kUnknown: break;
  }
  return "unknown MPI";
}

std::vector<std::string> mpi_command(const Options& options, const MpiLaunch& launch) {
  if (options.command.empty()) usage("missing the command to run");
  if (launch.hosts.empty()) usage("no hosts to run on");
  switch (launch.flavor) {
    case MpiFlavor::kOpenMpi: return open_mpi_command(options, launch);
    case MpiFlavor::kMpich: return mpich_command(options, launch);
    case MpiFlavor::kUnknown: break;
  }
  usage("unrecognized mpirun (neither Open MPI nor MPICH/Hydra); use --gloo");
}

std::optional<int> default_num_proc(const std::map<std::string, std::string>& env,
                                    const std::vector<Host>& allocation_hosts) {
  auto it = env.find("SLURM_NTASKS");
  if (it == env.end() || it->second.empty()) it = env.find("SLURM_NPROCS");
  if (it != env.end() && !it->second.empty()) {
    char* end = nullptr;
    long n = std::strtol(it->second.c_str(), &end, 10);
    if (*end != '\0' || n < 1 || n > 1000000) {
      usage(it->first + "='" + it->second + "' is not a positive number");
    }
    return static_cast<int>(n);
  }
  if (allocation_hosts.empty()) return std::nullopt;
  int total = 0;
  for (const Host& h : allocation_hosts) total += h.slots;
  return total;
}

std::string open_mpi_btl_setting(const std::string& ompi_info_text) {
  const std::string key = "mca:btl:base:param:btl:value:";
  std::istringstream lines(ompi_info_text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key, 0) == 0) return hvd::trim(line.substr(key.size()));
  }
  return "";
}

std::optional<std::string> btl_without_openib(const std::string& site_btl) {
  if (site_btl.empty()) return std::string("^openib");
  // An include list is the site's explicit choice (openib may be how its
  // hosts reach each other): it stands.
  if (site_btl.front() != '^') return std::nullopt;
  std::istringstream items(site_btl.substr(1));
  std::string kept;
  for (std::string item; std::getline(items, item, ',');) {
    item = hvd::trim(item);
    if (item == "openib") return std::nullopt;  // excluded already
    if (!item.empty()) kept += item + ",";
  }
  return "^" + kept + "openib";
}

std::string host_list_text(const std::vector<Host>& hosts) {
  std::string text;
  for (const Host& h : hosts) {
    text += (text.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
  }
  return text;
}

}  // namespace hvdrun
