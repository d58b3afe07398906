// The flight recorder's ring: what a record says at each state, the ring
// wrapping over the oldest, updates to an overwritten record ignored, and
// dumps taken while other threads record (every line whole).
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/diagnostics/flight_recorder.h"

namespace hvd {
namespace {

using Clock = FlightRecorder::Clock;

std::uint64_t start(FlightRecorder& recorder, const std::string& name,
                    const std::vector<std::int64_t>& shape = {4}) {
  return recorder.start(
      {name, "allreduce", ReduceOp::kSum, DataType::kFloat32, DeviceType::kCPU, shape, 0});
}

std::vector<std::string> lines_of(const FlightRecorder& recorder) {
  std::ostringstream out;
  recorder.write(out);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> fields(const std::string& line) {
  std::vector<std::string> f;
  std::istringstream in(line);
  for (std::string field; std::getline(in, field, '\t');) f.push_back(field);
  if (!line.empty() && line.back() == '\t') f.push_back("");
  return f;
}

TEST(FlightRecorder, ARecordThroughEachState) {
  FlightRecorder recorder(8);
  const auto t0 = Clock::now();
  const std::uint64_t a = start(recorder, "allreduce.grad", {2, 3});
  const std::uint64_t b = start(recorder, "allreduce.bias");
  recorder.seen(a, t0);
  recorder.launched(a, a, recorder.intern("shm"), t0, t0);
  recorder.completed(a, t0);
  recorder.failed(b, "rank 1 stopped answering", t0);
  const std::vector<std::string> lines = lines_of(recorder);
  ASSERT_EQ(lines.size(), 3u);
  const std::vector<std::string> first = fields(lines[1]), second = fields(lines[2]);
  ASSERT_EQ(first.size(), 17u);
  EXPECT_EQ(first[0], std::to_string(a));
  EXPECT_EQ(first[1], "allreduce.grad");
  EXPECT_EQ(first[4], "float32");
  EXPECT_EQ(first[6], "24");  // bytes
  EXPECT_EQ(first[7], "[2,3]");
  EXPECT_EQ(first[9], "shm");
  EXPECT_EQ(first[11], "completed");
  EXPECT_NE(first[12], "0");
  EXPECT_NE(first[15], "0");
  EXPECT_EQ(second[11], "failed");
  EXPECT_EQ(second[12], "0");  // never taken up
  EXPECT_EQ(second[16], "rank 1 stopped answering");
}

TEST(FlightRecorder, TheRingKeepsTheNewestAndIgnoresOverwrittenRecords) {
  FlightRecorder recorder(4);
  std::vector<std::uint64_t> numbers;
  for (int i = 0; i < 10; ++i) numbers.push_back(start(recorder, "t" + std::to_string(i)));
  recorder.completed(numbers[0], Clock::now());  // overwritten long ago: ignored
  const std::vector<std::string> lines = lines_of(recorder);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(fields(lines[1])[1], "t6");
  EXPECT_EQ(fields(lines[4])[1], "t9");
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_EQ(fields(lines[i])[11], "submitted");
}

TEST(FlightRecorder, NamesAndErrorsStayOneField) {
  FlightRecorder recorder(2);
  const std::uint64_t n = start(recorder, "a\tname\nwith breaks" + std::string(200, 'x'));
  recorder.failed(n, "line one\nline\ttwo", Clock::now());
  const std::vector<std::string> lines = lines_of(recorder);
  ASSERT_EQ(lines.size(), 2u);
  const std::vector<std::string> f = fields(lines[1]);
  ASSERT_EQ(f.size(), 17u);
  EXPECT_EQ(f[1].rfind("a name with breaks", 0), 0u);
  EXPECT_EQ(f[16], "line one line two");
}

TEST(FlightRecorder, DumpsWhileOtherThreadsRecordHoldWholeLines) {
  FlightRecorder recorder(64);
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&recorder, &stop, w] {
      for (int i = 0; !stop; ++i) {
        const std::uint64_t n =
            start(recorder, "writer" + std::to_string(w) + ".t" + std::to_string(i % 7));
        recorder.launched(n, n, "shm", Clock::now(), Clock::now());
        if (i % 3 == 0) {
          recorder.failed(n, "an error", Clock::now());
        } else {
          recorder.completed(n, Clock::now());
        }
      }
    });
  }
  for (int dump = 0; dump < 200; ++dump) {
    const std::vector<std::string> lines = lines_of(recorder);
    for (std::size_t i = 1; i < lines.size(); ++i) {
      const std::vector<std::string> f = fields(lines[i]);
      ASSERT_EQ(f.size(), 17u) << lines[i];
      ASSERT_EQ(f[1].rfind("writer", 0), 0u) << lines[i];
    }
  }
  stop = true;
  for (std::thread& t : writers) t.join();
}

}  // namespace
}  // namespace hvd
