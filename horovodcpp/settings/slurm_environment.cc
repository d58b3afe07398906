#include "settings/slurm_environment.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "horovodcpp/errors.h"
#include "settings/settings.h"

namespace hvd {
namespace slurm {
namespace {

[[noreturn]] void bad(const std::string& message) { throw std::invalid_argument(message); }

// A count >= 1 (or >= 0 with `zero_ok`); `where` says where it came from.
int parse_count(const std::string& text, const std::string& where, bool zero_ok = false) {
  if (!all_digits(text) || text.size() > 9) {
    bad("bad number '" + text + "' in " + where + " (expected a whole number)");
  }
  const int n = std::atoi(text.c_str());
  if (n < (zero_ok ? 0 : 1)) bad("'" + text + "' in " + where + " must be at least 1");
  return n;
}

// Splits on commas that are not inside [...].
std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> parts;
  std::string current;
  int depth = 0;
  for (char c : text) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

// "01-03,07" -> {"01","02","03","07"} (zero padding kept: width of the start).
std::vector<std::string> expand_range_list(const std::string& body, const std::string& whole) {
  std::vector<std::string> out;
  std::stringstream stream(body);
  std::string range;
  while (std::getline(stream, range, ',')) {
    range = trim(range);
    const std::size_t dash = range.find('-');
    const std::string first = dash == std::string::npos ? range : range.substr(0, dash);
    const std::string last = dash == std::string::npos ? range : range.substr(dash + 1);
    if (!all_digits(first) || !all_digits(last) || first.size() > 9 || last.size() > 9) {
      bad("bad range '" + range + "' in Slurm node list '" + whole + "'");
    }
    const long lo = std::atol(first.c_str());
    const long hi = std::atol(last.c_str());
    if (hi < lo) bad("descending range '" + range + "' in Slurm node list '" + whole + "'");
    if (hi - lo > 100000) bad("range '" + range + "' is too large in '" + whole + "'");
    for (long n = lo; n <= hi; ++n) {
      std::string digits = std::to_string(n);
      if (digits.size() < first.size()) digits.insert(0, first.size() - digits.size(), '0');
      out.push_back(digits);
    }
  }
  if (out.empty()) bad("empty brackets in Slurm node list '" + whole + "'");
  return out;
}

// One node expression, possibly with several bracket groups.
void expand_one(const std::string& expr, const std::string& whole, std::vector<std::string>& out) {
  std::vector<std::string> prefixes = {""};
  std::size_t i = 0;
  while (i < expr.size()) {
    const std::size_t open = expr.find('[', i);
    const std::string literal =
        expr.substr(i, open == std::string::npos ? std::string::npos : open - i);
    if (literal.find(']') != std::string::npos) {
      bad("unbalanced ']' in Slurm node list '" + whole + "'");
    }
    for (std::string& p : prefixes) p += literal;
    if (open == std::string::npos) break;
    const std::size_t close = expr.find(']', open);
    if (close == std::string::npos) bad("unbalanced '[' in Slurm node list '" + whole + "'");
    const std::vector<std::string> values =
        expand_range_list(expr.substr(open + 1, close - open - 1), whole);
    std::vector<std::string> next;
    next.reserve(prefixes.size() * values.size());
    for (const std::string& p : prefixes) {
      for (const std::string& v : values) next.push_back(p + v);
    }
    prefixes = std::move(next);
    i = close + 1;
  }
  for (std::string& p : prefixes) out.push_back(std::move(p));
}

std::string read(const Lookup& lookup, const char* name) {
  const char* value = lookup(name);
  return value ? value : "";
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& text) {
  std::vector<std::string> nodes;
  const std::string t = trim(text);
  if (t.empty()) bad("empty Slurm node list");
  for (const std::string& raw : split_top_level(t)) {
    const std::string expr = trim(raw);
    if (expr.empty()) bad("empty entry in Slurm node list '" + text + "'");
    expand_one(expr, text, nodes);
  }
  return nodes;
}

std::vector<int> expand_tasks_per_node(const std::string& text, const std::string& variable) {
  std::vector<int> out;
  std::stringstream stream(text);
  std::string item;
  const std::string where = variable + "='" + text + "'";
  while (std::getline(stream, item, ',')) {
    item = trim(item);
    const std::size_t paren = item.find('(');
    int count = 1;
    std::string number = item;
    if (paren != std::string::npos) {
      number = item.substr(0, paren);
      const std::string rest = item.substr(paren);
      if (rest.size() < 4 || rest.compare(0, 2, "(x") != 0 || rest.back() != ')') {
        bad("bad entry '" + item + "' in " + where + " (expected N or N(xM))");
      }
      count = parse_count(rest.substr(2, rest.size() - 3), where);
    }
    const int tasks = parse_count(number, where);
    for (int k = 0; k < count; ++k) out.push_back(tasks);
  }
  if (out.empty()) bad("empty " + where);
  return out;
}

std::optional<StepTask> step_task(const Lookup& lookup) {
  const std::string step_id = read(lookup, "SLURM_STEP_ID");
  const std::string procid = read(lookup, "SLURM_PROCID");
  const std::string num_tasks = read(lookup, "SLURM_STEP_NUM_TASKS");
  if (step_id.empty() || procid.empty() || num_tasks.empty()) return std::nullopt;
  StepTask task;
  task.step_id = step_id;
  task.job_id = read(lookup, "SLURM_JOB_ID");
  task.mpi_launched = lookup("PMIX_RANK") || lookup("PMI_RANK") || lookup("OMPI_COMM_WORLD_RANK");
  task.size = parse_count(num_tasks, "SLURM_STEP_NUM_TASKS");
  task.rank = parse_count(procid, "SLURM_PROCID", /*zero_ok=*/true);
  task.local_rank = parse_count(read(lookup, "SLURM_LOCALID"), "SLURM_LOCALID", true);
  if (task.rank >= task.size) {
    bad("SLURM_PROCID=" + procid + " is not a task of a step of SLURM_STEP_NUM_TASKS=" + num_tasks);
  }
  const std::string nodelist = read(lookup, "SLURM_STEP_NODELIST");
  const std::string per_node = read(lookup, "SLURM_STEP_TASKS_PER_NODE");
  task.nodes = expand_nodelist(nodelist);
  const std::vector<int> tasks = expand_tasks_per_node(per_node, "SLURM_STEP_TASKS_PER_NODE");
  if (tasks.size() != task.nodes.size()) {
    bad("SLURM_STEP_TASKS_PER_NODE='" + per_node + "' describes " + std::to_string(tasks.size()) +
        " nodes but SLURM_STEP_NODELIST='" + nodelist + "' has " +
        std::to_string(task.nodes.size()));
  }
  const std::string node = read(lookup, "SLURMD_NODENAME");
  const auto here = std::find(task.nodes.begin(), task.nodes.end(), node);
  if (here == task.nodes.end()) {
    bad("SLURMD_NODENAME='" + node + "' is not in SLURM_STEP_NODELIST='" + nodelist + "'");
  }
  const std::size_t index = static_cast<std::size_t>(here - task.nodes.begin());
  task.node = node;
  task.local_size = tasks[index];
  if (task.local_rank >= task.local_size) {
    bad("SLURM_LOCALID=" + std::to_string(task.local_rank) + " is not a task of node " + node +
        ", which runs " + std::to_string(task.local_size) + " (SLURM_STEP_TASKS_PER_NODE='" +
        per_node + "')");
  }
  // Horovod's cross communicator: the nodes that have a task of this local rank.
  task.cross_rank = 0;
  task.cross_size = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] <= task.local_rank) continue;
    if (i < index) ++task.cross_rank;
    ++task.cross_size;
  }
  return task;
}

