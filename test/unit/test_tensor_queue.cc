// The queue's in-flight table: duplicates, hand-over order and closing.
#include <gtest/gtest.h>

#include <thread>

#include "core/negotiation/tensor_queue.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/work.h"

namespace hvd {
namespace {

std::vector<Request> pop_new(TensorQueue& queue) {
  std::vector<Request> requests;
  queue.pop_new_requests(requests);
  return requests;
}

TensorEntry entry(const std::string& name) {
  TensorEntry e;
  e.request.name = name;
  e.work = std::make_shared<detail::WorkState>();
  return e;
}

TEST(TensorQueueTest, NewRequestsComeOutOnceInSubmissionOrder) {
  TensorQueue queue;
  queue.push(entry("b"));
  queue.push(entry("a"));
  auto first = pop_new(queue);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].name, "b");
  EXPECT_EQ(first[1].name, "a");
  EXPECT_TRUE(pop_new(queue).empty());
}

TEST(TensorQueueTest, DuplicateNameInFlightIsRejectedUntilTaken) {
  TensorQueue queue;
  queue.push(entry("w"));
  pop_new(queue);
  EXPECT_THROW(queue.push(entry("w")), InvalidArgument);
  auto taken = queue.try_take("w");
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->request.name, "w");
  EXPECT_NO_THROW(queue.push(entry("w")));
  EXPECT_FALSE(queue.try_take("missing").has_value());
}

// Another rank's join can release a tensor before this rank's cycle popped
// it: taken, it must not come out of a later pop.
TEST(TensorQueueTest, EntryTakenBeforeItWasPoppedIsNotPopped) {
  TensorQueue queue;
  queue.push(entry("a"));
  queue.push(entry("b"));
  ASSERT_TRUE(queue.try_take("a").has_value());
  const auto requests = pop_new(queue);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].name, "b");
}

TEST(TensorQueueTest, PushAllQueuesEveryEntryOrNone) {
  TensorQueue queue;
  queue.push(entry("g.1"));
  std::vector<TensorEntry> group;
  group.push_back(entry("g.0"));
  group.push_back(entry("g.1"));  // in flight already: the whole group is refused
  EXPECT_THROW(queue.push_all(std::move(group)), InvalidArgument);
  EXPECT_FALSE(queue.try_take("g.0").has_value());
  std::vector<TensorEntry> twice;
  twice.push_back(entry("h"));
  twice.push_back(entry("h"));
  EXPECT_THROW(queue.push_all(std::move(twice)), InvalidArgument);
  EXPECT_FALSE(queue.try_take("h").has_value());
  std::vector<TensorEntry> fresh;
  fresh.push_back(entry("k.0"));
  fresh.push_back(entry("k.1"));
  queue.push_all(std::move(fresh));
  const auto requests = pop_new(queue);
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].name, "g.1");
  EXPECT_EQ(requests[1].name, "k.0");
  EXPECT_EQ(requests[2].name, "k.1");
}

TEST(TensorQueueTest, CloseReturnsEverythingAndRefusesMore) {
  TensorQueue queue;
  queue.push(entry("in_flight"));
  pop_new(queue);
  queue.push(entry("queued"));
  auto left = queue.close(std::make_exception_ptr(RankFailure("stopped")));
  EXPECT_EQ(left.size(), 2u);
  EXPECT_TRUE(pop_new(queue).empty());
  EXPECT_THROW(queue.push(entry("late")), RankFailure);
}

TEST(WorkStateTest, FirstOutcomeWinsAndTimeoutIsReported) {
  auto state = std::make_shared<detail::WorkState>();
  Work work(state);
  EXPECT_FALSE(work.poll());
  EXPECT_THROW(work.wait(std::chrono::milliseconds(1)), Timeout);
  state->fail(std::make_exception_ptr(Mismatch("bad")));
  state->complete();
  EXPECT_TRUE(work.poll());
  EXPECT_THROW(work.wait(), Mismatch);
  EXPECT_NE(work.error(), nullptr);
}

TEST(WorkStateTest, OnDoneRunsOnceOnTheCompletingThreadOrAtOnce) {
  auto state = std::make_shared<detail::WorkState>();
  Work work(state);
  int calls = 0;
  std::thread::id ran_on;
  work.on_done([&] {
    ++calls;
    ran_on = std::this_thread::get_id();
    EXPECT_TRUE(work.poll());  // the state is complete and unlocked by then
    EXPECT_NE(work.error(), nullptr);
  });
  EXPECT_EQ(calls, 0);
  std::thread completer([&] { state->fail(std::make_exception_ptr(Mismatch("bad"))); });
  const std::thread::id completer_id = completer.get_id();
  completer.join();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, completer_id);
  state->complete();  // a second outcome runs nothing again
  EXPECT_EQ(calls, 1);
  work.on_done([&] { ++calls; });  // already done: runs here, now
  EXPECT_EQ(calls, 2);
}

TEST(TensorQueueAlone, TheNameIsHeldUntilReleasedOrAdopted) {
  TensorQueue queue;
  const std::string name = "loss";
  std::vector<float> data = {1};
  auto entry = [&] {
    TensorEntry e;
    e.request.op_type = OpType::kAllreduce;
    e.request.name = name;
    e.input = TensorView(data.data(), DataType::kFloat32, {1});
    e.output = e.input;
    e.work = std::make_shared<detail::WorkState>(queue.wakeup());
    return e;
  };
  ASSERT_TRUE(queue.reserve_alone(&name));
  EXPECT_THROW(queue.push(entry()), InvalidArgument);
  std::vector<TensorEntry> batch;
  batch.push_back(entry());
  EXPECT_THROW(queue.push_all(std::move(batch)), InvalidArgument);
  queue.release_alone();
  queue.push(entry());
  EXPECT_FALSE(queue.reserve_alone(&name));  // something is in flight
  ASSERT_TRUE(queue.try_take(name).has_value());

  ASSERT_TRUE(queue.reserve_alone(&name));
  queue.adopt_alone(entry());
  EXPECT_TRUE(pop_new(queue).empty());  // in flight, not new
  EXPECT_THROW(queue.push(entry()), InvalidArgument);
  EXPECT_TRUE(queue.try_take(name).has_value());
}

}  // namespace
}  // namespace hvd
