// The message of an exception held in an exception_ptr, for logs and
// records that outlive it.
#pragma once

#include <exception>
#include <string>

namespace hvd {

inline std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace hvd
