#include "backend/gloo/gloo_context.h"

#include <dirent.h>
#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "backend/gloo/gloo_slurm.h"
#include "backend/gloo/gloo_store_adapter.h"
#include "backend/gloo/gloo_torchrun.h"
#include "base/check.h"
#include "base/descriptor_limit.h"
#include "core/diagnostics/logging.h"
#include "core/diagnostics/peer_failure.h"
#include "core/runtime/elastic_worker.h"
#include "core/runtime/hvdrun_link.h"
#include "settings/settings.h"
#include "store/file_store.h"
#include "store/tcp_store.h"

namespace hvd {
namespace {

using settings::Setting;

constexpr Setting kJobSettings[] = {Setting::kRank,      Setting::kSize,      Setting::kLocalRank,
                                    Setting::kLocalSize, Setting::kCrossRank, Setting::kCrossSize};

// Set or not; the table bounds it to int.
std::optional<int> int_setting(Setting setting) {
  if (!settings::is_set(setting)) return std::nullopt;
  return static_cast<int>(settings::read_int(setting));
}

void check_place(const char* what, int index, int count) {
  HVD_CHECK(count >= 1 && index >= 0 && index < count, InvalidArgument,
            "HOROVODCPP_" << what << "_RANK=" << index << " and HOROVODCPP_" << what
                          << "_SIZE=" << count << " do not describe a place in the job");
}

// The job from HOROVODCPP_RANK ... CROSS_SIZE: all of them, or none (a
// single-rank job).
Topology topology_from_environment() {
  std::vector<std::optional<int>> values;
  std::vector<std::string> missing;
  for (const Setting setting : kJobSettings) {
    values.push_back(int_setting(setting));
    if (!values.back()) missing.push_back(settings::variable(setting));
  }
  Topology topology;
  if (missing.size() == std::size(kJobSettings)) return topology;  // single rank
  if (!missing.empty()) {
    std::ostringstream list;
    for (std::size_t i = 0; i < missing.size(); ++i) list << (i ? ", " : "") << missing[i];
    HVD_THROW(InvalidArgument,
              "Gloo: the job is only partly described by the environment; missing "
                  << list.str()
                  << " (launch with hvdrun, or set all of HOROVODCPP_RANK, _SIZE, _LOCAL_RANK, "
                     "_LOCAL_SIZE, _CROSS_RANK and _CROSS_SIZE)");
  }
  topology.rank = *values[0];
  topology.size = *values[1];
  topology.local_rank = *values[2];
  topology.local_size = *values[3];
  topology.cross_rank = *values[4];
  topology.cross_size = *values[5];
  HVD_CHECK(topology.size >= 1 && topology.rank >= 0 && topology.rank < topology.size,
            InvalidArgument,
            "HOROVODCPP_RANK=" << topology.rank
                               << " is not a rank of a job of HOROVODCPP_SIZE=" << topology.size);
  check_place("LOCAL", topology.local_rank, topology.local_size);
  check_place("CROSS", topology.cross_rank, topology.cross_size);
  HVD_CHECK(topology.local_size <= topology.size && topology.cross_size <= topology.size,
            InvalidArgument,
            "HOROVODCPP_LOCAL_SIZE=" << topology.local_size
                                     << " or HOROVODCPP_CROSS_SIZE=" << topology.cross_size
                                     << " exceeds HOROVODCPP_SIZE=" << topology.size);
  return topology;
}

std::shared_ptr<Store> store_from_environment(const Topology& topology,
                                              std::chrono::milliseconds timeout) {
  if (const std::optional<RendezvousAddress> address = rendezvous_address()) {
    return std::make_shared<TcpStore>(address->host, address->port, timeout,
                                      settings::read_string(Setting::kJobSecret));
  }
  if (settings::is_set(Setting::kGlooFileStore)) {
    const std::string directory = settings::read_string(Setting::kGlooFileStore);
    HVD_CHECK(!directory.empty(), InvalidArgument, "HOROVODCPP_GLOO_FILE_STORE is empty");
    return std::make_shared<FileStore>(directory);
  }
  HVD_CHECK(topology.size == 1, InvalidArgument,
            "Gloo: rank " << topology.rank << " of a job of " << topology.size
                          << " ranks has no rendezvous store; set "
                             "HOROVODCPP_GLOO_RENDEZVOUS_ADDR and _PORT (hvdrun does) or "
                             "HOROVODCPP_GLOO_FILE_STORE to a directory every rank can see");
  return nullptr;
}

gloo::transport::tcp::attr network_from_environment(const Topology& topology) {
  gloo::transport::tcp::attr attr;
  if (const std::string iface = settings::read_string(Setting::kGlooIface); !iface.empty()) {
    attr.iface = iface;
  } else if (const std::string host = listed_hostname(); !host.empty()) {
    attr.hostname = host;
  } else if (topology.local_size == topology.size) {
    attr.hostname = "127.0.0.1";
  } else {
    attr.hostname = machine_hostname();
  }
  return attr;
}

std::string network_str(const gloo::transport::tcp::attr& attr) {
  return attr.iface.empty() ? "address " + attr.hostname : "interface " + attr.iface;
}

std::shared_ptr<gloo::Context> connect_one(const GlooOptions& options,
                                           const std::shared_ptr<gloo::transport::Device>& device,
                                           const std::string& prefix) {
  auto context =
      std::make_shared<gloo::rendezvous::Context>(options.topology.rank, options.topology.size);
  context->setTimeout(options.timeout);
  std::shared_ptr<gloo::transport::Device> dev = device;
  if (options.store) {
    GlooStoreAdapter store(options.store, prefix, options.timeout);
    context->connectFullMesh(store, dev);
  } else {
    gloo::rendezvous::HashStore store;  // a single rank meets only itself
    context->connectFullMesh(store, dev);
  }
  return context;
}

long open_descriptors() {
  long count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return std::max(0L, count - 3);  // ".", ".." and the directory's own
}

// Two connections to every peer (the control and the data context) on top
// of what is open: a job of hundreds of ranks needs more than the usual
// soft limit of 1024.
void ensure_descriptors_for(int size) {
  const long wanted = open_descriptors() + 2L * size + 64;
  const long allowed = raise_descriptor_limit(wanted);
  HVD_CHECK(allowed < 0 || allowed >= wanted, BackendError,
            "Gloo: connecting to " << size - 1 << " peers needs about " << wanted
                                   << " open descriptors, but this process may open only "
                                   << allowed
                                   << " (ulimit -n, and its hard limit does not allow more): "
                                      "raise the hard limit (limits.conf, LimitNOFILE=)");
}

}  // namespace

std::string listed_hostname() { return settings::read_string(Setting::kHostname); }

std::string machine_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  HVD_CHECK(gethostname(name, sizeof name - 1) == 0, BackendError,
            "Gloo: cannot read this machine's hostname; set HOROVODCPP_GLOO_IFACE or "
            "HOROVODCPP_HOSTNAME");
  return name;
}

