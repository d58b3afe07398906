"""hvd.join() for uneven numbers of batches: the return value (the last
rank to join), allreduces averaged over the ranks still submitting, other
collectives refused after a rank joined, and a DistributedOptimizer training
loop where ranks have different numbers of batches."""
import pytest
import torch

import horovodcpp.torch as hvd
from reference import batch, batch_of, make_model, rank_tensor


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
    # Rank r trains on 2 + r batches, then joins. While some ranks have
    # joined, the others' gradients are averaged over the ranks still
    # training, so the last rank's model is the one a single process gets by
    # training, at each step, on the batches of the ranks still training.
    # Its parameters are then broadcast to every rank.
    n, me = hvd.size(), hvd.rank()
    steps = [2 + r for r in range(n)]
    model, reference = make_model(), make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    local = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    for step in range(steps[me]):
        optimizer.zero_grad()
        x, y = batch(step, me)
        loss_fn(model(x), y).backward()
        optimizer.step()
    last = hvd.join()
    assert last == n - 1

    for step in range(max(steps)):
        local.zero_grad()
        x, y = batch_of([r for r in range(n) if step < steps[r]], step)
        loss_fn(reference(x), y).backward()
        local.step()
    if me == last:
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)

    hvd.broadcast_parameters(model.state_dict(), root_rank=last)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)
        gathered = hvd.allgather(p.detach().unsqueeze(0), name="join.same." + name)
        assert all(torch.equal(g, p.detach()) for g in gathered), name
