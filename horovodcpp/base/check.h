// Check macros that throw typed hvd errors with both values in the message.
#pragma once

#include <sstream>

#include "horovodcpp/errors.h"

#define HVD_THROW(ExceptionType, message_stream) \
  do {                                           \
    std::ostringstream hvd_message_;             \
    hvd_message_ << message_stream;              \
    throw ExceptionType(hvd_message_.str());     \
  } while (0)

#define HVD_CHECK(condition, ExceptionType, message_stream)     \
  do {                                                          \
    if (!(condition)) HVD_THROW(ExceptionType, message_stream); \
  } while (0)

#define HVD_CHECK_EQ(a, b, ExceptionType, message_stream)                                        \
  do {                                                                                           \
    const auto& hvd_a_ = (a);                                                                    \
    const auto& hvd_b_ = (b);                                                                    \
    if (!(hvd_a_ == hvd_b_))                                                                     \
      HVD_THROW(ExceptionType,                                                                   \
                message_stream << " (" #a " = " << hvd_a_ << ", " << #b " = " << hvd_b_ << ")"); \
  } while (0)
