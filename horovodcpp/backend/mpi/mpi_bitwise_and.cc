#include "backend/mpi/mpi_bitwise_and.h"

#include <climits>
#include <utility>

#include "base/check.h"

namespace hvd {
namespace {

// Point-to-point messages of the control communicator, which its
// collectives never match.
constexpr int kHeaderTag = 1;
constexpr int kWordsTag = 2;
constexpr int kHeaderWords = 2;

// A request still pending when a wait throws: a receive is cancelled, so
// that MPI never writes into its buffer later; a send is left to finish.
class Pending {
 public:
  explicit Pending(bool receive) : receive_(receive) {}
  Pending(const Pending&) = delete;
  Pending& operator=(const Pending&) = delete;
  ~Pending() {
    if (request == MPI_REQUEST_NULL) return;
    if (receive_) MPI_Cancel(&request);
    MPI_Request_free(&request);
  }
  MPI_Request request = MPI_REQUEST_NULL;

 private:
  bool receive_;
};

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) detail::throw_mpi_error(what, rc);
}

}  // namespace

MpiBitwiseAnd::MpiBitwiseAnd(std::shared_ptr<MpiContext> context) : context_(std::move(context)) {}

void MpiBitwiseAnd::run(std::vector<std::uint64_t>& words) {
  HVD_CHECK(words.size() <= static_cast<std::size_t>(INT_MAX), BackendError,
            "bit vector of " << words.size() << " words exceeds MPI's count limit");
  const int rank = context_->topology().rank, size = context_->topology().size;
  int power = 1;
  while (power * 2 <= size) power *= 2;
  mismatch_ = false;
  if (rank >= power) {
    // Hands its vector to rank - power, which returns the result.
    exchange(words, rank - power, /*send=*/true, /*receive=*/false);
    exchange(words, rank - power, /*send=*/false, /*receive=*/true);
    mismatch_ = their_header_.mismatch != 0 || theirs_.size() != words.size();
    if (!mismatch_) words.swap(theirs_);
  } else {
    const bool has_extra = rank + power < size;
    if (has_extra) {
      exchange(words, rank + power, /*send=*/false, /*receive=*/true);
      combine(words);
    }
    for (int distance = 1; distance < power; distance *= 2) {
      exchange(words, rank ^ distance, /*send=*/true, /*receive=*/true);
      combine(words);
    }
    if (has_extra) exchange(words, rank + power, /*send=*/true, /*receive=*/false);
  }
  HVD_CHECK(!mismatch_, InvalidArgument,
            "bitwise_and: the ranks passed bit vectors of different lengths (this rank "
                << words.size() << " words)");
}

void MpiBitwiseAnd::exchange(const std::vector<std::uint64_t>& words, int peer, bool send,
                             bool receive) {
  const MPI_Comm comm = context_->control_comm();
  Pending header_in(true), words_in(true), header_out(false), words_out(false);
  if (receive) {
    check(MPI_Irecv(&their_header_, kHeaderWords, MPI_UINT64_T, peer, kHeaderTag, comm,
                    &header_in.request),
          "MPI_Irecv");
  }
  if (send) {
    my_header_ = {mismatch_ ? 1u : 0u, words.size()};
    check(MPI_Isend(&my_header_, kHeaderWords, MPI_UINT64_T, peer, kHeaderTag, comm,
                    &header_out.request),
          "MPI_Isend");
    check(MPI_Isend(words.data(), static_cast<int>(words.size()), MPI_UINT64_T, peer, kWordsTag,
                    comm, &words_out.request),
          "MPI_Isend");
  }
  if (receive) {
    context_->wait(MpiPlane::kControl, &header_in.request, "MPI_Irecv");
    // The peer's length, whatever it is: a mismatch is reported once every
    // rank has seen it, after the same messages.
    HVD_CHECK(their_header_.length <= static_cast<std::uint64_t>(INT_MAX), BackendError,
              "bitwise_and: rank " << peer << " sent a length of " << their_header_.length);
    theirs_.resize(their_header_.length);
    check(MPI_Irecv(theirs_.data(), static_cast<int>(theirs_.size()), MPI_UINT64_T, peer, kWordsTag,
                    comm, &words_in.request),
          "MPI_Irecv");
    context_->wait(MpiPlane::kControl, &words_in.request, "MPI_Irecv");
  }
  if (send) {
    context_->wait(MpiPlane::kControl, &header_out.request, "MPI_Isend");
    context_->wait(MpiPlane::kControl, &words_out.request, "MPI_Isend");
  }
}

void MpiBitwiseAnd::combine(std::vector<std::uint64_t>& words) {
  if (their_header_.mismatch != 0 || theirs_.size() != words.size()) mismatch_ = true;
  if (mismatch_) return;
  for (std::size_t i = 0; i < words.size(); ++i) words[i] &= theirs_[i];
}

}  // namespace hvd
