// Which backend and host layout the job really runs on, where the ctest
// entry says what to expect (the multi-host runs on one machine):
//   HOROVODCPP_TEST_EXPECT_BACKEND      hvd::backend_name(), e.g. "shm+gloo"
//   HOROVODCPP_TEST_EXPECT_LOCAL_SIZES  local_size of each rank, e.g. "2 2 1"
//   HOROVODCPP_TEST_EXPECT_CROSS_SIZES  cross_size of each rank
// Without them only the name's presence is checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "horovodcpp/horovodcpp.h"

namespace {

// The rank-th number of `variable`; -1 if unset or too short.
int expected_for_rank(const char* variable) {
  const char* value = std::getenv(variable);
  if (value == nullptr) return -1;
  std::istringstream in(value);
  std::vector<int> numbers;
  for (int n; in >> n;) numbers.push_back(n);
  EXPECT_EQ(numbers.size(), static_cast<std::size_t>(hvd::size())) << variable << "=" << value;
  return hvd::rank() < static_cast<int>(numbers.size()) ? numbers[hvd::rank()] : -1;
}

TEST(Backend, IsTheExpectedOne) {
  const std::string name = hvd::backend_name();
  EXPECT_FALSE(name.empty());
  if (const char* expected = std::getenv("HOROVODCPP_TEST_EXPECT_BACKEND")) {
    EXPECT_EQ(name, expected) << "rank " << hvd::rank();
  }
}

TEST(Backend, TopologyIsTheExpectedOne) {
  if (const int local = expected_for_rank("HOROVODCPP_TEST_EXPECT_LOCAL_SIZES"); local >= 0) {
    EXPECT_EQ(hvd::local_size(), local) << "rank " << hvd::rank();
  }
  if (const int cross = expected_for_rank("HOROVODCPP_TEST_EXPECT_CROSS_SIZES"); cross >= 0) {
    EXPECT_EQ(hvd::cross_size(), cross) << "rank " << hvd::rank();
  }
}

}  // namespace
