// The table of settings as text: the environment section of hvdrun --help,
// and the generated part of docs/settings.md (hvdrun --settings-markdown).
#pragma once

#include <string>

namespace hvd {
namespace settings {

std::string help_text();
std::string markdown();

}  // namespace settings
}  // namespace hvd
