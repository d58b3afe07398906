// OutputLines: what a child writes, relayed as whole lines that each start
// with their tag exactly once. A rank's line may reach hvdrun in pieces: a
// print() whose text and newline are two writes (PYTHONUNBUFFERED=1), or,
// through `mpirun --tag-output`, pieces that mpirun tags one by one, so
// that a tag would land in the middle or at the end of the line. Pieces of
// one rank are joined until its newline, whatever other ranks write
// meanwhile; a piece is held at most kMaxHeldBytes, or kMaxHeldTime (a
// prompt, a progress bar without newline), then written as a line.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace hvdrun {

class OutputLines {
 public:
  using Clock = std::chrono::steady_clock;
  using Seen = std::function<void(const std::string&)>;
  static constexpr std::size_t kMaxHeldBytes = 65536;
  static constexpr std::chrono::seconds kMaxHeldTime{2};

  // `prefix` goes before each line ("[1]<stdout>: ", or "" for mpirun).
  // `mpirun_tags`: the output is Open MPI's `--tag-output`: pieces tagged
  // "[1,0]<stdout>:" are joined per tag into lines. `timestamps`: each line
  // starts with the local time as horovodrun's --prefix-output-with-timestamp
  // writes it ("Fri Nov 27 08:06:19 2026").
  explicit OutputLines(std::string prefix = "", bool mpirun_tags = false, bool timestamps = false);
  // The output of `srun --label`, whose lines (whole: srun relays each
  // task's lines as such) start "3: "; they become "[3]" + `stream`
  // ("<stdout>: ") + text, like a Gloo-mode rank's. srun's own lines pass
  // as they are.
  static OutputLines srun_labels(std::string stream, bool timestamps);

  // Appends `bytes` and returns the lines complete now, each ending in
  // '\n'; `at_end` also returns every held piece as a line. `seen` (may be
  // null) gets each line without tag, time or newline.
  std::string feed(const std::string& bytes, bool at_end, const Seen* seen = nullptr,
                   Clock::time_point now = Clock::now());

  // The pieces held kMaxHeldTime or longer, as lines.
  std::string flush_stale(Clock::time_point now, const Seen* seen = nullptr);

 private:
  struct Piece {
    std::string text;
    Clock::time_point since;  // when its first byte came
  };
  void emit(const std::string& tag, const std::string& text, std::string& out,
            const Seen* seen) const;
  void split(bool at_end, Clock::time_point now, std::string& out, const Seen* seen);

  std::string prefix_;
  bool mpirun_tags_;
  bool timestamps_;
  std::string srun_stream_;              // not empty: srun_labels()
  std::string raw_;                      // not yet split
  Clock::time_point raw_since_{};        // when raw_'s first byte came
  std::map<std::string, Piece> pieces_;  // tag ("" without one) -> its line so far
};

// Where Open MPI's tag "[1,0]<stdout>:" starts in `text` at or after
// `from`, and its length; npos if there is none (complete).
std::size_t find_mpirun_tag(const std::string& text, std::size_t from, std::size_t* length);

}  // namespace hvdrun
