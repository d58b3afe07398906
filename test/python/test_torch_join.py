"""hvd.join() for uneven numbers of batches, as in Horovod: the return
value (the last rank to join), allreduces of every op with zeros from the
joined ranks (Average divides by every rank), other collectives refused
after a rank joined, and a DistributedOptimizer training loop where ranks
have different numbers of batches."""
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


@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum, hvd.Min, hvd.Max, hvd.Product], ids=str)
def test_joined_ranks_contribute_zeros(op):
    # Rank r has r + 1 steps: at step s the ranks r >= s submit, the others
    # have joined and add zeros (so Average is over every rank, and Min, Max
    # and Product see a 0), as Horovod computes it.
    n, me = hvd.size(), hvd.rank()
    for step in range(me + 1):
        values = [rank_tensor(r, [4], seed=step) if r >= step else torch.zeros(4)
                  for r in range(n)]
        result = hvd.allreduce(values[me], name="join.{}.{}".format(op, step), op=op)
        expected = {hvd.Average: lambda: sum(values) / n, hvd.Sum: lambda: sum(values),
                    hvd.Min: lambda: torch.stack(values).amin(0),
                    hvd.Max: lambda: torch.stack(values).amax(0),
                    hvd.Product: lambda: torch.stack(values).prod(0)}[op]()
        torch.testing.assert_close(result, expected)
    assert hvd.join() == n - 1


def test_other_collectives_fail_after_a_rank_joined():
    if hvd.size() < 2:
        pytest.skip("needs a joined rank and a training one")
    if hvd.rank() != 0:
        # Rank 0 has joined (or will, before negotiation finishes): refused.
        with pytest.raises(hvd.InvalidArgumentError, match="joined"):
            hvd.allgather(torch.ones(2), name="join.gather")
        with pytest.raises(hvd.InvalidArgumentError, match="joined"):
            hvd.broadcast(torch.ones(2), root_rank=1, name="join.broadcast")
    hvd.join()


def test_distributed_optimizer_with_uneven_batches():
    check_join_with_uneven_batches()
