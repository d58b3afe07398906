#include "runner/ranks/rank_reports.h"

#include <chrono>
#include <sstream>

#include "horovodcpp/errors.h"
#include "store/tcp_store.h"

namespace hvdrun {
namespace {

constexpr std::chrono::milliseconds kNoWait(1);

// One report, "RANK\nBLAMED\nMESSAGE" (core/runtime/hvdrun_link.h), with
// BLAMED a comma-separated rank list.
struct Report {
  std::string rank;
  std::vector<std::string> blamed;
  std::string message;
};

Report parse(const std::string& value) {
  std::istringstream in(value);
  Report report;
  std::string blamed;
  std::getline(in, report.rank);
  std::getline(in, blamed);
  std::getline(in, report.message, '\0');
  std::istringstream ranks(blamed);
  for (std::string r; std::getline(ranks, r, ',');) report.blamed.push_back(r);
  return report;
}

// The rank numbers among `ranks`; what is not a rank number names nobody.
std::vector<int> numbers(const std::vector<std::string>& ranks) {
  std::vector<int> result;
  for (const std::string& r : ranks) {
    try {
      result.push_back(std::stoi(r));
    } catch (const std::exception&) {
    }
  }
  return result;
}

}  // namespace

std::string describe_failure_report(const std::string& value) {
  const Report report = parse(value);
  if (report.blamed.empty()) return "rank " + report.rank + " failed: " + report.message;
  std::string ranks;
  for (const std::string& r : report.blamed) ranks += (ranks.empty() ? "" : ", ") + r;
  return (report.blamed.size() > 1 ? "ranks " : "rank ") + ranks + " stopped answering (rank " +
         report.rank + ": " + report.message + ")";
}

RankReports::RankReports(int port, const std::string& secret)
    : store_(std::make_unique<hvd::TcpStore>("127.0.0.1", port, std::chrono::seconds(5), secret)) {
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
    Report report = parse(reports_.back());
    report.blamed.push_back(report.rank);
    for (int r : numbers(report.blamed)) accounted_.insert(r);
  }
}

ReportedFailure RankReports::first_failure() {
  if (reports_.empty()) read_new_reports();
  if (reports_.empty()) return {};
  return {describe_failure_report(reports_.front()), numbers(parse(reports_.front()).blamed)};
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
