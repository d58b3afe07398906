#include "backend/gloo/rank0_store.h"

#include "base/check.h"
#include "core/diagnostics/logging.h"
#include "settings/settings.h"
#include "store/tcp_store.h"
#include "store/tcp_store_server.h"

namespace hvd {
namespace {

using settings::Setting;

// The store's server with rank 0's own client of it, which closes first.
struct HostedStore {
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<TcpStore> client;
};

}  // namespace

std::string job_secret_or(const std::string& fallback, bool guessable, const std::string& job,
                          int rank) {
  if (settings::is_set(Setting::kJobSecret)) {
    const std::string secret = settings::read_string(Setting::kJobSecret);
    HVD_CHECK(!secret.empty(), InvalidArgument, "HOROVODCPP_JOB_SECRET is set but empty");
    return secret;
  }
  if (rank == 0 && guessable) {
    HVD_LOG(Warning) << job << ": the rendezvous store is guarded only by the job's ids; export "
                     << "HOROVODCPP_JOB_SECRET (e.g. $(openssl rand -hex 16)) to every rank to "
                        "keep other users of the hosts out";
  }
  return fallback;
}

std::shared_ptr<Store> rank0_store(const Rank0StorePlace& place, int rank,
                                   std::chrono::milliseconds timeout) {
  if (rank != 0) {
    try {
      return std::make_shared<TcpStore>(place.host, place.port, timeout, place.secret);
    } catch (const Error& e) {
      HVD_THROW(BackendError,
                place.job << ": rank " << rank << " cannot reach the rendezvous store of rank 0 at "
                          << place.host << ":" << place.port
                          << " (did rank 0 start? its error says why not): " << e.what());
    }
  }
  auto hosted = std::make_shared<HostedStore>();
  try {
    hosted->server = std::make_unique<TcpStoreServer>("0.0.0.0", place.port, place.secret);
  } catch (const Error& e) {
    HVD_THROW(BackendError, place.job << ": rank 0 cannot host the rendezvous store on port "
                                      << place.port << " of " << place.host
                                      << " (another job may hold it; export "
                                      << "HOROVODCPP_GLOO_RENDEZVOUS_PORT=<a free port> to "
                                      << "every rank): " << e.what());
  }
  hosted->client = std::make_unique<TcpStore>("127.0.0.1", place.port, timeout, place.secret);
  HVD_LOG(Debug) << place.job << ": rendezvous store on " << place.host << ":" << place.port;
  return std::shared_ptr<Store>(hosted, hosted->client.get());
}

}  // namespace hvd
