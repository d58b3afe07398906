#include "core/process_sets/process_set_rules.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/check.h"

namespace hvd {

std::string rank_list_str(const std::vector<int>& ranks) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  out << ']';
  return out.str();
}

bool is_every_rank_in_order(const std::vector<int>& ranks, int size) {
  if (static_cast<int>(ranks.size()) != size) return false;
  for (int r = 0; r < size; ++r) {
    if (ranks[static_cast<std::size_t>(r)] != r) return false;
  }
  return true;
}

void check_process_set_ranks(const std::vector<int>& sorted_ranks, int job_size) {
  HVD_CHECK(!sorted_ranks.empty(), InvalidArgument, "a process set needs at least one rank");
  const auto duplicate = std::adjacent_find(sorted_ranks.begin(), sorted_ranks.end());
  HVD_CHECK(duplicate == sorted_ranks.end(), InvalidArgument,
            "process set " << rank_list_str(sorted_ranks) << " lists rank " << *duplicate
                           << " more than once");
  HVD_CHECK(sorted_ranks.front() >= 0 && sorted_ranks.back() < job_size, InvalidArgument,
            "process set " << rank_list_str(sorted_ranks) << " has ranks outside [0, " << job_size
                           << ") (the job has " << job_size << " ranks)");
}

std::string call_disagreement(const std::vector<std::string>& calls) {
  std::map<std::string, std::vector<int>> ranks_by_call;  // ordered: the same text everywhere
  for (std::size_t r = 0; r < calls.size(); ++r) {
    ranks_by_call[calls[r]].push_back(static_cast<int>(r));
  }
  if (ranks_by_call.size() <= 1) return "";
  std::ostringstream out;
  for (const auto& [call, ranks] : ranks_by_call) {
    out << (out.tellp() > 0 ? "; " : "") << call << " on "
        << (ranks.size() == 1 ? "rank " : "ranks ");
    for (std::size_t i = 0; i < ranks.size(); ++i) out << (i ? ", " : "") << ranks[i];
  }
  return out.str();
}

}  // namespace hvd
