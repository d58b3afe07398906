// HVD_EXPORT marks the public API: libhorovodcpp is built with hidden
// visibility, so what it marks is all the shared library exports.
#pragma once

#if defined(_WIN32)
#define HVD_EXPORT
#else
#define HVD_EXPORT __attribute__((visibility("default")))
#endif
