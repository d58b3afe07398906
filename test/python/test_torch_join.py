"""hvd.join() for uneven numbers of batches: the return value (the last
rank to join), allreduces averaged over the ranks still submitting, other
collectives refused after a rank joined, and a DistributedOptimizer training
loop where ranks have different numbers of batches."""
import pytest
import torch

import horovodcpp.torch as hvd
from reference import check_join_with_uneven_batches, rank_tensor


def test_join_returns_the_last_rank():
    # The waiting rank's allreduce completes only once every other rank has
    # joined (they contribute zeros), so it is the last to join.
    for last in (hvd.size() - 1, 0):
        if hvd.rank() == last:
            alone = hvd.allreduce(torch.ones(3), name="join.alone", op=hvd.Sum)
            assert alone.tolist() == [1.0] * 3
        assert hvd.join() == last
    assert hvd.join(device=-1) in range(hvd.size())  # everyone at once: any of them


def test_allreduce_averages_over_the_ranks_still_submitting():
    # Rank r has r + 1 steps: at step s the ranks r >= s submit.
    n, me = hvd.size(), hvd.rank()
    for step in range(me + 1):
        active = [r for r in range(n) if r >= step]
        average = hvd.allreduce(rank_tensor(me, [4], seed=step), name="join.avg.{}".format(step))
        torch.testing.assert_close(
            average, sum(rank_tensor(r, [4], seed=step) for r in active) / len(active))
        total = hvd.allreduce(rank_tensor(me, [4], seed=step), name="join.sum.{}".format(step),
                              op=hvd.Sum)
        torch.testing.assert_close(total, sum(rank_tensor(r, [4], seed=step) for r in active))
        hvd.barrier()  # barriers go on without the joined ranks too
    assert hvd.join() == n - 1


def test_other_collectives_fail_after_a_rank_joined():
    if hvd.size() < 2:
        pytest.skip("needs a joined rank and a training one")
    if hvd.rank() != 0:
        # Rank 0 has joined (or will, before negotiation finishes): refused.
        with pytest.raises(hvd.InvalidArgumentError, match="joined"):
            hvd.allgather(torch.ones(2), name="join.gather")
        with pytest.raises(hvd.InvalidArgumentError, match="joined"):
            hvd.allreduce(torch.ones(2), name="join.max", op=hvd.Max)
    hvd.join()


def test_distributed_optimizer_with_uneven_batches():
    check_join_with_uneven_batches()
