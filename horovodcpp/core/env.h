// Settings from the environment. Each setting NAME is read from
// HOROVODCPP_NAME, or else from Horovod's HOROVOD_NAME so job scripts written
// for Horovod keep working. Malformed values are an InvalidArgument.
#pragma once

#include <optional>
#include <string>

namespace hvd {

std::optional<std::string> env_setting(const std::string& name);
double env_double(const std::string& name, double default_value);
long long env_int(const std::string& name, long long default_value);

}  // namespace hvd
