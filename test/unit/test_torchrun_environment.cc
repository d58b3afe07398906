// A rank's place from torchrun's variables (and a plain env:// launch's).
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "settings/torchrun_environment.h"

namespace hvd {
namespace torchrun {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<Task> task_of(const Env& env) {
  return task([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

// Rank `rank` of `torchrun --nnodes=2 --nproc_per_node=3`.
Env six_ranks(int rank) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", "6"},
          {"LOCAL_RANK", std::to_string(rank % 3)},
          {"LOCAL_WORLD_SIZE", "3"},
          {"GROUP_RANK", std::to_string(rank / 3)},
          {"MASTER_ADDR", "node1"},
          {"MASTER_PORT", "29500"},
          {"TORCHELASTIC_RUN_ID", "job7"}};
}

TEST(TorchrunTask, NoneWithoutRankAndWorldSize) {
  EXPECT_FALSE(task_of({}));
  EXPECT_FALSE(task_of({{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29500"}, {"RANK", "0"}}));
}

TEST(TorchrunTask, PlacesEachRankOnItsNode) {
  const std::optional<Task> fifth = task_of(six_ranks(4));
  ASSERT_TRUE(fifth);
  EXPECT_EQ(fifth->rank, 4);
  EXPECT_EQ(fifth->size, 6);
  EXPECT_EQ(fifth->local_rank, 1);
  EXPECT_EQ(fifth->local_size, 3);
  EXPECT_EQ(fifth->node_rank, 1);
  EXPECT_EQ(fifth->nodes, 2);
  EXPECT_EQ(fifth->master_addr, "node1");
  EXPECT_EQ(fifth->master_port, 29500);
  EXPECT_EQ(fifth->run_id, "job7");
  // Without GROUP_RANK the node comes from the rank (torchrun's order).
  Env env = six_ranks(4);
  env.erase("GROUP_RANK");
  EXPECT_EQ(task_of(env)->node_rank, 1);
}

TEST(TorchrunTask, APlainLaunchOnOneHost) {
  const std::optional<Task> t = task_of(
      {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "1234"}});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->local_rank, 1);
  EXPECT_EQ(t->local_size, 2);
  EXPECT_EQ(t->nodes, 1);
  EXPECT_TRUE(t->run_id.empty());
}

TEST(TorchrunTask, RefusesWhatDescribesNoPlace) {
  const auto refused = [](Env env, const std::string& text) {
    try {
      task_of(env);
      ADD_FAILURE() << "accepted, expected: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  Env env = six_ranks(0);
  env["RANK"] = "6";
  refused(env, "RANK=6 is not a rank of WORLD_SIZE=6");
  env = six_ranks(0);
  env.erase("MASTER_ADDR");
  refused(env, "MASTER_ADDR is not set");
  env = six_ranks(0);
  env["MASTER_PORT"] = "x";
  refused(env, "MASTER_PORT='x'");
  env = six_ranks(0);
  env["LOCAL_WORLD_SIZE"] = "4";
  refused(env, "is not a place in WORLD_SIZE=6");
  env = six_ranks(0);
  env["GROUP_RANK"] = "2";
  refused(env, "GROUP_RANK=2");
  env = six_ranks(0);
  env.erase("LOCAL_RANK");
  env.erase("LOCAL_WORLD_SIZE");
  refused(env, "LOCAL_RANK and LOCAL_WORLD_SIZE are not set and MASTER_ADDR=node1");
}

}  // namespace
}  // namespace torchrun
}  // namespace hvd
