// The response cache: hit, miss and invalid lookups, slot reuse and LRU
// eviction (identical on every rank because it follows agreed events only).
#include <gtest/gtest.h>

#include "core/negotiation/response_cache.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

Request request(const std::string& name, std::vector<std::int64_t> shape = {8}) {
  Request r;
  r.op_type = OpType::kAllreduce;
  r.name = name;
  r.dtype = DataType::kFloat32;
  r.shape = std::move(shape);
  r.reduce_op = ReduceOp::kSum;
  return r;
}

Response response(const std::string& name) {
  Response r;
  r.op_type = OpType::kAllreduce;
  r.name = name;
  return r;
}

void put(ResponseCache& cache, const std::string& name) {
  Request mine = request(name);
  cache.put(response(name), &mine);
}

TEST(ResponseCacheTest, MissHitAndInvalid) {
  ResponseCache cache(4);
  EXPECT_EQ(cache.lookup(request("a")).lookup, ResponseCache::Lookup::kMiss);
  put(cache, "a");
  const auto hit = cache.lookup(request("a"));
  EXPECT_EQ(hit.lookup, ResponseCache::Lookup::kHit);
  EXPECT_TRUE(cache.holds(hit.slot, "a"));
  EXPECT_EQ(cache.response(hit.slot).name, "a");

  // Any field that changes the negotiation makes the entry invalid.
  Request reshaped = request("a", {9});
  EXPECT_EQ(cache.lookup(reshaped).lookup, ResponseCache::Lookup::kInvalid);
  Request retyped = request("a");
  retyped.dtype = DataType::kFloat64;
  EXPECT_EQ(cache.lookup(retyped).lookup, ResponseCache::Lookup::kInvalid);
  Request rescaled = request("a");
  rescaled.postscale_factor = 0.5;
  EXPECT_EQ(cache.lookup(rescaled).lookup, ResponseCache::Lookup::kInvalid);
  // A request that failed local validation must reach rank 0.
  Request failed = request("a");
  failed.error = "negative dimension";
  EXPECT_EQ(cache.lookup(failed).lookup, ResponseCache::Lookup::kInvalid);
  // The submitting rank does not matter.
  Request other_rank = request("a");
  other_rank.rank = 3;
  EXPECT_EQ(cache.lookup(other_rank).lookup, ResponseCache::Lookup::kHit);
}

TEST(ResponseCacheTest, WithoutThisRanksRequestItCannotHit) {
  ResponseCache cache(2);
  Response joined = response("a");
  joined.joined_ranks = {1};
  cache.put(joined, nullptr);
  const auto found = cache.lookup(request("a"));
  EXPECT_EQ(found.lookup, ResponseCache::Lookup::kInvalid);
  EXPECT_TRUE(cache.response(found.slot).joined_ranks.empty());  // stored as a full response
}

TEST(ResponseCacheTest, PutKeepsTheSlotOfACachedName) {
  ResponseCache cache(4);
  put(cache, "a");
  put(cache, "b");
  const std::size_t slot = cache.lookup(request("a")).slot;
  Request reshaped = request("a", {2});
  cache.put(response("a"), &reshaped);
  EXPECT_EQ(cache.lookup(reshaped).slot, slot);
  EXPECT_EQ(cache.lookup(reshaped).lookup, ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.slot_count(), 2u);
}

TEST(ResponseCacheTest, ErasedSlotsAreReusedLowestFirst) {
  ResponseCache cache(4);
  for (const char* name : {"a", "b", "c"}) put(cache, name);
  const std::size_t a = cache.lookup(request("a")).slot;
  const std::size_t b = cache.lookup(request("b")).slot;
  cache.erase(b);
  cache.erase(a);
  EXPECT_EQ(cache.lookup(request("a")).lookup, ResponseCache::Lookup::kMiss);
  EXPECT_FALSE(cache.holds(a, "a"));
  put(cache, "d");
  EXPECT_EQ(cache.lookup(request("d")).slot, std::min(a, b));
  EXPECT_EQ(cache.slot_count(), 3u);
}

TEST(ResponseCacheTest, FullCacheEvictsTheLeastRecentlyUsed) {
  ResponseCache cache(2);
  put(cache, "a");
  put(cache, "b");
  cache.touch(cache.lookup(request("a")).slot);  // b is now the least recently used
  put(cache, "c");
  EXPECT_EQ(cache.lookup(request("b")).lookup, ResponseCache::Lookup::kMiss);
  EXPECT_EQ(cache.lookup(request("a")).lookup, ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.lookup(request("c")).lookup, ResponseCache::Lookup::kHit);
  EXPECT_EQ(cache.slot_count(), 2u);
}

TEST(ResponseCacheTest, CapacityComesFromTheEnvironment) {
  setenv("HOROVODCPP_CACHE_CAPACITY", "0", 1);
  EXPECT_EQ(ResponseCache::capacity_from_env(), 0u);
  EXPECT_FALSE(ResponseCache(0).enabled());
  setenv("HOROVODCPP_CACHE_CAPACITY", "-1", 1);
  EXPECT_THROW(ResponseCache::capacity_from_env(), InvalidArgument);
  unsetenv("HOROVODCPP_CACHE_CAPACITY");
  EXPECT_EQ(ResponseCache::capacity_from_env(), 1024u);
}

}  // namespace
}  // namespace hvd
