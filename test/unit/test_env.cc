// Settings: HOROVODCPP_X wins over Horovod's HOROVOD_X; bad numbers are errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/env.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    unsetenv("HOROVODCPP_TEST_SETTING");
    unsetenv("HOROVOD_TEST_SETTING");
  }
};

TEST_F(EnvTest, UnsetGivesDefault) {
  EXPECT_FALSE(env_setting("TEST_SETTING").has_value());
  EXPECT_EQ(env_double("TEST_SETTING", 2.5), 2.5);
  EXPECT_EQ(env_int("TEST_SETTING", 7), 7);
}

TEST_F(EnvTest, HorovodNameIsAnAlias) {
  setenv("HOROVOD_TEST_SETTING", "5", 1);
  EXPECT_EQ(env_int("TEST_SETTING", 0), 5);
  EXPECT_EQ(env_double("TEST_SETTING", 0), 5.0);
}

TEST_F(EnvTest, HorovodcppNameWins) {
  setenv("HOROVOD_TEST_SETTING", "5", 1);
  setenv("HOROVODCPP_TEST_SETTING", "0.25", 1);
  EXPECT_EQ(env_setting("TEST_SETTING").value(), "0.25");
  EXPECT_EQ(env_double("TEST_SETTING", 0), 0.25);
}

TEST_F(EnvTest, MalformedNumbersAreRejectedWithTheVariableName) {
  for (const char* bad : {"", "1ms", "fast", "3.5"}) {
    setenv("HOROVODCPP_TEST_SETTING", bad, 1);
    try {
      env_int("TEST_SETTING", 0);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("HOROVODCPP_TEST_SETTING"), std::string::npos);
    }
  }
  setenv("HOROVODCPP_TEST_SETTING", "2x", 1);
  EXPECT_THROW(env_double("TEST_SETTING", 0), InvalidArgument);
}

}  // namespace
}  // namespace hvd
