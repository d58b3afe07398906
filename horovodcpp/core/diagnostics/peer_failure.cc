#include "core/diagnostics/peer_failure.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <sstream>

#include "base/check.h"

namespace hvd {
std::chrono::milliseconds peer_timeout(settings::Setting setting) {
  return settings::timeout_of(settings::read_seconds(setting));
}

std::chrono::milliseconds roll_call_window(std::chrono::milliseconds timeout) {
  return std::clamp<std::chrono::milliseconds>(timeout / 10, std::chrono::seconds(2),
                                               std::chrono::seconds(5));
}

std::string ranks_str(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << (ranks.size() == 1 ? "rank " : "ranks ");
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  return out.str();
}

std::string rank_list_text(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    text += (i ? "," : "") + std::to_string(ranks[i]);
  }
  return text;
}

std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> ranks;
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    char* end = nullptr;
    const long rank = std::strtol(item.c_str(), &end, 10);
    HVD_CHECK(!item.empty() && std::isdigit(static_cast<unsigned char>(item[0])) && *end == '\0' &&
                  rank <= INT_MAX && comma + 1 != text.size(),
              InvalidArgument, "'" << text << "' is not a list of ranks");
    ranks.push_back(static_cast<int>(rank));
    start = comma + 1;
  }
  return ranks;
}

RankFailure peer_failure(const std::string& what, const std::vector<int>& silent,
                         const std::string& cause) {
  std::ostringstream message;
  if (silent.empty()) {
    message << what << " failed (" << cause
            << "), and every rank gave up on it: none stopped answering";
  } else {
    message << what << ": " << ranks_str(silent) << " stopped answering (" << cause << ")";
  }
  return RankFailure(message.str(), silent);
}

}  // namespace hvd
