#include "runner/placement/hosts.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <set>
#include <sstream>
#include <stdexcept>

#include "runner/cli/options.h"
#include "runner/cli/text.h"
#include "settings/slurm_environment.h"

namespace hvdrun {
namespace {

// A slot count: a whole positive number. `where` says where it came from.
int parse_slots(const std::string& text, const std::string& where) {
  if (!all_digits(text) || text.size() > 9) {
    usage("bad slot count '" + text + "' in " + where + " (expected a whole number >= 1)");
  }
  int slots = std::atoi(text.c_str());
  if (slots < 1) usage("slot count must be at least 1, got " + text + " in " + where);
  return slots;
}

void check_host_name(const std::string& name, const std::string& where) {
  if (name.empty()) usage("missing host name in " + where);
  for (char c : name) {
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == ':' || c == '=') {
      usage("bad host name '" + name + "' in " + where);
    }
  }
}

void add_host(std::vector<Host>& hosts, Host host, const std::string& where) {
  for (const Host& h : hosts) {
    if (h.name == host.name) {
      usage("host '" + host.name + "' is listed twice (" + where +
            "); give it once with the total slots");
    }
  }
  hosts.push_back(std::move(host));
}

// "host:N" or "host" -> Host; `where` for messages.
Host parse_host_entry(const std::string& entry, const std::string& where) {
  Host host;
  std::size_t colon = entry.rfind(':');
  if (colon == std::string::npos) {
    host.name = entry;
  } else {
    host.name = entry.substr(0, colon);
    host.slots = parse_slots(entry.substr(colon + 1), where);
  }
  check_host_name(host.name, where);
  return host;
}

// The shared Slurm parsers, their errors as usage errors.
template <typename Parse>
auto slurm_parsed(Parse parse) {
  try {
    return parse();
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
}

std::string lookup(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

}  // namespace

std::vector<Host> parse_host_list(const std::string& text) {
  if (trim(text).empty()) usage("empty host list (expected e.g. -H h1:4,h2:4)");
  std::vector<Host> hosts;
  std::stringstream stream(text);
  std::string entry;
  while (std::getline(stream, entry, ',')) {
    entry = trim(entry);
    std::string where = "host list '" + text + "'";
    if (entry.empty()) usage("empty entry in " + where);
    add_host(hosts, parse_host_entry(entry, "'" + entry + "' of " + where), where);
  }
  if (!text.empty() && text.back() == ',') usage("empty entry in host list '" + text + "'");
  return hosts;
}

std::vector<Host> parse_hostfile_text(const std::string& text) {
  std::vector<Host> hosts;
  std::stringstream stream(text);
  std::string line;
  int line_number = 0;
  while (std::getline(stream, line)) {
    ++line_number;
    std::string where = "hostfile line " + std::to_string(line_number);
    std::size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    std::stringstream words(line);
    std::string first;
    words >> first;
    Host host = parse_host_entry(first, where + " ('" + line + "')");
    bool colon_form = first.find(':') != std::string::npos;
    std::string word;
    while (words >> word) {
      std::size_t eq = word.find('=');
      std::string key = eq == std::string::npos ? word : word.substr(0, eq);
      if (key == "slots" && eq != std::string::npos && !colon_form) {
        host.slots = parse_slots(word.substr(eq + 1), where + " ('" + line + "')");
      } else if (key == "max_slots" || key == "max-slots") {
        // Open MPI's hostfile field; the placement uses slots only.
      } else {
        usage("unexpected '" + word + "' on " + where + " ('" + line +
              "'); expected 'host slots=N', 'host:N' or 'host'");
      }
    }
    add_host(hosts, host, where);
  }
  if (hosts.empty()) usage("the hostfile lists no hosts");
  return hosts;
}

std::vector<std::string> expand_slurm_nodelist(const std::string& text) {
  return slurm_parsed([&] { return hvd::slurm::expand_nodelist(text); });
}

std::vector<Host> hosts_from_environment(const std::map<std::string, std::string>& env,
                                         const std::string& pbs_nodefile_text) {
  std::string nodelist = lookup(env, "SLURM_JOB_NODELIST");
  if (nodelist.empty()) nodelist = lookup(env, "SLURM_NODELIST");
  if (!nodelist.empty()) {
    std::vector<std::string> nodes = expand_slurm_nodelist(nodelist);
    std::string tasks_text = lookup(env, "SLURM_TASKS_PER_NODE");
    std::vector<int> tasks;
    if (!tasks_text.empty()) {
      tasks = slurm_parsed(
          [&] { return hvd::slurm::expand_tasks_per_node(tasks_text, "SLURM_TASKS_PER_NODE"); });
      if (tasks.size() != nodes.size()) {
        usage("SLURM_TASKS_PER_NODE='" + tasks_text + "' describes " +
              std::to_string(tasks.size()) + " nodes but SLURM_JOB_NODELIST='" + nodelist +
              "' has " + std::to_string(nodes.size()));
      }
    } else {
      std::string per_node = lookup(env, "SLURM_NTASKS_PER_NODE");
      int n = per_node.empty() ? 1 : parse_slots(per_node, "SLURM_NTASKS_PER_NODE");
      tasks.assign(nodes.size(), n);
    }
    std::vector<Host> hosts;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      add_host(hosts, Host{nodes[i], tasks[i]}, "SLURM_JOB_NODELIST='" + nodelist + "'");
    }
    return hosts;
  }
  if (!lookup(env, "PBS_NODEFILE").empty()) {
    std::vector<Host> hosts;
    std::stringstream stream(pbs_nodefile_text);
    std::string line;
    while (std::getline(stream, line)) {
      line = trim(line);
      if (line.empty() || line[0] == '#') continue;
      bool found = false;
      for (Host& h : hosts) {
        if (h.name == line) {
          ++h.slots;
          found = true;
          break;
        }
      }
      if (!found) hosts.push_back(Host{line, 1});
    }
    if (hosts.empty()) usage("PBS_NODEFILE '" + lookup(env, "PBS_NODEFILE") + "' lists no hosts");
    return hosts;
  }
  return {};
}

std::vector<RankPlacement> place_ranks(const std::vector<Host>& hosts, int num_proc) {
  if (num_proc < 1) usage("-np must be at least 1, got " + std::to_string(num_proc));
  if (hosts.empty()) usage("no hosts to place ranks on");
  long long total = 0;
  for (const Host& h : hosts) total += h.slots;
  if (num_proc > total) {
    std::string list;
    for (const Host& h : hosts) {
      list += (list.empty() ? "" : ",") + h.name + ":" + std::to_string(h.slots);
    }
    usage("-np " + std::to_string(num_proc) + " is more than the " + std::to_string(total) +
          " slots of the hosts (" + list + ")");
  }
  // Ranks per host, host by host.
  std::vector<int> per_host;
  int remaining = num_proc;
  for (const Host& h : hosts) {
    int n = remaining < h.slots ? remaining : h.slots;
    if (n == 0) break;
    per_host.push_back(n);
    remaining -= n;
  }
  std::vector<RankPlacement> placements;
  int rank = 0;
  for (std::size_t hi = 0; hi < per_host.size(); ++hi) {
    for (int local = 0; local < per_host[hi]; ++local) {
      RankPlacement p;
      p.rank = rank++;
      p.host = hosts[hi].name;
      p.local_rank = local;
      p.local_size = per_host[hi];
      // Cross communicator: the hosts that have a rank with this local_rank.
      for (std::size_t hj = 0; hj < per_host.size(); ++hj) {
        if (per_host[hj] > local) {
          if (hj < hi) ++p.cross_rank;
          ++p.cross_size;
        }
      }
      placements.push_back(p);
    }
  }
  return placements;
}

}  // namespace hvdrun