namespace detail {

[[noreturn]] void rethrow_as_hvd_error(const char* what) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const gloo::IoException& e) {
    HVD_THROW(RankFailure, "Gloo: connection to a peer was lost or timed out during "
                               << what << " (did a rank die or stop responding?): " << e.what());
  } catch (const gloo::Exception& e) {
    HVD_THROW(BackendError, "Gloo: " << what << " failed: " << e.what());
  } catch (const gloo::EnforceNotMet& e) {
    HVD_THROW(BackendError, "Gloo: " << what << " failed: " << e.what());
  } catch (const std::exception& e) {
    HVD_THROW(BackendError, "Gloo: " << what << " failed: " << e.what());
  } catch (...) {
    HVD_THROW(BackendError, "Gloo: " << what << " failed with an unknown exception");
  }
}

}  // namespace detail

GlooOptions GlooContext::options_from_environment() {
  GlooOptions options;
  options.timeout = peer_timeout(Setting::kGlooTimeoutSeconds);
  const std::optional<slurm::StepTask> step = slurm::srun_task();
  const std::optional<torchrun::Task> torchrun = step ? std::nullopt : torchrun::launched_task();
  const bool own_store = !settings::is_set(Setting::kGlooRendezvousAddr);
  if (step) {
    options.topology = slurm_topology(*step);
    options.store = step->size > 1 && own_store
                        ? slurm_step_store(*step, options.timeout)
                        : store_from_environment(options.topology, options.timeout);
  } else if (torchrun) {
    options.topology = torchrun_topology(*torchrun);
    options.store = torchrun->size > 1 && own_store
                        ? torchrun_store(*torchrun, options.timeout)
                        : store_from_environment(options.topology, options.timeout);
  } else {
    options.topology = topology_from_environment();
    options.store = store_from_environment(options.topology, options.timeout);
  }
  options.network = network_from_environment(options.topology);
  return options;
}

