// HvdrunLink: what a rank tells the hvdrun that launched it, through the
// key-value store hvdrun serves (HOROVODCPP_HVDRUN_STORE=host:port, set by
// hvdrun in MPI and Gloo mode alike):
//   hvdrun/pid/RANK      this rank's pid, at init: hvdrun stops ranks on
//                        remote hosts by pid through the remote shell;
//   hvdrun/failures      a counter, and hvdrun/failure/N (N from 1) =
//                        "RANK\nBLAMED\nMESSAGE" (BLAMED: the ranks this
//                        rank saw die or stop answering, comma-separated),
//                        the moment a coordinator stops on an error: hvdrun
//                        ends the job within seconds of the first report,
//                        instead of when the ranks exit (a survivor may
//                        catch the error and go on, or hang on its way out).
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace hvd {

class Store;

// Where hvdrun's rendezvous store is (HOROVODCPP_GLOO_RENDEZVOUS_ADDR and
// _PORT, set for Gloo mode's ranks and elastic workers; the same store takes
// the reports below). nullopt when neither is set, InvalidArgument when only
// one is.
struct RendezvousAddress {
  std::string host;
  int port = 0;
};
std::optional<RendezvousAddress> rendezvous_address();

class HvdrunLink {
 public:
  // The link to hvdrun, or null when HOROVODCPP_HVDRUN_STORE is not set.
  // Reports this process's pid as rank `rank`. An hvdrun that cannot be
  // reached costs a warning, not the job.
  static std::unique_ptr<HvdrunLink> connect(int rank);

  // Reports `error`, the one a coordinator stopped on, unless this process
  // already reported one. Never throws.
  void report_failure(const std::exception_ptr& error) noexcept;

  // The value of one report (tests, and hvdrun reads them back).
  static std::string failure_value(int rank, const std::vector<int>& blamed,
                                   const std::string& message);

  ~HvdrunLink();

 private:
  HvdrunLink(std::unique_ptr<Store> store, int rank);

  std::unique_ptr<Store> store_;
  int rank_;
  std::mutex mutex_;
  bool reported_ = false;
};

}  // namespace hvd
