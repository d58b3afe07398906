// hvdrun's reading of flight recorder dumps (flight_recorder_analysis.h):
// the file format, partial files refused, and the analysis's lines.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "runner/ranks/flight_recorder_analysis.h"

namespace hvdrun {
namespace {

// A dump of `rank` of 3: records "number name state submitted_us done_us".
std::string dump_text(int rank, const std::string& reason,
                      const std::vector<std::tuple<int, std::string, std::string>>& records) {
  std::ostringstream out;
  out << "horovodcpp flight recorder 1\nrank " << rank << " size 3 pid 1 host h\n"
      << "dumped_us 2000000\nreason " << reason << "\nnumber\tname\t...\n";
  for (const auto& [number, name, state] : records) {
    const bool done = state == "completed" || state == "failed";
    out << number << '\t' << name << "\tallreduce\tSum\tfloat32\tcpu\t16\t[4]\t0\tshm\t1\t" << state
        << '\t' << 1000000 + number << '\t' << 0 << '\t' << 0 << '\t'
        << (done ? 1000000 + number + 5 : 0) << '\t' << (state == "failed" ? reason : "") << '\n';
  }
  out << "end\n";
  return out.str();
}

FlightDump parsed(const std::string& text) {
  std::istringstream in(text);
  std::optional<FlightDump> dump = parse_flight_dump(in);
  EXPECT_TRUE(dump.has_value());
  return dump.value_or(FlightDump{});
}

bool has_line(const std::vector<std::string>& lines, const std::string& text) {
  for (const std::string& line : lines) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(FlightRecorderAnalysis, ParsesAWholeDumpAndRefusesAPartialOne) {
  const std::string text = dump_text(1, "SIGUSR1", {{7, "allreduce.x", "completed"}});
  const FlightDump dump = parsed(text);
  EXPECT_EQ(dump.rank, 1);
  EXPECT_EQ(dump.size, 3);
  ASSERT_EQ(dump.records.size(), 1u);
  EXPECT_EQ(dump.records[0].name, "allreduce.x");
  EXPECT_EQ(dump.records[0].state, "completed");
  std::istringstream cut(text.substr(0, text.size() - 4));  // no "end"
  EXPECT_FALSE(parse_flight_dump(cut).has_value());
}

TEST(FlightRecorderAnalysis, NamesTheRankThatStoppedAndTheMissingDump) {
  const std::string reason = "stall";
  std::map<int, FlightDump> dumps;
  dumps[0] = parsed(
      dump_text(0, reason, {{40, "allreduce.fc2", "completed"}, {41, "allreduce.fc1", "failed"}}));
  dumps[1] = parsed(dump_text(1, reason, {{40, "allreduce.fc2", "completed"}}));
  const std::vector<std::string> lines = analyze_flight_dumps(dumps, 3);
  EXPECT_TRUE(has_line(lines, "last collective every rank completed: allreduce.fc2 (#40)"));
  EXPECT_TRUE(has_line(lines, "rank 0 waits in allreduce.fc1 (#41)"));
  EXPECT_TRUE(has_line(lines,
                       "never submitted by rank 1: rank 1 stopped submitting after "
                       "allreduce.fc2 (#40)"));
  EXPECT_TRUE(has_line(lines, "no dump from rank 2"));
}

TEST(FlightRecorderAnalysis, RanksWaitingForEachOther) {
  std::map<int, FlightDump> dumps;
  dumps[0] = parsed(dump_text(0, "stall", {{1, "allreduce.a", "submitted"}}));
  dumps[1] = parsed(dump_text(1, "stall", {{1, "allreduce.b", "launched"}}));
  dumps[2] = parsed(dump_text(2, "stall", {{1, "allreduce.b", "submitted"}}));
  const std::vector<std::string> lines = analyze_flight_dumps(dumps);
  EXPECT_TRUE(has_line(lines,
                       "rank 0 in allreduce.a and ranks 1-2 in allreduce.b each wait for "
                       "the other: collectives submitted in different orders"));
}

TEST(FlightRecorderAnalysis, AHealthyJob) {
  std::map<int, FlightDump> dumps;
  for (int r = 0; r < 3; ++r) {
    dumps[r] = parsed(dump_text(r, "SIGUSR1", {{9, "allreduce.x", "completed"}}));
  }
  const std::vector<std::string> lines = analyze_flight_dumps(dumps);
  for (int r = 0; r < 3; ++r) {
    EXPECT_TRUE(has_line(lines, "rank " + std::to_string(r) + " waited in no collective"));
  }
  EXPECT_FALSE(has_line(lines, "no dump"));
}

}  // namespace
}  // namespace hvdrun
