// The rules add_process_set / remove_process_set calls must follow, as pure
// functions: which rank lists make a set, and how ranks that made different
// calls are reported. Every rank applies them to the same exchanged values,
// so every rank reaches the same verdict.
#pragma once

#include <string>
#include <vector>

namespace hvd {

// "[0, 2, 3]"
std::string rank_list_str(const std::vector<int>& ranks);

// Throws InvalidArgument unless `sorted_ranks` (ascending) is a non-empty
// list of distinct ranks of a job of `job_size` ranks.
void check_process_set_ranks(const std::vector<int>& sorted_ranks, int job_size);

// True when `ranks` is 0, 1, ..., size - 1: every rank of a job of `size`, in order.
bool is_every_rank_in_order(const std::vector<int>& ranks, int size);

// Empty if every rank made the same call (`calls[r]`: rank r's); otherwise
// each distinct call with the ranks that made it, e.g.
// "add_process_set([0, 1]) on ranks 0, 2; add_process_set([0]) on rank 1".
std::string call_disagreement(const std::vector<std::string>& calls);

}  // namespace hvd
