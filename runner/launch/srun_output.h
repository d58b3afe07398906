// SrunOutput: the first failing rank as srun names it, for hvdrun's
// one-line summary when the ranks run as the tasks of one `srun`:
//   srun: error: node2: task 3: Exited with exit code 7
//   srun: error: node2: tasks 2-3: Killed
// (the task id is the rank).
#pragma once

#include <string>

namespace hvdrun {

class SrunOutput {
 public:
  // One line of srun's output, without its newline.
  void feed(const std::string& line);
  // "rank 3 (host node2) exited with code 7", "rank 2 (host node2) was
  // killed (Killed)", or "" while srun named no rank.
  const std::string& failure() const { return failure_; }

 private:
  std::string failure_;
};

}  // namespace hvdrun
