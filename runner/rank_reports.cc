#include "runner/rank_reports.h"

#include <chrono>
#include <sstream>

#include "horovodcpp/errors.h"
#include "store/tcp_store.h"

namespace hvdrun {
namespace {

constexpr std::chrono::milliseconds kNoWait(1);

// The reporting rank and the ranks it blamed, of one report
// ("RANK\nBLAMED\nMESSAGE"); what is not a rank number names nobody.
std::vector<int> ranks_named(const std::string& value, bool with_reporter) {
  std::istringstream in(value);
  std::string rank, blamed;
  std::getline(in, rank);
  std::getline(in, blamed);
  std::vector<std::string> named;
  if (with_reporter) named.push_back(rank);
  std::istringstream ranks(blamed);
  for (std::string r; std::getline(ranks, r, ',');) named.push_back(r);
  std::vector<int> numbers;
  for (const std::string& r : named) {
    try {
      numbers.push_back(std::stoi(r));
    } catch (const std::exception&) {
    }
  }
  return numbers;
}

}  // namespace

std::string describe_failure_report(const std::string& value) {
  std::istringstream in(value);
  std::string rank, blamed, message;
  std::getline(in, rank);
  std::getline(in, blamed);
  std::getline(in, message, '\0');
  if (blamed.empty()) return "rank " + rank + " failed: " + message;
  std::string ranks;
  for (char c : blamed) ranks += c == ',' ? std::string(", ") : std::string(1, c);
  const bool several = blamed.find(',') != std::string::npos;
  return (several ? "ranks " : "rank ") + ranks + " stopped answering (rank " + rank + ": " +
         message + ")";
}

RankReports::RankReports(int port)
    : store_(std::make_unique<hvd::TcpStore>("127.0.0.1", port, std::chrono::seconds(5))) {
  store_->set_io_timeout(std::chrono::seconds(2));
}

RankReports::~RankReports() = default;

void RankReports::read_new_reports() {
  for (;;) {
    try {
      reports_.push_back(
          store_->get("hvdrun/failure/" + std::to_string(reports_.size() + 1), kNoWait));
    } catch (const hvd::Error&) {
      return;  // no further report (yet)
    }
    for (int r : ranks_named(reports_.back(), true)) accounted_.insert(r);
  }
}

ReportedFailure RankReports::first_failure() {
  if (reports_.empty()) read_new_reports();
  if (reports_.empty()) return {};
  return {describe_failure_report(reports_.front()), ranks_named(reports_.front(), false)};
}

bool RankReports::all_accounted(int size) {
  read_new_reports();
  return static_cast<int>(accounted_.size()) >= size;
}

long RankReports::pid_of(int rank) {
  auto known = pids_.find(rank);
  if (known != pids_.end()) return known->second;
  try {
    const long pid = std::stol(store_->get("hvdrun/pid/" + std::to_string(rank), kNoWait));
    pids_[rank] = pid;
    return pid;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace hvdrun
