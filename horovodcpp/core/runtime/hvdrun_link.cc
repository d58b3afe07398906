#include "core/runtime/hvdrun_link.h"

#include <unistd.h>

#include <chrono>

#include "base/check.h"
#include "base/error_message.h"
#include "core/diagnostics/logging.h"
#include "core/diagnostics/peer_failure.h"
#include "settings/settings.h"
#include "store/tcp_store.h"

namespace hvd {
namespace {

// hvdrun answers at once or is gone: a report must never hold up a rank.
constexpr auto kConnectTimeout = std::chrono::seconds(5);
constexpr auto kReplyTimeout = std::chrono::seconds(2);

}  // namespace

std::optional<RendezvousAddress> rendezvous_address() {
  using settings::Setting;
  const bool host = settings::is_set(Setting::kGlooRendezvousAddr);
  const bool port = settings::is_set(Setting::kGlooRendezvousPort);
  if (!host && !port) return std::nullopt;
  HVD_CHECK(host && port, InvalidArgument,
            "HOROVODCPP_GLOO_RENDEZVOUS_ADDR and HOROVODCPP_GLOO_RENDEZVOUS_PORT must be set "
            "together (only "
                << (host ? "ADDR" : "PORT") << " is set)");
  return RendezvousAddress{settings::read_string(Setting::kGlooRendezvousAddr),
                           static_cast<int>(settings::read_int(Setting::kGlooRendezvousPort))};
}

std::unique_ptr<HvdrunLink> HvdrunLink::connect(int rank) {
  const std::string address = settings::read_string(settings::Setting::kHvdrunStore);
  if (address.empty()) return nullptr;
  const std::size_t colon = address.rfind(':');
  try {
    HVD_CHECK(colon != std::string::npos && colon > 0, InvalidArgument,
              "HOROVODCPP_HVDRUN_STORE='" << address << "' is not host:port");
    const int port = std::stoi(address.substr(colon + 1));
    auto store = std::make_unique<TcpStore>(address.substr(0, colon), port,
                                            std::chrono::milliseconds(kConnectTimeout),
                                            settings::read_string(settings::Setting::kJobSecret));
    store->set_io_timeout(kReplyTimeout);
    store->set("hvdrun/pid/" + std::to_string(rank), std::to_string(::getpid()));
    return std::unique_ptr<HvdrunLink>(new HvdrunLink(std::move(store), rank));
  } catch (const std::exception& e) {
    HVD_LOG(Warning) << "cannot reach hvdrun at HOROVODCPP_HVDRUN_STORE=" << address
                     << " (failures will not end the job early): " << e.what();
    return nullptr;
  }
}

HvdrunLink::HvdrunLink(std::unique_ptr<Store> store, int rank)
    : store_(std::move(store)), rank_(rank) {}

HvdrunLink::~HvdrunLink() = default;

std::string HvdrunLink::failure_value(int rank, const std::vector<int>& blamed,
                                      const std::string& message) {
  return std::to_string(rank) + "\n" + rank_list_text(blamed) + "\n" + message;
}

void HvdrunLink::report_failure(const std::exception_ptr& error) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (reported_ || !error) return;
  reported_ = true;
  std::vector<int> blamed;
  try {
    std::rethrow_exception(error);
  } catch (const RankFailure& e) {
    blamed = e.ranks();
  } catch (...) {  // another error names no rank
  }
  const std::string message = message_of(error);
  try {
    const long long n = store_->add("hvdrun/failures", 1);
    store_->set("hvdrun/failure/" + std::to_string(n), failure_value(rank_, blamed, message));
  } catch (const std::exception& e) {
    HVD_LOG(Warning) << "cannot report the failure to hvdrun: " << e.what();
  }
}

}  // namespace hvd
