// Commands run on remote hosts through the remote shell, all at once and
// bounded in time: the reachability check before a Gloo job starts, and the
// signals hvdrun sends to remote ranks by pid when it tears the job down.
#pragma once

#include <string>
#include <vector>

namespace hvdrun {

struct RemoteCommand {
  std::string host;
  std::vector<std::string> argv;  // the remote shell's words, then the command
  // Results:
  bool done = false;   // exited within the time limit
  int status = 0;      // its wait status, once done
  std::string output;  // its stdout+stderr (the last 8 KiB)
};

// Starts every command, each in its own process group with stdin from
// /dev/null, and waits until all have exited or `seconds` have passed; the
// ones still running then are killed (done stays false). With `stop_early`,
// it returns as soon as one command has failed (the rest are killed too).
void run_remote_commands(std::vector<RemoteCommand>& commands, double seconds,
                         bool stop_early = false);

// Exited with code 0 within the time limit.
bool succeeded(const RemoteCommand& command);

// "exited with code 3", "was killed by signal 9".
std::string describe_status(int status);

// The last non-empty line of `text`.
std::string last_line(const std::string& text);

}  // namespace hvdrun
