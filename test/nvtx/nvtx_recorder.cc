// An NVTX injection library, as Nsight Systems loads one
// (NVTX_INJECTION64_PATH): it records the domain ranges started and ended,
// so that nvtx_tests can check what a profiler would see.
#include <nvtx3/nvToolsExt.h>

#include <mutex>
#include <string>

namespace {

std::mutex mutex;
std::string events;  // "start NAME\n" and "end\n", in order
nvtxRangeId_t last_id = 0;

nvtxRangeId_t NVTX_API range_start(nvtxDomainHandle_t, const nvtxEventAttributes_t* attributes) {
  std::lock_guard<std::mutex> lock(mutex);
  const char* name =
      attributes->messageType == NVTX_MESSAGE_TYPE_ASCII ? attributes->message.ascii : "?";
  events += std::string("start ") + name + "\n";
  return ++last_id;
}

void NVTX_API range_end(nvtxDomainHandle_t, nvtxRangeId_t) {
  std::lock_guard<std::mutex> lock(mutex);
  events += "end\n";
}

nvtxDomainHandle_t NVTX_API domain_create(const char*) {
  static int domain;
  return reinterpret_cast<nvtxDomainHandle_t>(&domain);
}

bool hook(const NvtxExportTableCallbacks* callbacks, unsigned int id, NvtxFunctionPointer fn) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || id >= size) {
    return false;
  }
  *table[id] = fn;
  return true;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  return hook(callbacks, NVTX_CBID_CORE2_DomainRangeStartEx,
              reinterpret_cast<NvtxFunctionPointer>(range_start)) &&
         hook(callbacks, NVTX_CBID_CORE2_DomainRangeEnd,
              reinterpret_cast<NvtxFunctionPointer>(range_end)) &&
         hook(callbacks, NVTX_CBID_CORE2_DomainCreateA,
              reinterpret_cast<NvtxFunctionPointer>(domain_create));
}

// What was recorded so far (a copy: the caller owns nothing here).
__attribute__((visibility("default"))) void nvtx_recorder_events(std::string* out) {
  std::lock_guard<std::mutex> lock(mutex);
  *out = events;
}

}  // extern "C"
