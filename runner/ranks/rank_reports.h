// RankReports: what the ranks tell hvdrun through the store it serves while
// the job runs (horovodcpp/core/runtime/hvdrun_link.h): each rank's pid, and the
// failures their coordinators stopped on.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runner/ranks/process_group.h"

namespace hvd {
class TcpStore;
}

namespace hvdrun {

// The summary line of one failure report ("RANK\nBLAMED\nMESSAGE"):
// "rank 1 stopped answering (rank 0: MESSAGE)" when rank 0 blamed rank 1,
// "rank 0 failed: MESSAGE" when it blamed nobody.
std::string describe_failure_report(const std::string& value);

class RankReports {
 public:
  // Reads the store hvdrun serves on this machine at `port`.
  RankReports(int port, const std::string& secret);
  ~RankReports();

  // The first failure reported, summed up as describe_failure_report puts
  // it, with the ranks it blamed; an empty summary while none is. Cheap
  // enough to poll: one local round trip.
  ReportedFailure first_failure();
  // Whether each of the job's `size` ranks has reported a failure or been
  // blamed in a report.
  bool all_accounted(int size);
  // The pid rank `rank` reported at init, or 0.
  long pid_of(int rank);

 private:
  // Reads the reports not read yet.
  void read_new_reports();

  std::unique_ptr<hvd::TcpStore> store_;
  std::vector<std::string> reports_;  // hvdrun/failure/1, /2, ...
  std::set<int> accounted_;           // reporters and the ranks they blamed
  std::map<int, long> pids_;
};

}  // namespace hvdrun