std::optional<StepTask> srun_task() {
  if (settings::is_set(settings::Setting::kRank)) return std::nullopt;
  std::optional<StepTask> task;
  try {
    task = step_task([](const char* name) { return std::getenv(name); });
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument(std::string("cannot take this rank's place from Slurm: ") + e.what());
  }
  // torchrun inside a step (`srun torchrun ...`): its workers inherit the
  // step task's variables, but their job is torchrun's (RANK, WORLD_SIZE).
  const char* rank = std::getenv("RANK");
  const char* size = std::getenv("WORLD_SIZE");
  if (task && rank != nullptr && size != nullptr &&
      (std::to_string(task->rank) != rank || std::to_string(task->size) != size)) {
    return std::nullopt;
  }
  return task;
}

int derived_rendezvous_port(const StepTask& task) {
  // 12000-31999: above the common services, below Linux's ephemeral ports
  // (32768+). A collision is an error naming the port; then
  // HOROVODCPP_GLOO_RENDEZVOUS_PORT picks another.
  unsigned long long mix = 0;
  for (const std::string* id : {&task.job_id, &task.step_id}) {
    for (char c : *id) mix = mix * 131 + static_cast<unsigned char>(c);
    mix = mix * 131 + '.';
  }
  return 12000 + static_cast<int>(mix % 20000);
}

}  // namespace slurm
}  // namespace hvd
