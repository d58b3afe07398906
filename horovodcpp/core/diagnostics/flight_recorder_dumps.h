// FlightRecorderDumps: this rank's flight recorder and its dump file,
// HOROVODCPP_FLIGHT_RECORDER_DIR/horovodcpp-flight-recorder.rank<R>.txt
// (the working directory by default). A dump is written to a temporary
// name and renamed, so a file that exists is whole. It is asked for by the
// coordinators when they stop on a stall or a failure, by SIGUSR1 (a
// thread of its own writes it: the signal handler only wakes that
// thread), and by hvd::dump_flight_recorder(). It takes no lock a
// coordinator could hold, so a stuck rank still dumps.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/diagnostics/flight_recorder.h"

namespace hvd {

class FlightRecorderDumps {
 public:
  // Null when HOROVODCPP_FLIGHT_RECORDER_SIZE is 0.
  static std::unique_ptr<FlightRecorderDumps> from_env(int rank, int size);

  FlightRecorderDumps(std::size_t capacity, std::string directory, int rank, int size);
  // Stops watching for SIGUSR1 (restoring the handler it replaced).
  ~FlightRecorderDumps();

  FlightRecorder& recorder() { return recorder_; }
  // The file a dump goes to.
  const std::string& path() const { return path_; }

  // Writes the dump now, saying why; returns false (and logs) if it could
  // not. Any thread.
  bool dump(const std::string& reason);

  // From now on SIGUSR1 makes a dump (the previous handler is kept and run
  // too). Once per process: a second instance leaves the signal alone.
  void watch_signal();

 private:
  void watch();

  FlightRecorder recorder_;
  const std::string path_;
  const int rank_;
  const int size_;
  std::mutex dump_mutex_;  // dumps of this rank one at a time (never held by a coordinator)
  std::thread watcher_;
  int wake_fds_[2] = {-1, -1};
};

}  // namespace hvd
