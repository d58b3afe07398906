// MpiController: the control plane over the context's control communicator.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/mpi/mpi_bitwise_and.h"
#include "backend/mpi/mpi_context.h"
#include "core/negotiation/controller.h"

namespace hvd {

class MpiController : public Controller {
 public:
  explicit MpiController(std::shared_ptr<MpiContext> context);

  const Topology& topology() const override { return context_->topology(); }
  std::vector<std::string> gather_to_root(const std::string& message) override;
  std::string broadcast_from_root(const std::string& message) override;
  // Recursive doubling over point-to-point messages (mpi_bitwise_and.h).
  void bitwise_and(std::vector<std::uint64_t>& words) override { and_.run(words); }
  [[noreturn]] void give_up(const std::string& what, const std::string& cause,
                            const std::vector<int>& blamed, bool listen) override {
    context_->give_up(what, cause, blamed, listen);
  }

 private:
  std::shared_ptr<MpiContext> context_;
  MpiBitwiseAnd and_;
};

}  // namespace hvd
