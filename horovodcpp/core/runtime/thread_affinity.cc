#include "core/runtime/thread_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "base/check.h"
#include "settings/settings.h"

namespace hvd {
namespace {

const std::string& variable_name() {
  static const std::string name = settings::variable(settings::Setting::kThreadAffinity);
  return name;
}

std::vector<int> parse_ids(const std::string& list) {
  std::vector<int> ids;
  for (std::size_t begin = 0, comma = 0; comma != std::string::npos; begin = comma + 1) {
    comma = list.find(',', begin);
    const std::string item = list.substr(begin, comma - begin);
    errno = 0;
    char* end = nullptr;
    const long id = std::strtol(item.c_str(), &end, 10);
    HVD_CHECK(!item.empty() && *end == '\0' && errno == 0 && id >= 0 && id < CPU_SETSIZE,
              InvalidArgument,
              variable_name() << "='" << list << "': '" << item
                              << "' is not a CPU id (a whole number from 0 to " << CPU_SETSIZE - 1
                              << ")");
    ids.push_back(static_cast<int>(id));
  }
  return ids;
}

}  // namespace

int thread_affinity_cpu(const std::string& list, int local_rank, int local_size) {
  const std::vector<int> ids = parse_ids(list);
  HVD_CHECK(static_cast<int>(ids.size()) >= local_size, InvalidArgument,
            variable_name() << "='" << list << "' names " << ids.size() << " CPU(s) for the "
                            << local_size << " ranks of this host: give one per rank");
  const int cpu = ids[static_cast<std::size_t>(local_rank)];
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  HVD_CHECK(sched_getaffinity(0, sizeof(allowed), &allowed) == 0 && CPU_ISSET(cpu, &allowed),
            InvalidArgument,
            variable_name() << "='" << list << "': local rank " << local_rank << " gets CPU " << cpu
                            << ", which this process may not run on");
  return cpu;
}

std::optional<int> thread_affinity_from_settings(int local_rank, int local_size) {
  const auto list = settings::read_text(settings::Setting::kThreadAffinity);
  if (!list || list->empty()) return std::nullopt;
  return thread_affinity_cpu(*list, local_rank, local_size);
}

void pin_thread(std::thread& thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int rc = pthread_setaffinity_np(thread.native_handle(), sizeof(set), &set);
  HVD_CHECK(rc == 0, InvalidArgument,
            variable_name() << ": pinning the coordinator thread to CPU " << cpu
                            << " failed (error " << rc << ")");
}

}  // namespace hvd
