#include "backend/gloo/gloo_controller.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace hvd {
namespace {

constexpr int kRoot = 0;

}  // namespace

GlooController::GlooController(std::shared_ptr<GlooContext> context)
    : context_(std::move(context)) {
  HVD_CHECK(context_ != nullptr, InvalidArgument, "GlooController needs a GlooContext");
}

std::vector<std::string> GlooController::gather_to_root(const std::string& message) {
  const std::shared_ptr<gloo::Context>& gloo_context = context_->control();
  const int size = context_->topology().size;
  const bool is_root = context_->topology().rank == kRoot;

  // Every rank learns every size, so all pad to the same length and run
  // one fixed-size gather.
  std::int64_t my_size = static_cast<std::int64_t>(message.size());
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(size));
  context_->run("gathering control message sizes", [&] {
    gloo::AllgatherOptions options(gloo_context);
    options.setInput(&my_size, 1);
    options.setOutput(sizes.data(), sizes.size());
    options.setTag(next_tag());
    gloo::allgather(options);
  });
  const std::size_t padded_size =
      static_cast<std::size_t>(*std::max_element(sizes.begin(), sizes.end()));

  std::vector<char> gathered;
  if (padded_size > 0) {
    std::vector<char> padded(message.begin(), message.end());
    padded.resize(padded_size);
    if (is_root) gathered.resize(padded_size * static_cast<std::size_t>(size));
    context_->run("gathering control messages", [&] {
      gloo::GatherOptions options(gloo_context);
      options.setInput(padded.data(), padded.size());
      if (is_root) options.setOutput(gathered.data(), gathered.size());
      options.setRoot(kRoot);
      options.setTag(next_tag());
      gloo::gather(options);
    });
  }
  if (!is_root) return {};
  std::vector<std::string> messages;
  messages.reserve(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) {
    const char* begin = gathered.data() + static_cast<std::size_t>(r) * padded_size;
    messages.emplace_back(begin, static_cast<std::size_t>(sizes[r]));
  }
  return messages;
}

std::string GlooController::broadcast_from_root(const std::string& message) {
  const std::shared_ptr<gloo::Context>& gloo_context = context_->control();
  const bool is_root = context_->topology().rank == kRoot;

  std::int64_t size = is_root ? static_cast<std::int64_t>(message.size()) : 0;
  context_->run("broadcasting a control message size", [&] {
    gloo::BroadcastOptions options(gloo_context);
    options.setOutput(&size, 1);
    options.setRoot(kRoot);
    options.setTag(next_tag());
    gloo::broadcast(options);
  });
  std::string result = is_root ? message : std::string(static_cast<std::size_t>(size), '\0');
  if (size == 0) return result;
  context_->run("broadcasting a control message", [&] {
    gloo::BroadcastOptions options(gloo_context);
    options.setOutput(result.data(), result.size());
    options.setRoot(kRoot);
    options.setTag(next_tag());
    gloo::broadcast(options);
  });
  return result;
}

void GlooController::bitwise_and(std::vector<std::uint64_t>& words) {
  if (words.empty()) return;
  // Gloo calls reduce(out, a, b, n) with out = a op b; out may alias a or b.
  auto bitwise_and_into = [](void* out, const void* a, const void* b, std::size_t n) {
    auto* o = static_cast<std::uint64_t*>(out);
    const auto* x = static_cast<const std::uint64_t*>(a);
    const auto* y = static_cast<const std::uint64_t*>(b);
    for (std::size_t i = 0; i < n; ++i) o[i] = x[i] & y[i];
  };
  context_->run("exchanging response cache bits", [&] {
    gloo::AllreduceOptions options(context_->control());
    options.setOutput(words.data(), words.size());
    options.setReduceFunction(bitwise_and_into);
    options.setTag(next_tag());
    gloo::allreduce(options);
  });
}

}  // namespace hvd
