#include "core/env.h"

#include <cstdlib>

#include "base/check.h"

namespace hvd {

std::optional<std::string> env_setting(const std::string& name) {
  for (const char* prefix : {"HOROVODCPP_", "HOROVOD_"}) {
    if (const char* value = std::getenv((prefix + name).c_str())) return std::string(value);
  }
  return std::nullopt;
}

double env_double(const std::string& name, double default_value) {
  auto text = env_setting(name);
  if (!text) return default_value;
  char* end = nullptr;
  double value = std::strtod(text->c_str(), &end);
  HVD_CHECK(!text->empty() && *end == '\0', InvalidArgument,
            "HOROVODCPP_" << name << "='" << *text << "' is not a number");
  return value;
}

long long env_int(const std::string& name, long long default_value) {
  auto text = env_setting(name);
  if (!text) return default_value;
  char* end = nullptr;
  long long value = std::strtoll(text->c_str(), &end, 10);
  HVD_CHECK(!text->empty() && *end == '\0', InvalidArgument,
            "HOROVODCPP_" << name << "='" << *text << "' is not an integer");
  return value;
}

}  // namespace hvd