std::shared_ptr<GlooContext> GlooContext::create(
    const std::function<void(const Topology&)>& check_job) {
  if (ElasticWorker* worker = ElasticWorker::get()) {
    std::shared_ptr<GlooContext> context = create_elastic(*worker);
    if (check_job) check_job(context->topology());
    return context;
  }
  const GlooOptions options = options_from_environment();
  if (check_job) check_job(options.topology);
  return create(options);
}

std::shared_ptr<GlooContext> GlooContext::create(const GlooOptions& options) {
  const Topology& topology = options.topology;
  HVD_CHECK(topology.size >= 1 && topology.rank >= 0 && topology.rank < topology.size,
            InvalidArgument, "rank " << topology.rank << " is not in a job of " << topology.size);
  HVD_CHECK(options.store != nullptr || topology.size == 1, InvalidArgument,
            "a Gloo job of " << topology.size << " ranks needs a rendezvous store");
  HVD_CHECK(options.timeout.count() > 0, InvalidArgument, "the Gloo timeout must be positive");

  // Taken before anything can fail, so every rank's n-th init uses the n-th
  // prefix even after a failed attempt.
  const std::string prefix =
      options.prefix.empty() ? GlooStoreAdapter::next_init_prefix() : options.prefix;

  std::shared_ptr<gloo::transport::Device> device;
  // The device's thread writes to the peers' sockets: it starts with SIGPIPE
  // blocked, so a write to a peer that died fails (and names the peer)
  // instead of killing the process (as the coordinator thread does).
  sigset_t pipe, old_mask;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old_mask);
  try {
    device = gloo::transport::tcp::CreateDevice(options.network);
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  } catch (const std::exception& e) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    HVD_THROW(BackendError, "Gloo: cannot listen on " << network_str(options.network)
                                                      << " (set HOROVODCPP_GLOO_IFACE or "
                                                         "HOROVODCPP_HOSTNAME): "
                                                      << e.what());
  }
  std::shared_ptr<GlooContext> context = connect(options, std::move(device), prefix);
  for (int r = 0; r < topology.size; ++r) context->members_.push_back(r);
  return context;
}

std::shared_ptr<GlooContext> GlooContext::create_subset(const std::string& name,
                                                        const Topology& topology,
                                                        const std::vector<int>& members) const {
  HVD_CHECK_EQ(members.size(), static_cast<std::size_t>(topology.size), InvalidArgument,
               "a Gloo subset needs the job rank of each of its ranks");
  GlooOptions options = options_;
  options.topology = topology;
  std::shared_ptr<GlooContext> context = connect(options, device_, prefix_ + name + "/");
  for (int member : members) context->members_.push_back(members_.at(member));
  return context;
}

void GlooContext::check_usable() const {
  const std::lock_guard<std::mutex> lock(state_);
  if (!verdict_.empty()) throw RankFailure(verdict_, silent_);
}

std::shared_ptr<gloo::Context> GlooContext::usable(
    const std::shared_ptr<gloo::Context>& context) const {
  {
    const std::lock_guard<std::mutex> lock(state_);
    if (context) return context;
  }
  // Another thread is giving up (it closed the connections first): its verdict.
  const std::lock_guard<std::mutex> wait(giving_up_);
  check_usable();
  throw RankFailure("Gloo: this rank gave up on its connections to the other ranks");
}

void GlooContext::fail(const char* what) {
  try {
    throw;
  } catch (const gloo::IoException& e) {
    // "[../gloo/transport/tcp/pair.cc:589] Connection closed by peer ...":
    // the source location means nothing to the user.
    std::string cause = e.what();
    if (!cause.empty() && cause.front() == '[' && cause.find("] ") != std::string::npos) {
      cause.erase(0, cause.find("] ") + 2);
    }
    give_up(std::string("Gloo ") + what, cause);
  } catch (...) {
    detail::rethrow_as_hvd_error(what);
  }
}

