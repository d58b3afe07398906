// What the ranks' flight recorder dumps say together (docs/faults.md,
// "Flight recorder"): the last collective every rank completed, what each
// rank waits in, which ranks never submitted it, collectives submitted in
// different orders or on different process sets, and the ranks that left
// no dump. hvdrun prints it when a job fails; `hvdrun --analyze DIR` on
// dumps after the fact.
#pragma once

#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvdrun {

struct FlightRecord {
  unsigned long long number = 0;
  std::string name;
  std::string op;
  int process_set = 0;
  std::string state;  // submitted, launched, completed, failed
  long long submitted_us = 0;
  long long done_us = 0;
  std::string error;
};

struct FlightDump {
  int rank = -1;
  int size = 0;
  std::string host;
  std::string reason;
  long long dumped_us = 0;
  std::vector<FlightRecord> records;  // oldest first
};

// A dump file's contents; nullopt unless whole and well formed.
std::optional<FlightDump> parse_flight_dump(std::istream& in);

// Every rank's dump in `directory` (horovodcpp-flight-recorder.rank<R>.txt),
// by rank.
std::map<int, FlightDump> read_flight_dumps(const std::string& directory);

// The analysis, a line each (no trailing newline). `size`: the job's ranks
// (0: as the dumps say).
std::vector<std::string> analyze_flight_dumps(const std::map<int, FlightDump>& dumps, int size = 0);

// hvdrun --analyze DIR: prints the analysis; 0, or 1 without any dump.
int analyze_command(const std::string& directory);

}  // namespace hvdrun
