// ForwardingBackend: a backend layered over another (shared memory over MPI
// or Gloo): the collectives it does not override go to the inner backend.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "core/execution/backend.h"

namespace hvd {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& counts,
                  DataType dtype) override {
    inner_->allgatherv(input, output, counts, dtype);
  }
  void broadcast(void* buffer, std::size_t count, DataType dtype, int root) override {
    inner_->broadcast(buffer, count, dtype, root);
  }
  void alltoallv(const void* input, const std::vector<std::size_t>& send_counts, void* output,
                 const std::vector<std::size_t>& recv_counts, DataType dtype) override {
    inner_->alltoallv(input, send_counts, output, recv_counts, dtype);
  }
  void reducescatter(void* buffer, void* output, const std::vector<std::size_t>& counts,
                     DataType dtype, ReduceOp op) override {
    inner_->reducescatter(buffer, output, counts, dtype, op);
  }
  void sendrecv(const void* send, std::size_t send_count, void* recv, std::size_t recv_count,
                DataType dtype, int peer) override {
    inner_->sendrecv(send, send_count, recv, recv_count, dtype, peer);
  }

  Backend& inner() { return *inner_; }

 protected:
  std::unique_ptr<Backend> inner_;
};

}  // namespace hvd
