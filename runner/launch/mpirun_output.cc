#include "runner/launch/mpirun_output.h"

#include <regex>

namespace hvdrun {

void MpirunOutput::feed(const std::string& line) {
  if (!failure_.empty()) return;
  static const std::regex signal_line(
      R"(noticed that process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+) \(([^)]*)\))");
  static const std::regex name_line(R"(^\s*Process name:\s*\[\[\d+,\d+\],(\d+)\])");
  static const std::regex code_line(R"(^\s*Exit code:\s*(\d+))");
  std::smatch m;
  if (std::regex_search(line, m, signal_line)) {
    failure_ = "rank " + m[1].str() + " (node " + m[2].str() + ") was killed by signal " +
               m[3].str() + " (" + m[4].str() + ")";
  } else if (std::regex_search(line, m, name_line)) {
    named_rank_ = std::stoi(m[1].str());
  } else if (named_rank_ >= 0 && std::regex_search(line, m, code_line)) {
    failure_ = "rank " + std::to_string(named_rank_) + " exited with code " + m[1].str();
  }
}

}  // namespace hvdrun
