// OutputLines: what a child writes, relayed as whole lines that each start
// with their tag exactly once. A rank's line may reach hvdrun in pieces: a
// print() whose text and newline are two writes (PYTHONUNBUFFERED=1), or,
// through `mpirun --tag-output`, pieces that mpirun tags one by one, so
// that a tag would land in the middle or at the end of the line. Pieces of
// one rank are joined until its newline, whatever other ranks write
// meanwhile; a piece is held at most kMaxHeldBytes, then written as a line.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>

namespace hvdrun {

class OutputLines {
 public:
  static constexpr std::size_t kMaxHeldBytes = 65536;

  // `prefix` goes before each line ("[1]<stdout>: ", or "" for mpirun).
  // `mpirun_tags`: the output is Open MPI's `--tag-output`: pieces tagged
  // "[1,0]<stdout>:" are joined per tag into lines. `timestamps`: each line
  // starts with the local time as horovodrun's --prefix-output-with-timestamp
  // writes it ("Fri Nov 27 08:06:19 2026").
  explicit OutputLines(std::string prefix = "", bool mpirun_tags = false, bool timestamps = false);

  // Appends `bytes` and returns the lines complete now, each ending in
  // '\n'; `at_end` also returns every held piece as a line. `seen` (may be
  // null) gets each line without tag, time or newline.
  std::string feed(const std::string& bytes, bool at_end,
                   const std::function<void(const std::string&)>* seen = nullptr);

 private:
  void emit(const std::string& tag, const std::string& text, std::string& out,
            const std::function<void(const std::string&)>* seen) const;
  void feed_tagged(bool at_end, std::string& out,
                   const std::function<void(const std::string&)>* seen);

  std::string prefix_;
  bool mpirun_tags_;
  bool timestamps_;
  std::string raw_;                            // not yet split
  std::map<std::string, std::string> pieces_;  // mpirun tag -> its line so far
};

// Where Open MPI's tag "[1,0]<stdout>:" starts in `text` at or after
// `from`, and its length; npos if there is none (complete).
std::size_t find_mpirun_tag(const std::string& text, std::size_t from, std::size_t* length);

}  // namespace hvdrun
