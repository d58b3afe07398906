#include "core/diagnostics/nvtx_ranges.h"

#include "settings/settings.h"

#ifdef HVD_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace hvd {

bool nvtx_ranges_enabled() {
#ifdef HVD_HAVE_NVTX
  static const bool enabled = !settings::read_bool(settings::Setting::kDisableNvtxRanges);
  return enabled;
#else
  return false;
#endif
}

#ifdef HVD_HAVE_NVTX
namespace {

nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA("horovodcpp");
  return handle;
}

}  // namespace

std::uint64_t nvtx_range_start(const char* name) {
  if (!nvtx_ranges_enabled()) return 0;
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = name;
  return nvtxDomainRangeStartEx(domain(), &attributes);
}

void nvtx_range_end(std::uint64_t id) {
  if (id != 0) nvtxDomainRangeEnd(domain(), id);
}
#else
std::uint64_t nvtx_range_start(const char*) { return 0; }
void nvtx_range_end(std::uint64_t) {}
#endif

}  // namespace hvd
