// HvdrunLink against a store server in this process, as hvdrun serves it:
// the pid at connect, one failure report (the first), nothing without
// hvdrun.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "core/runtime/hvdrun_link.h"
#include "horovodcpp/errors.h"
#include "store/tcp_store.h"
#include "store/tcp_store_server.h"

namespace hvd {
namespace {

class HvdrunLinkTest : public ::testing::Test {
 protected:
  void TearDown() override { unsetenv("HOROVODCPP_HVDRUN_STORE"); }
};

// The rendezvous store's address, read in one place for Gloo and elastic
// workers: both variables or neither.
TEST(RendezvousAddress, BothOrNeither) {
  const char* names[] = {"HOROVODCPP_GLOO_RENDEZVOUS_ADDR", "HOROVODCPP_GLOO_RENDEZVOUS_PORT",
                         "HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT"};
  for (const char* name : names) unsetenv(name);
  EXPECT_FALSE(rendezvous_address().has_value());
  setenv("HOROVOD_GLOO_RENDEZVOUS_PORT", "2222", 1);
  try {
    rendezvous_address();
    ADD_FAILURE() << "a port without an address was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("only PORT is set"), std::string::npos) << e.what();
  }
  setenv("HOROVODCPP_GLOO_RENDEZVOUS_ADDR", "10.0.0.1", 1);
  const auto address = rendezvous_address();
  ASSERT_TRUE(address.has_value());
  EXPECT_EQ(address->host, "10.0.0.1");
  EXPECT_EQ(address->port, 2222);
  setenv("HOROVOD_GLOO_RENDEZVOUS_PORT", "0", 1);
  EXPECT_THROW(rendezvous_address(), InvalidArgument);
  for (const char* name : names) unsetenv(name);
}

TEST_F(HvdrunLinkTest, NothingWithoutHvdrun) {
  unsetenv("HOROVODCPP_HVDRUN_STORE");
  EXPECT_EQ(HvdrunLink::connect(0), nullptr);
}

TEST_F(HvdrunLinkTest, ReportsThePidAndTheFirstFailure) {
  TcpStoreServer server("127.0.0.1", 0, "the job's secret");
  setenv("HOROVODCPP_HVDRUN_STORE", ("127.0.0.1:" + std::to_string(server.port())).c_str(), 1);
  setenv("HOROVODCPP_JOB_SECRET", "the job's secret", 1);
  std::unique_ptr<HvdrunLink> link = HvdrunLink::connect(2);
  unsetenv("HOROVODCPP_JOB_SECRET");
  ASSERT_NE(link, nullptr);
  TcpStore store("127.0.0.1", server.port(), std::chrono::seconds(5), "the job's secret");
  const auto now = std::chrono::milliseconds(1000);
  EXPECT_EQ(store.get("hvdrun/pid/2", now), std::to_string(getpid()));

  link->report_failure(
      std::make_exception_ptr(RankFailure("Gloo allreduce: rank 1 stopped answering", {1})));
  link->report_failure(std::make_exception_ptr(BackendError("a later error")));  // ignored
  EXPECT_EQ(store.get("hvdrun/failure/1", now), "2\n1\nGloo allreduce: rank 1 stopped answering");
  EXPECT_THROW(store.get("hvdrun/failure/2", std::chrono::milliseconds(50)), Timeout);
}

TEST_F(HvdrunLinkTest, UnreachableHvdrunIsNotAnError) {
  setenv("HOROVODCPP_HVDRUN_STORE", "not-a-host-and-port", 1);
  EXPECT_EQ(HvdrunLink::connect(0), nullptr);
}

}  // namespace
}  // namespace hvd
