// What every transport's Controller and Backend must do, shared by the
// transport suites under hvdrun (mpi/test_mpi_backend.cc,
// gloo/test_gloo_backend.cc, shm/test_shm_backend.cc: one process per rank)
// and by threads/test_backend_threads.cc (Gloo and shm, every rank a thread
// of one process): exact element access for every dtype, reference values,
// and the bodies of the conformance tests. Each suite calls these from its
// own TEST/TEST_P with its own Controller/Backend, once per rank; what is
// specific to a transport stays there.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "core/execution/backend.h"
#include "core/negotiation/controller.h"
#include "horovodcpp/errors.h"
#include "horovodcpp/types.h"
#include "registry/transports.h"

namespace hvd {

// Readable parameters in gtest's messages (found by argument-dependent lookup).
inline void PrintTo(DataType dtype, std::ostream* os) { *os << dtype_name(dtype); }
inline void PrintTo(ReduceOp op, std::ostream* os) { *os << reduce_op_name(op); }

namespace conformance {

constexpr DataType kAllDtypes[] = {DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,
                                   DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                   DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                   DataType::kFloat64, DataType::kBool};
constexpr ReduceOp kBackendOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax,
                                    ReduceOp::kProduct};

// gtest names for the suites' parameters: "float32", "float32_sum".
using DtypeOpParam = std::tuple<DataType, ReduceOp>;
inline std::string dtype_param_name(const ::testing::TestParamInfo<DataType>& info) {
  return dtype_name(info.param);
}
inline std::string dtype_op_param_name(const ::testing::TestParamInfo<DtypeOpParam>& info) {
  return std::string(dtype_name(std::get<0>(info.param))) + "_" +
         reduce_op_name(std::get<1>(info.param));
}

// ---- Element access through double. Every test value is exactly
// representable in every dtype, so comparisons are exact.

template <typename T>
double to_double(T value) {
  return static_cast<double>(value);
}
inline double to_double(float16_t value) { return static_cast<float>(value); }
inline double to_double(bfloat16_t value) { return static_cast<float>(value); }

class Buffer {
 public:
  Buffer(DataType dtype, std::size_t count)
      : dtype_(dtype), count_(count), bytes_(count * dtype_size(dtype)) {}

  void set(std::size_t i, double value) {
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      reinterpret_cast<T*>(bytes_.data())[i] = static_cast<T>(value);
    });
  }
  double get(std::size_t i) const {
    double value = 0;
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      value = to_double(reinterpret_cast<const T*>(bytes_.data())[i]);
    });
    return value;
  }
  // Null for an empty buffer, as callers may pass.
  void* data() { return bytes_.empty() ? nullptr : bytes_.data(); }
  std::size_t count() const { return count_; }

 private:
  DataType dtype_;
  std::size_t count_;
  std::vector<unsigned char> bytes_;
};

