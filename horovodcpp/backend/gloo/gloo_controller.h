// GlooController: the control plane over the context's control Gloo context.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/gloo/gloo_context.h"
#include "core/negotiation/controller.h"

namespace hvd {

class GlooController : public Controller {
 public:
  explicit GlooController(std::shared_ptr<GlooContext> context);

  const Topology& topology() const override { return context_->topology(); }
  std::vector<std::string> gather_to_root(const std::string& message) override;
  std::string broadcast_from_root(const std::string& message) override;
  void bitwise_and(std::vector<std::uint64_t>& words) override;
  [[noreturn]] void give_up(const std::string& what, const std::string& cause,
                            const std::vector<int>& blamed, bool listen) override {
    context_->give_up(what, cause, blamed, listen);
  }

 private:
  // Every rank issues the same collectives in the same order, so the n-th
  // collective has the same tag everywhere.
  std::uint32_t next_tag() { return tag_++; }

  std::shared_ptr<GlooContext> context_;
  std::uint32_t tag_ = 0;
};

}  // namespace hvd
