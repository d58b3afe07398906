#include "settings/torchrun_environment.h"

#include <cstdlib>
#include <stdexcept>

#include "base/text.h"
#include "horovodcpp/errors.h"
#include "settings/settings.h"

namespace hvd {
namespace torchrun {
namespace {

[[noreturn]] void bad(const std::string& message) { throw std::invalid_argument(message); }

const char* read(const slurm::Lookup& lookup, const char* name) {
  const char* value = lookup(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

int number(const slurm::Lookup& lookup, const char* name, int minimum) {
  const char* value = read(lookup, name);
  if (value == nullptr) bad(std::string(name) + " is not set (torchrun sets it)");
  const std::string text = value;
  if (!all_digits(text) || text.size() > 9 || std::atoi(value) < minimum) {
    bad(std::string(name) + "='" + text + "' is not a whole number of at least " +
        std::to_string(minimum));
  }
  return std::atoi(value);
}

bool loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

}  // namespace

std::optional<Task> task(const slurm::Lookup& lookup) {
  if (read(lookup, "RANK") == nullptr || read(lookup, "WORLD_SIZE") == nullptr) return std::nullopt;
  Task task;
  task.rank = number(lookup, "RANK", 0);
  task.size = number(lookup, "WORLD_SIZE", 1);
  if (task.rank >= task.size) {
    bad("RANK=" + std::to_string(task.rank) +
        " is not a rank of WORLD_SIZE=" + std::to_string(task.size));
  }
  const char* addr = read(lookup, "MASTER_ADDR");
  if (addr == nullptr) bad("MASTER_ADDR is not set (torchrun sets it): where rank 0 runs");
  task.master_addr = addr;
  task.master_port = number(lookup, "MASTER_PORT", 1);
  if (task.master_port > 65534)
    bad("MASTER_PORT=" + std::to_string(task.master_port) + " is too large");
  if (const char* run_id = read(lookup, "TORCHELASTIC_RUN_ID")) task.run_id = run_id;

  const bool local_given = read(lookup, "LOCAL_RANK") || read(lookup, "LOCAL_WORLD_SIZE");
  if (!local_given) {
    if (!loopback(task.master_addr)) {
      bad("LOCAL_RANK and LOCAL_WORLD_SIZE are not set and MASTER_ADDR=" + task.master_addr +
          " is not this host: set both (torchrun does) so that ranks on one host share memory");
    }
    task.local_rank = task.rank;
    task.local_size = task.size;
  } else {
    task.local_rank = number(lookup, "LOCAL_RANK", 0);
    task.local_size = number(lookup, "LOCAL_WORLD_SIZE", 1);
  }
  if (task.local_rank >= task.local_size || task.size % task.local_size != 0) {
    bad("LOCAL_RANK=" + std::to_string(task.local_rank) +
        " of LOCAL_WORLD_SIZE=" + std::to_string(task.local_size) +
        " is not a place in WORLD_SIZE=" + std::to_string(task.size) +
        " (torchrun runs the same number of ranks on every node)");
  }
  task.nodes = task.size / task.local_size;
  task.node_rank =
      read(lookup, "GROUP_RANK") ? number(lookup, "GROUP_RANK", 0) : task.rank / task.local_size;
  if (task.node_rank >= task.nodes) {
    bad("GROUP_RANK=" + std::to_string(task.node_rank) + " is not one of the " +
        std::to_string(task.nodes) + " nodes of WORLD_SIZE / LOCAL_WORLD_SIZE");
  }
  return task;
}

std::optional<Task> launched_task() {
  if (settings::is_set(settings::Setting::kRank)) return std::nullopt;
  for (const char* mpi : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}) {
    if (std::getenv(mpi) != nullptr) return std::nullopt;
  }
  try {
    return task([](const char* name) { return std::getenv(name); });
  } catch (const std::invalid_argument& e) {
    throw InvalidArgument(std::string("cannot take this rank's place from torchrun's "
                                      "variables: ") +
                          e.what());
  }
}

}  // namespace torchrun
}  // namespace hvd
