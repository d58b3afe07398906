#include "runner/launch/srun_output.h"

#include <regex>

namespace hvdrun {

void SrunOutput::feed(const std::string& line) {
  if (!failure_.empty()) return;
  static const std::regex task_line(R"(^srun: error: (\S+): tasks? (\d+)[-,\d]*: (.+)$)");
  static const std::regex exit_code(R"(^Exited with exit code (\d+)$)");
  std::smatch m;
  if (!std::regex_search(line, m, task_line)) return;
  const std::string who = "rank " + m[2].str() + " (host " + m[1].str() + ")";
  const std::string what = m[3].str();
  std::smatch code;
  failure_ = std::regex_match(what, code, exit_code) ? who + " exited with code " + code[1].str()
                                                     : who + " was killed (" + what + ")";
}

}  // namespace hvdrun