inline ::testing::AssertionResult equals(const Buffer& actual,
                                         const std::vector<double>& expected) {
  if (actual.count() != expected.size()) {
    return ::testing::AssertionFailure()
           << "count " << actual.count() << " != expected " << expected.size();
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (actual.get(i) != expected[i]) {
      return ::testing::AssertionFailure()
             << "element " << i << " is " << actual.get(i) << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

inline bool is_unsigned(DataType dtype) {
  return dtype == DataType::kUInt8 || dtype == DataType::kUInt16;
}

// Allreduce inputs: tiny values, so that sums and products over 4 ranks
// neither overflow int8 nor round in bfloat16, in any reduction order.
inline double reduce_input(DataType dtype, int rank, std::size_t i) {
  if (dtype == DataType::kBool) return i % 5 != 0 && (rank + i) % 7 != 0;
  if (is_unsigned(dtype)) return static_cast<double>((rank + i) % 4);
  const double k = static_cast<double>((rank * 3 + i) % 7) - 3;  // -3 .. 3
  return is_floating(dtype) ? k * 0.5 : k;
}

// The scalar reference of reducing reduce_input over all ranks.
inline double reduce_reference(DataType dtype, ReduceOp op, int size, std::size_t i) {
  double acc = reduce_input(dtype, 0, i);
  for (int r = 1; r < size; ++r) {
    const double v = reduce_input(dtype, r, i);
    if (dtype == DataType::kBool) {
      const bool any = op == ReduceOp::kSum || op == ReduceOp::kMax;
      acc = any ? (acc != 0 || v != 0) : (acc != 0 && v != 0);
      continue;
    }
    switch (op) {
      case ReduceOp::kSum: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAverage:
      case ReduceOp::kAdasum: ADD_FAILURE() << "no reference for " << reduce_op_name(op); break;
    }
  }
  return acc;
}

// Broadcast and allgatherv values: distinct per seed within each dtype's
// exact range (bfloat16 holds k/4 exactly for |k| <= 100).
inline double pattern_value(DataType dtype, std::size_t seed) {
  if (dtype == DataType::kBool) return static_cast<double>(seed % 2);
  const double k = static_cast<double>(seed % 200);
  if (is_unsigned(dtype)) return k;
  return is_floating(dtype) ? (k - 100) * 0.25 : k - 100;
}

// ---- Topology and transport registry

// The tests run on one host: everybody is local, there is one "node".
inline void check_single_host(const Topology& t) {
  EXPECT_EQ(t.local_size * t.cross_size, t.size);
  EXPECT_EQ(t.local_size, t.size);
  EXPECT_EQ(t.local_rank, t.rank);
  EXPECT_EQ(t.cross_size, 1);
  EXPECT_EQ(t.cross_rank, 0);
}

// create_transport(name) works and its controller talks to all ranks.
inline void check_registry_has(const std::string& name, const Topology& topology) {
  const std::vector<std::string> names = available_transports();
  EXPECT_NE(std::find(names.begin(), names.end(), name), names.end());
  Transport transport = create_transport(name);
  ASSERT_NE(transport.controller, nullptr);
  ASSERT_NE(transport.backend, nullptr);
  // With every rank on this host the shared-memory backend wraps the
  // transport's own (HOROVODCPP_SHM=0 turns that off).
  const std::string backend_name = transport.backend->name();
  EXPECT_TRUE(backend_name == name || backend_name == "shm") << backend_name;
  EXPECT_EQ(transport.controller->topology().size, topology.size);
  EXPECT_EQ(transport.controller->broadcast_from_root(std::to_string(topology.rank)), "0");
}

// An unknown name is rejected with a message naming it and `available`.
inline void check_unknown_transport_lists(const std::string& available) {
  try {
    create_transport("carrier-pigeon");
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("carrier-pigeon"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(available), std::string::npos) << e.what();
  }
}

// ---- Controller

// Binary-safe, rank-dependent, empty on odd ranks in odd rounds.
inline std::string controller_message(int rank, int round) {
  if (round % 2 == 1 && rank % 2 == 1) return "";
  std::string message(static_cast<std::size_t>(rank * 5 + round), '\0');
  for (std::size_t i = 0; i < message.size(); ++i) {
    message[i] = static_cast<char>((rank * 31 + round * 7 + i) % 256);
  }
  return message;
}

inline void check_gather_to_root(Controller& controller) {
  const Topology& topology = controller.topology();
  for (int round = 0; round < 4; ++round) {
    const std::vector<std::string> gathered =
        controller.gather_to_root(controller_message(topology.rank, round));
    if (topology.rank != 0) {
      EXPECT_TRUE(gathered.empty());
      continue;
    }
    ASSERT_EQ(gathered.size(), static_cast<std::size_t>(topology.size));
    for (int r = 0; r < topology.size; ++r) {
      EXPECT_EQ(gathered[r], controller_message(r, round)) << "rank " << r << " round " << round;
    }
  }
}

inline void check_gather_all_empty(Controller& controller) {
  const Topology& topology = controller.topology();
  const std::vector<std::string> gathered = controller.gather_to_root("");
  if (topology.rank == 0) {
    EXPECT_EQ(gathered, std::vector<std::string>(topology.size));
  } else {
    EXPECT_TRUE(gathered.empty());
  }
}

// Rank r clears bit (i + r) % 64 of word i (and, in every other word, bit 63).
inline std::vector<std::uint64_t> bits_of(int rank, std::size_t words) {
  std::vector<std::uint64_t> bits(words, ~std::uint64_t{0});
  for (std::size_t i = 0; i < words; ++i) {
    bits[i] &= ~(std::uint64_t{1} << ((i + static_cast<std::size_t>(rank)) % 64));
    if (i % 2 == 1) bits[i] &= ~(std::uint64_t{1} << 63);
  }
  return bits;
}

inline void check_bitwise_and_every_length(Controller& controller) {
  const Topology& topology = controller.topology();
  for (std::size_t words : {0, 1, 17, 2046, 2047, 2048, 5000, 100000}) {
    std::vector<std::uint64_t> mine = bits_of(topology.rank, words);
    std::vector<std::uint64_t> expected(words, ~std::uint64_t{0});
    for (int r = 0; r < topology.size; ++r) {
      const std::vector<std::uint64_t> theirs = bits_of(r, words);
      for (std::size_t i = 0; i < words; ++i) expected[i] &= theirs[i];
    }
    controller.bitwise_and(mine);
    EXPECT_TRUE(mine == expected) << words << " words";
  }
}

// bitwise_and_gathering: the AND as bitwise_and gives it, and every rank's
// payload (each rank its own length, empty ones among them, up to the
// capacity) on every rank. A plane that carries none gathers empty payloads
// and refuses a non-empty one (on every rank alike: nothing was exchanged).
inline void check_bitwise_and_gathering(Controller& controller) {
  const Topology& topology = controller.topology();
  const std::size_t capacity = controller.payload_capacity();
  const auto payload_of = [capacity](int rank, int round) {
    const std::size_t length = capacity == 0 ? 0
                               : rank == round % 3
                                   ? capacity
                                   : static_cast<std::size_t>(rank * 37 + round) % (capacity + 1);
    std::string bytes(length, '\0');
    for (std::size_t i = 0; i < length; ++i) {
      bytes[i] = static_cast<char>((rank * 29 + round * 13 + i * 5) % 256);
    }
    return bytes;
  };
  std::vector<std::string> gathered;
  for (int round = 0; round < 6; ++round) {
    const std::size_t words = round == 5 ? 0 : 1 + static_cast<std::size_t>(round) * 40;
    std::vector<std::uint64_t> mine = bits_of(topology.rank, words);
    std::vector<std::uint64_t> expected(words, ~std::uint64_t{0});
    for (int r = 0; r < topology.size; ++r) {
      const std::vector<std::uint64_t> theirs = bits_of(r, words);
      for (std::size_t i = 0; i < words; ++i) expected[i] &= theirs[i];
    }
    controller.bitwise_and_gathering(mine, payload_of(topology.rank, round), gathered);
    EXPECT_TRUE(mine == expected) << "round " << round;
    ASSERT_EQ(gathered.size(), static_cast<std::size_t>(topology.size));
    for (int r = 0; r < topology.size; ++r) {
      EXPECT_TRUE(gathered[r] == payload_of(r, round)) << "rank " << r << ", round " << round;
    }
  }
  std::vector<std::uint64_t> bits(2, 1);
  EXPECT_THROW(controller.bitwise_and_gathering(bits, std::string(capacity + 1, 'x'), gathered),
               InvalidArgument);
  controller.bitwise_and(bits);  // still in step
  EXPECT_EQ(bits, std::vector<std::uint64_t>(2, 1));
}

// Every rank throws, and the plane stays usable: the ranks stayed in step.
// Rank 1's vector is longer (at 2 ranks or more).
inline void check_bitwise_and_rejects_different_lengths(Controller& controller) {
  std::vector<std::uint64_t> bits(controller.topology().rank == 1 ? 4 : 3, 1);
  EXPECT_THROW(controller.bitwise_and(bits), InvalidArgument);
  std::vector<std::uint64_t> same(3, 3);
  controller.bitwise_and(same);
  EXPECT_EQ(same, std::vector<std::uint64_t>(3, 3));
}

inline void check_broadcast_from_root(Controller& controller) {
  const Topology& topology = controller.topology();
  const std::string big(100000, '\x7f');
  for (const std::string& root_message : {std::string(), std::string("a\0b", 3), big}) {
    // Non-roots pass something else; only rank 0's message counts.
    const std::string mine =
        topology.rank == 0 ? root_message : controller_message(topology.rank, 0);
    EXPECT_EQ(controller.broadcast_from_root(mine), root_message);
  }
}

// ---- Backend. `topology` is that of the ranks `backend` spans.

inline void check_name_and_capabilities(Backend& backend, const std::string& name) {
  EXPECT_EQ(backend.name(), name);
  EXPECT_FALSE(backend.capabilities().half_reduction_in_float32);
}

inline void check_allreduce_matches_reference(Backend& backend, const Topology& topology,
                                              DataType dtype, ReduceOp op,
                                              const std::vector<std::size_t>& counts) {
  for (std::size_t count : counts) {
    Buffer buffer(dtype, count);
    std::vector<double> expected(count);
    for (std::size_t i = 0; i < count; ++i) {
      buffer.set(i, reduce_input(dtype, topology.rank, i));
      expected[i] = reduce_reference(dtype, op, topology.size, i);
    }
    backend.allreduce(buffer.data(), count, dtype, op);
    EXPECT_TRUE(equals(buffer, expected)) << "count " << count;
  }
}

inline void check_allreduce_zero_elements(Backend& backend, const Topology& topology,
                                          DataType dtype, ReduceOp op) {
  backend.allreduce(nullptr, 0, dtype, op);
  // The ranks are still in step: a real collective right after works.
  Buffer one(dtype, 1);
  one.set(0, reduce_input(dtype, topology.rank, 0));
  backend.allreduce(one.data(), 1, dtype, op);
  EXPECT_TRUE(equals(one, {reduce_reference(dtype, op, topology.size, 0)}));
}

inline void check_average_rejected(Backend& backend, DataType dtype) {
  Buffer buffer(dtype, 3);
  EXPECT_THROW(backend.allreduce(buffer.data(), 3, dtype, ReduceOp::kAverage), InvalidArgument);
  EXPECT_THROW(backend.allreduce(nullptr, 0, dtype, ReduceOp::kAverage), InvalidArgument);
}

inline void check_broadcast_from_every_root(Backend& backend, const Topology& topology,
                                            DataType dtype,
                                            const std::vector<std::size_t>& counts) {
  for (int root = 0; root < topology.size; ++root) {
    for (std::size_t count : counts) {
      Buffer buffer(dtype, count);
      std::vector<double> expected(count);
      for (std::size_t i = 0; i < count; ++i) {
        buffer.set(i, pattern_value(dtype, topology.rank * 31 + i * 7 + 1));
        expected[i] = pattern_value(dtype, root * 31 + i * 7 + 1);
      }
      backend.broadcast(buffer.data(), count, dtype, root);
      EXPECT_TRUE(equals(buffer, expected)) << "root " << root << " count " << count;
    }
  }
}

// Per-rank counts for allgatherv, several of them zero.
inline std::vector<std::vector<std::size_t>> allgatherv_count_sets(int size) {
  std::vector<std::vector<std::size_t>> sets(5, std::vector<std::size_t>(size, 0));
  for (int r = 0; r < size; ++r) {
    sets[0][r] = r % 2 == 1 ? 0 : 3 + 5 * r;  // mixed, odd ranks empty
    sets[1][r] = static_cast<std::size_t>(r + 1);
    sets[2][r] = 2;  // total within MPI's small split limit for up to 3 ranks
  }
  sets[3][size - 1] = 20;  // only the last rank contributes
  // sets[4]: nobody contributes
  return sets;
}

inline void check_allgatherv(Backend& backend, const Topology& topology, DataType dtype,
                             const std::vector<std::size_t>& counts, bool in_place) {
  const int rank = topology.rank;
  std::size_t total = 0, my_offset = 0;
  std::vector<double> expected;
  for (int r = 0; r < topology.size; ++r) {
    if (r == rank) my_offset = total;
    for (std::size_t j = 0; j < counts[r]; ++j)
      expected.push_back(pattern_value(dtype, r * 17 + j));
    total += counts[r];
  }
  Buffer input(dtype, counts[rank]);
  Buffer output(dtype, total);
  for (std::size_t j = 0; j < counts[rank]; ++j) {
    input.set(j, pattern_value(dtype, rank * 17 + j));
    if (in_place) output.set(my_offset + j, pattern_value(dtype, rank * 17 + j));
  }
  const void* source = input.data();
  if (in_place && total > 0) {
    source = static_cast<char*>(output.data()) + my_offset * dtype_size(dtype);
  }
  backend.allgatherv(source, output.data(), counts, dtype);
  EXPECT_TRUE(equals(output, expected)) << (in_place ? "in place" : "separate input");
}

// Every count set, each with a separate input and in place.
inline void check_allgatherv_uneven_counts(
    Backend& backend, const Topology& topology, DataType dtype,
    const std::vector<std::vector<std::size_t>>& count_sets) {
  for (const std::vector<std::size_t>& counts : count_sets) {
    check_allgatherv(backend, topology, dtype, counts, /*in_place=*/false);
    check_allgatherv(backend, topology, dtype, counts, /*in_place=*/true);
  }
}

inline void check_invalid_arguments_rejected(Backend& backend, const Topology& topology,
                                             DataType dtype) {
  Buffer buffer(dtype, 1);
  EXPECT_THROW(backend.broadcast(buffer.data(), 1, dtype, topology.size), InvalidArgument);
  EXPECT_THROW(backend.broadcast(buffer.data(), 1, dtype, -1), InvalidArgument);
  const std::vector<std::size_t> wrong_counts(topology.size + 1, 1);
  EXPECT_THROW(backend.allgatherv(buffer.data(), buffer.data(), wrong_counts, dtype),
               InvalidArgument);
}

// ---- Backend: alltoallv and reducescatter

// Per-(sender, receiver) element counts for alltoallv, several zero; every
// rank computes the same matrix.
inline std::size_t alltoallv_count(int set, int from, int to) {
  switch (set) {
    case 0: return static_cast<std::size_t>((from + 2 * to) % 3);  // mixed, some zero
    case 1: return static_cast<std::size_t>(from * 4 + to + 1);    // all different
    case 2: return to == 0 ? 9 : 0;                                // only to rank 0
    case 3: return 40000 + 100 * from + to;  // Gloo: several segments; MPI: split
    default: return 0;                       // nothing at all
  }
}
constexpr int kNumAlltoallvCountSets = 5;

// Element j of what `from` sends to `to`.
inline double alltoallv_value(DataType dtype, int from, int to, std::size_t j) {
  return pattern_value(dtype, from * 37 + to * 11 + j);
}

inline void check_alltoallv(Backend& backend, const Topology& topology, DataType dtype, int set) {
  const int rank = topology.rank, size = topology.size;
  std::vector<std::size_t> send_counts(size), recv_counts(size);
  std::size_t send_total = 0, recv_total = 0;
  for (int r = 0; r < size; ++r) {
    send_counts[r] = alltoallv_count(set, rank, r);
    recv_counts[r] = alltoallv_count(set, r, rank);
    send_total += send_counts[r];
    recv_total += recv_counts[r];
  }
  Buffer input(dtype, send_total), output(dtype, recv_total);
  std::vector<double> expected;
  std::size_t k = 0;
  for (int r = 0; r < size; ++r) {
    for (std::size_t j = 0; j < send_counts[r]; ++j)
      input.set(k++, alltoallv_value(dtype, rank, r, j));
    for (std::size_t j = 0; j < recv_counts[r]; ++j)
      expected.push_back(alltoallv_value(dtype, r, rank, j));
  }
  backend.alltoallv(input.data(), send_counts, output.data(), recv_counts, dtype);
  EXPECT_TRUE(equals(output, expected)) << "count set " << set;
}

inline void check_alltoallv_count_sets(Backend& backend, const Topology& topology, DataType dtype) {
  for (int set = 0; set < kNumAlltoallvCountSets; ++set) {
    check_alltoallv(backend, topology, dtype, set);
  }
}

// Reducescatter of sum(counts) elements (reduce_input values): each rank
// gets its share of the reduce_reference.
inline void check_reducescatter(Backend& backend, const Topology& topology, DataType dtype,
                                ReduceOp op, const std::vector<std::size_t>& counts) {
  std::size_t total = 0, my_offset = 0;
  for (int r = 0; r < topology.size; ++r) {
    if (r == topology.rank) my_offset = total;
    total += counts[r];
  }
  Buffer buffer(dtype, total);
  for (std::size_t i = 0; i < total; ++i) buffer.set(i, reduce_input(dtype, topology.rank, i));
  Buffer output(dtype, counts[topology.rank]);
  std::vector<double> expected(counts[topology.rank]);
  for (std::size_t i = 0; i < expected.size(); ++i) {
    expected[i] = reduce_reference(dtype, op, topology.size, my_offset + i);
  }
  backend.reducescatter(buffer.data(), output.data(), counts, dtype, op);
  EXPECT_TRUE(equals(output, expected)) << "total " << total;
}

// Equal, uneven (some ranks get nothing) and empty shares, plus `large`
// elements per rank.
inline void check_reducescatter_shares(Backend& backend, const Topology& topology, DataType dtype,
                                       ReduceOp op, std::size_t large) {
  const int size = topology.size;
  const std::vector<std::vector<std::size_t>> count_sets = {
      std::vector<std::size_t>(size, 5), allgatherv_count_sets(size)[0],
      allgatherv_count_sets(size)[3], std::vector<std::size_t>(size, 0),
      std::vector<std::size_t>(size, large)};
  for (const auto& counts : count_sets) check_reducescatter(backend, topology, dtype, op, counts);
}

inline void check_alltoall_reducescatter_arguments_rejected(Backend& backend,
                                                            const Topology& topology,
                                                            DataType dtype) {
  Buffer buffer(dtype, 1);
  const std::vector<std::size_t> wrong_counts(topology.size + 1, 0);
  const std::vector<std::size_t> zeros(topology.size, 0);
  EXPECT_THROW(backend.alltoallv(buffer.data(), wrong_counts, buffer.data(), zeros, dtype),
               InvalidArgument);
  EXPECT_THROW(backend.alltoallv(buffer.data(), zeros, buffer.data(), wrong_counts, dtype),
               InvalidArgument);
  EXPECT_THROW(
      backend.reducescatter(buffer.data(), buffer.data(), wrong_counts, dtype, ReduceOp::kSum),
      InvalidArgument);
  EXPECT_THROW(
      backend.reducescatter(buffer.data(), buffer.data(), zeros, dtype, ReduceOp::kAverage),
      InvalidArgument);
}

// ---- Backend: sendrecv

// Elements `from` sends to `to` in round `round` of check_sendrecv_pairs:
// different in each direction, some zero, some large (several Gloo
// segments, several MPI calls under a small split limit).
inline std::size_t sendrecv_count(int round, int from, int to) {
  switch (round % 3) {
    case 0: return static_cast<std::size_t>(3 * from + to + 1);
    case 1: return from < to ? 0 : 5;
    default: return 40000 + 100 * static_cast<std::size_t>(from) + to;
  }
}

// Rounds of partners rank ^ d (d = 1, 2, 4, ...; a rank whose partner
// would be outside the job is its own, as an unmatched rank must be), each
// with three count patterns. Every rank checks what it received.
inline void check_sendrecv_pairs(Backend& backend, const Topology& topology, DataType dtype) {
  const int rank = topology.rank;
  int round = 0;
  for (int d = 1; d < 2 * topology.size; d <<= 1) {
    const int peer = (rank ^ d) < topology.size ? (rank ^ d) : rank;
    for (int pattern = 0; pattern < 3; ++pattern, ++round) {
      // With itself the counts must match: both directions use `rank, rank`.
      const std::size_t send_count = sendrecv_count(round, rank, peer);
      const std::size_t recv_count = sendrecv_count(round, peer, rank);
      Buffer send(dtype, send_count), recv(dtype, recv_count);
      std::vector<double> expected(recv_count);
      for (std::size_t j = 0; j < send_count; ++j)
        send.set(j, alltoallv_value(dtype, rank, peer, j));
      for (std::size_t j = 0; j < recv_count; ++j)
        expected[j] = alltoallv_value(dtype, peer, rank, j);
      backend.sendrecv(send.data(), send_count, recv.data(), recv_count, dtype, peer);
      EXPECT_TRUE(equals(recv, expected)) << "peer " << peer << " round " << round;
    }
  }
}

inline void check_sendrecv_arguments_rejected(Backend& backend, const Topology& topology,
                                              DataType dtype) {
  Buffer buffer(dtype, 2), other(dtype, 2);
  EXPECT_THROW(backend.sendrecv(buffer.data(), 1, other.data(), 1, dtype, topology.size),
               InvalidArgument);
  EXPECT_THROW(backend.sendrecv(buffer.data(), 1, other.data(), 1, dtype, -1), InvalidArgument);
  EXPECT_THROW(backend.sendrecv(buffer.data(), 1, other.data(), 2, dtype, topology.rank),
               InvalidArgument);
}

// ---- Output of a multi-rank job

// Ranks other than 0 print only their failures, tagged with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

// On ranks other than 0, replaces gtest's printer with a RankFailurePrinter.
inline void print_only_failures_unless_rank0(int rank) {
  if (rank == 0) return;
  ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
  delete listeners.Release(listeners.default_result_printer());
  listeners.Append(new RankFailurePrinter(rank));
}

// Every rank's exit status: the job's outcome (`result` 0: this rank
// passed), whichever rank failed, agreed over `controller`.
inline int job_outcome(Controller& controller, int result) {
  const int rank = controller.topology().rank;
  int outcome = result;
  try {
    std::vector<std::uint64_t> passed{result == 0 ? 1u : 0u};
    controller.bitwise_and(passed);
    outcome = passed[0] ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[rank %d] cannot agree on the outcome: %s\n", rank, e.what());
    outcome = 1;
  }
  if (rank == 0 && outcome != result) {
    std::fprintf(stderr, "FAILED on another rank (see its [rank N] lines)\n");
  }
  return outcome;
}

}  // namespace conformance
}  // namespace hvd
