#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "runner/ranks/output_lines.h"

using hvdrun::OutputLines;

TEST(OutputLines, PrefixesEveryWholeLineOnce) {
  OutputLines lines("[1]<stdout>: ", false, false);
  EXPECT_EQ(lines.feed("Epoch 1 loss=0.5", false), "");  // held until its newline
  EXPECT_EQ(lines.feed("\nnext\nrest", false),
            "[1]<stdout>: Epoch 1 loss=0.5\n[1]<stdout>: next\n");
  EXPECT_EQ(lines.feed("", true), "[1]<stdout>: rest\n");
}

// PYTHONUNBUFFERED=1: print()'s text and its newline are two writes, which
// mpirun --tag-output tags one by one.
TEST(OutputLines, JoinsMpirunPiecesOfOneRank) {
  OutputLines lines("", true, false);
  std::vector<std::string> seen;
  const std::function<void(const std::string&)> on_line = [&](const std::string& line) {
    seen.push_back(line);
  };
  const std::string out =
      lines.feed("[1,0]<stdout>:Epoch[1] accuracy=0.8906[1,0]<stdout>:\n", false, &on_line);
  EXPECT_EQ(out, "[1,0]<stdout>:Epoch[1] accuracy=0.8906\n");
  EXPECT_EQ(seen, std::vector<std::string>{"Epoch[1] accuracy=0.8906"});
}

TEST(OutputLines, KeepsRanksApartWhenTheirPiecesInterleave) {
  OutputLines lines("", true, false);
  std::string out = lines.feed("[1,0]<stdout>:a[1,1]<stdout>:x[1,0]<stdout>:b\n", false);
  out += lines.feed("[1,1]<stdout>:y\n[1,0]<stderr>:e\n", false);
  EXPECT_EQ(out, "[1,0]<stdout>:ab\n[1,1]<stdout>:xy\n[1,0]<stderr>:e\n");
}

TEST(OutputLines, ATagSplitAcrossReadsIsWaitedFor) {
  OutputLines lines("", true, false);
  std::string out = lines.feed("[1,0]<stdout>:one[1,", false);
  out += lines.feed("1]<std", false);
  out += lines.feed("out>:two\n[1,0]<stdout>: more\n", false);
  EXPECT_EQ(out, "[1,1]<stdout>:two\n[1,0]<stdout>:one more\n");
}

TEST(OutputLines, MpirunsOwnLinesPassAsTheyAre) {
  OutputLines lines("", true, false);
  const std::string out =
      lines.feed("-----\nmpirun noticed that process rank 1 exited\n[1,0]<stdout>:ok\n", false);
  EXPECT_EQ(out, "-----\nmpirun noticed that process rank 1 exited\n[1,0]<stdout>:ok\n");
}

TEST(OutputLines, HeldPiecesComeOutAtTheEndAndPastTheBound) {
  OutputLines lines("", true, false);
  EXPECT_EQ(lines.feed("[1,0]<stdout>:progress 10%", false), "");
  EXPECT_EQ(lines.feed("", true), "[1,0]<stdout>:progress 10%\n");

  OutputLines bounded("", true, false);
  const std::string big(OutputLines::kMaxHeldBytes + 10, 'x');
  const std::string out = bounded.feed("[1,0]<stdout>:" + big, false);
  EXPECT_EQ(out, "[1,0]<stdout>:" + big + "\n");
  OutputLines plain("[0]<stdout>: ", false, false);
  EXPECT_EQ(plain.feed(big, false), "[0]<stdout>: " + big + "\n");
}

TEST(OutputLines, PiecesHeldTooLongComeOutAsLines) {
  using std::chrono::milliseconds;
  const auto t0 = OutputLines::Clock::now();
  OutputLines lines("", true, false);
  EXPECT_EQ(lines.feed("[1,0]<stdout>:loading...", false, nullptr, t0), "");
  EXPECT_EQ(lines.feed("[1,1]<stdout>:x", false, nullptr, t0 + milliseconds(1500)), "");
  EXPECT_EQ(lines.flush_stale(t0 + milliseconds(1900)), "");
  // Only the piece held 2 s goes out; the other one is still young.
  EXPECT_EQ(lines.flush_stale(t0 + milliseconds(2100)), "[1,0]<stdout>:loading...\n");
  EXPECT_EQ(lines.feed("[1,1]<stdout>:y\n", false, nullptr, t0 + milliseconds(2200)),
            "[1,1]<stdout>:xy\n");
  EXPECT_EQ(lines.flush_stale(t0 + milliseconds(9000)), "");

  OutputLines plain("[0]<stdout>: ", false, false);
  EXPECT_EQ(plain.feed("50%", false, nullptr, t0), "");
  EXPECT_EQ(plain.flush_stale(t0 + std::chrono::seconds(2)), "[0]<stdout>: 50%\n");
}

TEST(OutputLines, TimestampsComeFirstInHorovodsFormat) {
  OutputLines lines("[0]<stdout>: ", false, true);
  const std::string out = lines.feed("hi\n", false);
  // time.asctime(): "Fri Nov 27 08:06:19 2026"
  EXPECT_TRUE(std::regex_match(
      out, std::regex("[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]\\d \\d\\d:\\d\\d:\\d\\d \\d{4}"
                      "\\[0\\]<stdout>: hi\n")))
      << out;
  OutputLines tagged("", true, true);
  const std::string line = tagged.feed("[1,0]<stdout>:a[1,0]<stdout>:b\n", false);
  EXPECT_NE(line.find("[1,0]<stdout>:ab\n"), std::string::npos) << line;
  EXPECT_EQ(line.find("[1,0]"), line.size() - std::string("[1,0]<stdout>:ab\n").size());
}

TEST(OutputLines, FindsOnlyCompleteTags) {
  std::size_t length = 0;
  EXPECT_EQ(hvdrun::find_mpirun_tag("x [1,0]<stdout>:y", 0, &length), 2u);
  EXPECT_EQ(length, 14u);
  EXPECT_EQ(hvdrun::find_mpirun_tag("[1,0]<stdout", 0, &length), std::string::npos);
  EXPECT_EQ(hvdrun::find_mpirun_tag("[a,0]<stdout>:", 0, &length), std::string::npos);
  EXPECT_EQ(hvdrun::find_mpirun_tag("[1,0]<>:", 0, &length), std::string::npos);
}

TEST(OutputLines, SrunLabelsBecomeRankPrefixes) {
  OutputLines lines = OutputLines::srun_labels("<stderr>: ", false);
  std::vector<std::string> seen;
  const std::function<void(const std::string&)> on_line = [&](const std::string& line) {
    seen.push_back(line);
  };
  EXPECT_EQ(lines.feed(" 3: loss=0.5\n12: \nsrun: error: n1: task 3: Killed\n", false, &on_line),
            "[3]<stderr>: loss=0.5\n[12]<stderr>: \nsrun: error: n1: task 3: Killed\n");
  EXPECT_EQ(seen, (std::vector<std::string>{"loss=0.5", "", "srun: error: n1: task 3: Killed"}));
}
