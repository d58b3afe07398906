// A bounded fuzz test of the negotiation message decoder, which rank 0 runs
// on whatever bytes the other ranks send: random bytes, and valid messages
// with bytes flipped, overwritten, cut out or inserted, from a fixed seed.
// Every input must either decode or be rejected with an hvd::Error: no
// crash, no other exception, no allocation the input cannot account for.
// A decoded message must re-encode to bytes that decode again.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/negotiation/message.h"
#include "horovodcpp/errors.h"

namespace hvd {
namespace {

constexpr int kInputsPerKind = 20000;

Request request(int rank, const std::string& name) {
  Request r;
  r.rank = rank;
  r.op_type = OpType::kAlltoall;
  r.name = name;
  r.dtype = DataType::kFloat16;
  r.shape = {4, 2};
  r.reduce_op = ReduceOp::kMax;
  r.root_rank = 1;
  r.splits = {1, 3};
  r.group_id = "g";
  r.group_size = 2;
  r.error = "e";
  return r;
}

// A few valid messages of each kind to mutate.
std::vector<std::string> request_seeds() {
  RequestList empty, full;
  full.shutdown = true;
  full.requests = {request(0, "grad/w"), request(1, "")};
  return {serialize(empty), serialize(full)};
}

std::vector<std::string> response_seeds() {
  ResponseList empty, full;
  full.shutdown_ranks = {2};
  full.stall_error = "stalled";
  full.fusion_threshold = 1 << 20;
  Response joined;
  joined.op_type = OpType::kAllreduce;
  joined.name = "grad/w";
  joined.first_dims = {3, 4};
  joined.joined_ranks = {1};
  joined.joined_template = request(0, "grad/w");
  joined.last_joined_rank = 1;
  Response failed;
  failed.error_kind = ErrorKind::kMismatch;
  failed.error_message = "shapes differ";
  full.responses = {joined, failed};
  return {serialize(empty), serialize(full)};
}

// Decodes `bytes`; true if accepted. Fails the test on anything but an
// hvd::Error, and when an accepted message does not survive a round trip.
template <typename Parse>
bool decode(const std::string& bytes, Parse parse) {
  try {
    auto decoded = parse(bytes);
    EXPECT_NO_THROW(parse(serialize(decoded))) << "re-encoded message rejected";
    return true;
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an hvd::Error: " << e.what() << " (" << bytes.size() << " bytes)";
    return false;
  }
}

std::string random_bytes(std::mt19937_64& rng, std::size_t max_size) {
  std::string bytes(rng() % (max_size + 1), '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

std::string mutate(std::string bytes, std::mt19937_64& rng) {
  const int edits = 1 + static_cast<int>(rng() % 4);
  for (int e = 0; e < edits; ++e) {
    const std::size_t at = bytes.empty() ? 0 : rng() % bytes.size();
    switch (rng() % 5) {
      case 0:  // flip a bit
        if (!bytes.empty()) bytes[at] = static_cast<char>(bytes[at] ^ (1 << (rng() % 8)));
        break;
      case 1:  // an extreme byte (counts and enums near their limits)
        if (!bytes.empty()) bytes[at] = static_cast<char>(rng() % 2 ? 0xff : 0x80);
        break;
      case 2:  // cut the rest
        bytes.resize(at);
        break;
      case 3:  // insert random bytes
        bytes.insert(at, random_bytes(rng, 16));
        break;
      case 4: {  // overwrite 8 bytes with a huge count
        const std::uint64_t huge = std::uint64_t{1} << (56 + rng() % 8);
        if (bytes.size() >= at + 8) std::memcpy(&bytes[at], &huge, 8);
        break;
      }
    }
  }
  return bytes;
}

template <typename Parse>
void fuzz(const std::vector<std::string>& seeds, Parse parse, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  int accepted = 0;
  for (const std::string& s : seeds) ASSERT_TRUE(decode(s, parse)) << "a valid seed";
  for (int i = 0; i < kInputsPerKind; ++i) accepted += decode(random_bytes(rng, 256), parse);
  for (int i = 0; i < kInputsPerKind; ++i) {
    accepted += decode(mutate(seeds[rng() % seeds.size()], rng), parse);
  }
  // Not a tautology: the mutations must reach past the first check.
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, 2 * kInputsPerKind);
}

TEST(MessageFuzz, RequestListsDecodeOrAreRejected) {
  fuzz(
      request_seeds(), [](const std::string& b) { return parse_request_list(b); }, 1);
}

TEST(MessageFuzz, ResponseListsDecodeOrAreRejected) {
  fuzz(
      response_seeds(), [](const std::string& b) { return parse_response_list(b); }, 2);
}

// Counts whose byte size overflows 64 bits once multiplied by the item
// size: they used to pass the length check and reach std::vector.
TEST(MessageFuzz, CountsThatOverflowAreRejected) {
  ResponseList list;
  std::string bytes = serialize(list);
  const std::uint64_t huge = std::uint64_t{1} << 62;  // * 4 bytes wraps to 0
  std::memcpy(&bytes[0], &huge, 8);
  EXPECT_THROW(parse_response_list(bytes), Error);

  RequestList requests;
  requests.requests = {request(0, "w")};
  bytes = serialize(requests);
  // Layout: shutdown(1) count(8) rank(4) op(1) name(8 + 1) dtype(1) shape count(8) ...
  const std::uint64_t dims = std::uint64_t{1} << 61;  // * 8 bytes wraps to 0
  std::memcpy(&bytes[1 + 8 + 4 + 1 + 8 + 1 + 1], &dims, 8);
  EXPECT_THROW(parse_request_list(bytes), Error);
}

}  // namespace
}  // namespace hvd