void GlooContext::give_up(const std::string& operation, const std::string& cause,
                          const std::vector<int>& blamed, bool listen) {
  const std::lock_guard<std::mutex> one_at_a_time(giving_up_);
  check_usable();
  const Topology& topology = options_.topology;
  if (!options_.store) throw peer_failure(operation, blamed, cause);  // a single rank
  Store& store = *options_.store;
  HVD_LOG(Info) << operation << ": giving up (" << cause << "); roll call of the other ranks";
  // A notice is the (maybe empty) list of the ranks its poster blames.
  const std::string notices = prefix_ + "gave_up/";
  std::set<int> named(blamed.begin(), blamed.end());
  try {
    store.set(notices + std::to_string(topology.rank), rank_list_text(blamed));
  } catch (const Error& e) {
    HVD_LOG(Warning) << "Gloo: cannot post this rank's notice in the store: " << e.what();
  }
  // Peers blocked on this rank now fail at once instead of at their timeout.
  {
    const std::lock_guard<std::mutex> lock(state_);
    control_.reset();
    data_.reset();
  }
  const auto deadline = std::chrono::steady_clock::now() + roll_call_window(options_.timeout);
  for (int r = 0; listen && r < topology.size; ++r) {
    if (r == topology.rank) continue;
    const auto left = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()),
                               std::chrono::milliseconds(1));
    try {
      for (int passed_on : parse_rank_list(store.get(notices + std::to_string(r), left))) {
        named.insert(passed_on);
      }
    } catch (const Error&) {
      named.insert(members_[static_cast<std::size_t>(r)]);  // no notice (or no store)
    }
  }
  const std::vector<int> silent(named.begin(), named.end());
  const RankFailure failure = peer_failure(operation, silent, cause);
  {
    const std::lock_guard<std::mutex> lock(state_);
    silent_ = silent;
    verdict_ = failure.what();
  }
  throw failure;
}

std::shared_ptr<GlooContext> GlooContext::connect(const GlooOptions& options,
                                                  std::shared_ptr<gloo::transport::Device> device,
                                                  const std::string& prefix) {
  const Topology& topology = options.topology;
  ensure_descriptors_for(topology.size);
  std::shared_ptr<GlooContext> context(new GlooContext());
  context->options_ = options;
  context->prefix_ = prefix;
  context->device_ = std::move(device);
  const auto seconds = std::chrono::duration<double>(options.timeout).count();
  const std::pair<const char*, std::shared_ptr<gloo::Context>*> roles[] = {
      {"control", &context->control_}, {"data", &context->data_}};
  for (const auto& [role, slot] : roles) {
    try {
      *slot = connect_one(options, context->device_, prefix + role + "/");
    } catch (const Timeout& e) {
      HVD_THROW(BackendError,
                "Gloo rendezvous: rank "
                    << topology.rank << " of " << topology.size
                    << " did not meet every other rank within " << seconds
                    << " s (did every rank start, with the same store?): " << e.what());
    } catch (...) {
      detail::rethrow_as_hvd_error("the rendezvous (connecting to the other ranks)");
    }
  }
  HVD_LOG(Debug) << "Gloo: rank " << topology.rank << " of " << topology.size << " connected on "
                 << context->device_->str() << " under " << prefix << ", timeout " << seconds
                 << " s";
  return context;
}

std::string GlooContext::listen_address() const {
  std::string address;
  try {
    const gloo::transport::tcp::attr resolved =
        gloo::transport::tcp::CreateDeviceAttr(options_.network);
    char host[NI_MAXHOST] = {};
    const int rc = ::getnameinfo(reinterpret_cast<const sockaddr*>(&resolved.ai_addr),
                                 static_cast<socklen_t>(resolved.ai_addrlen), host, sizeof host,
                                 nullptr, 0, NI_NUMERICHOST);
    HVD_CHECK(rc == 0, BackendError,
              "Gloo: cannot print the address of " << network_str(options_.network) << ": "
                                                   << ::gai_strerror(rc));
    address = host;
  } catch (const Error&) {
    throw;
  } catch (...) {
    detail::rethrow_as_hvd_error("resolving the address to listen on");
  }
  return address;
}

GlooContext::~GlooContext() = default;

}  // namespace hvd
