// MpirunOutput: the first failing rank as mpirun (Open MPI) names it in its
// output, for hvdrun's one-line summary. Open MPI reports a rank killed by
// a signal as
//   mpirun noticed that process rank 2 with PID 123 on node h1 exited on
//   signal 9 (Killed).
// and the first rank to exit non-zero as
//   Process name: [[12103,1],1]
//   Exit code:    7
// MPICH's Hydra says neither; the summary then falls back to mpirun's code.
#pragma once

#include <string>

namespace hvdrun {

class MpirunOutput {
 public:
  // One line of mpirun's output, without its newline.
  void feed(const std::string& line);
  // "rank 2 (node h1) was killed by signal 9 (Killed)", "rank 1 exited with
  // code 7", or "" while mpirun named no rank.
  const std::string& failure() const { return failure_; }

 private:
  std::string failure_;
  int named_rank_ = -1;  // from a "Process name:" line, until its "Exit code:"
};

}  // namespace hvdrun
