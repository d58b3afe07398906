"""Process sets: every op on a set against the reference over its members,
non-members and unregistered sets refused, add/remove, sets given at init,
gradients on a set, DistributedOptimizer and the broadcast helpers on a set.

The sets are the even and the odd global ranks (2 ranks: [0] and [1];
3 ranks: [0, 2] and [1]); each rank works on the set it belongs to."""
import pytest
import torch

import horovodcpp.torch as hvd
from reference import (OPS, assert_equal, batch, batch_of, check_gradient, make_model,
                       rank_tensor, reduce_reference, reducescatter_rows)


def parity_ranks():
    return list(range(0, hvd.size(), 2)), list(range(1, hvd.size(), 2))


def mine_and_other(even, odd):
    return (even, odd) if hvd.rank() % 2 == 0 else (odd, even)


@pytest.fixture
def sets():
    """(the set this rank is in, the other one), registered for one test."""
    evens, odds = parity_ranks()
    even = hvd.add_process_set(evens)                  # a list of ranks
    odd = hvd.add_process_set(hvd.ProcessSet(odds))    # or a ProcessSet
    yield mine_and_other(even, odd)
    assert hvd.remove_process_set(even) and hvd.remove_process_set(odd)


def test_attributes(sets):
    mine, other = sets
    assert mine.included() and not other.included()
    assert mine.rank() == mine.ranks.index(hvd.rank()) and other.rank() == -1
    assert mine.size() == len(mine.ranks) and other.size() == len(other.ranks)
    assert sorted(mine.ranks + other.ranks) == list(range(hvd.size()))
    assert 0 < mine.process_set_id != other.process_set_id > 0
    glob = hvd.global_process_set
    assert glob.process_set_id == 0 and glob.ranks == list(range(hvd.size()))
    assert (glob.size(), glob.rank(), glob.included()) == (hvd.size(), hvd.rank(), True)
    fresh = hvd.ProcessSet([1, 0])
    assert fresh.ranks == [0, 1] and fresh.process_set_id is None
    assert (fresh.size(), fresh.rank(), fresh.included()) == (None, None, None)
    with pytest.raises(ValueError, match="list of process ranks"):
        hvd.ProcessSet([0, "1"])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.bfloat16,
                                   torch.bool], ids=str)
def test_ops_on_a_set(sets, dtype):
    mine, _ = sets
    members, me, k, i = mine.ranks, hvd.rank(), mine.size(), mine.rank()
    tag = str(dtype)

    def of_members(fn):
        return [fn(r) for r in members]

    for op in OPS:
        if dtype == torch.bool and op == hvd.Average:
            continue
        expected = reduce_reference(of_members(lambda r: rank_tensor(r, [3, 2], dtype)), op, dtype)
        result = hvd.allreduce(rank_tensor(me, [3, 2], dtype), name="ps.ar.{}.{}".format(tag, op),
                               op=op, process_set=mine)
        assert_equal(result, expected, dtype)
    summed = reduce_reference(of_members(lambda r: rank_tensor(r, [5], dtype)), hvd.Sum, dtype)
    tensor = rank_tensor(me, [5], dtype)
    assert hvd.allreduce_(tensor, name="ps.ar_." + tag, op=hvd.Sum, process_set=mine) is tensor
    assert_equal(tensor, summed, dtype)
    handle = hvd.allreduce_async(rank_tensor(me, [5], dtype), name="ps.ar_async." + tag,
                                 op=hvd.Sum, process_set=mine)
    assert_equal(hvd.synchronize(handle), summed, dtype)
    grouped = hvd.grouped_allreduce([rank_tensor(me, [5], dtype), rank_tensor(me, [2], dtype)],
                                    name="ps.gar." + tag, op=hvd.Sum, process_set=mine)
    assert_equal(grouped[0], summed, dtype)

    # Allgather with ragged first dimensions, in set order.
    def make(r):
        return rank_tensor(r, [r + 1, 2], dtype)
    assert_equal(hvd.allgather(make(me), name="ps.ag." + tag, process_set=mine),
                 torch.cat(of_members(make)), dtype)
    gathered = hvd.grouped_allgather([make(me)], name="ps.gag." + tag, process_set=mine)
    assert_equal(gathered[0], torch.cat(of_members(make)), dtype)

    # Broadcast: root_rank is a global rank.
    for root in members:
        result = hvd.broadcast(rank_tensor(me, [4], dtype), root,
                               name="ps.bc.{}.{}".format(tag, root), process_set=mine)
        assert_equal(result, rank_tensor(root, [4], dtype), dtype)

    # Alltoall: splits count the set's ranks.
    def splits(r):
        return [(r + j) % 3 for j in range(k)]

    def rows_of(r):
        return rank_tensor(r, [sum(splits(r)), 2], dtype)
    output, received = hvd.alltoall(rows_of(me), splits=splits(me), name="ps.a2a." + tag,
                                    process_set=mine)
    pieces = [rows_of(r)[sum(splits(r)[:i]):sum(splits(r)[:i + 1])] for r in members]
    assert_equal(output, torch.cat(pieces), dtype)
    assert received.tolist() == [splits(r)[i] for r in members]

    if dtype != torch.bool:
        rows = 2 * k + 1
        full = reduce_reference(of_members(lambda r: rank_tensor(r, [rows, 2], dtype)), hvd.Sum,
                                dtype)
        counts = reducescatter_rows(rows, k)
        share = full[sum(counts[:i]):sum(counts[:i + 1])]
        assert_equal(hvd.reducescatter(rank_tensor(me, [rows, 2], dtype), name="ps.rs." + tag,
                                       op=hvd.Sum, process_set=mine), share, dtype)
        scattered = hvd.grouped_reducescatter([rank_tensor(me, [rows, 2], dtype)],
                                              name="ps.grs." + tag, op=hvd.Sum, process_set=mine)
        assert_equal(scattered[0], share, dtype)
    hvd.barrier(process_set=mine)


def test_non_members_and_unregistered_sets_are_refused(sets):
    _, other = sets
    t = torch.ones(2 * other.size())
    calls = [lambda: hvd.allreduce(t, process_set=other),
             lambda: hvd.allreduce_(t, process_set=other),
             lambda: hvd.grouped_allreduce([t], process_set=other),
             lambda: hvd.allgather(t, process_set=other),
             lambda: hvd.broadcast(t, other.ranks[0], process_set=other),
             lambda: hvd.alltoall(t, process_set=other),
             lambda: hvd.reducescatter(t, process_set=other),
             lambda: hvd.barrier(process_set=other)]
    for call in calls:
        with pytest.raises(hvd.InvalidArgumentError, match="not a member"):
            call()
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(t, process_set=hvd.ProcessSet([0]))
    with pytest.raises(TypeError, match="ProcessSet"):
        hvd.allreduce(t, process_set=[0])


def test_add_and_remove():
    n = hvd.size()
    first = hvd.add_process_set([n - 1])
    assert first.ranks == [n - 1] and first.process_set_id > 0
    assert first.included() == (hvd.rank() == n - 1)
    # Every rank makes the same calls, so every rank gets the same error.
    with pytest.raises(hvd.InvalidArgumentError, match="already exists"):
        hvd.add_process_set([n - 1])
    with pytest.raises(hvd.InvalidArgumentError, match="already exists"):
        hvd.add_process_set(range(n))  # the global set
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.add_process_set([n])
    with pytest.raises(ValueError, match="already registered"):
        hvd.add_process_set(first)
    if first.included():
        own = rank_tensor(hvd.rank(), [3])
        torch.testing.assert_close(hvd.allreduce(own, process_set=first, name="alone"), own)

    old_id = first.process_set_id
    assert hvd.remove_process_set(first) is True
    assert first.process_set_id is None and first.included() is None
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(torch.ones(1), process_set=first)
    assert hvd.remove_process_set(hvd.global_process_set) is False
    assert hvd.add_process_set(first) is first  # added again, under a new id
    assert first.process_set_id > old_id
    assert hvd.remove_process_set(first)


def test_sets_at_init():
    n = hvd.size()
    evens, odds = parity_ranks()
    even, odd = hvd.ProcessSet(evens), hvd.ProcessSet(odds)
    hvd.shutdown()
    hvd.init(process_sets=[even, hvd.global_process_set, odd])
    try:
        assert (even.process_set_id, odd.process_set_id) == (1, 2)
        mine, _ = mine_and_other(even, odd)
        result = hvd.allreduce(torch.ones(2), name="at_init", op=hvd.Sum, process_set=mine)
        assert result.tolist() == [float(mine.size())] * 2
        with pytest.raises(ValueError, match="already initialized"):
            hvd.init(process_sets=[hvd.ProcessSet([0])])
    finally:
        hvd.shutdown()
    # Sets belong to one run: shutdown() unregisters them.
    assert even.process_set_id is None and odd.process_set_id is None
    hvd.init(process_sets="dynamic")
    with pytest.raises(ValueError, match="not registered"):
        hvd.allreduce(torch.ones(2), process_set=even)
    hvd.shutdown()
    with pytest.raises(hvd.InvalidArgumentError, match="already exists"):
        hvd.init(process_sets=[hvd.ProcessSet(range(n))])  # the global set
    assert not hvd.is_initialized()
    hvd.init()


def test_gradients_on_a_set(sets):
    # Horovod's backward passes (see test_torch_autograd.py), over the set.
    mine, _ = sets
    members, k, j = mine.ranks, mine.size(), mine.rank()
    stacked = lambda ws, i=0: torch.stack([w[i] for w in ws])  # noqa: E731
    check_gradient(lambda r, i: rank_tensor(r, [3]),
                   lambda xs: hvd.allreduce(xs[0], name="ps.g.avg", process_set=mine),
                   lambda all_xs: [torch.stack([xs[0] for xs in all_xs]).mean(0)] * k,
                   lambda ws: [stacked(ws).mean(0)], members=members)
    for op in (hvd.Max, hvd.Product):
        reduce = torch.amax if op == hvd.Max else torch.prod
        check_gradient(lambda r, i: rank_tensor(r, [3]),
                       lambda xs: hvd.allreduce(xs[0], name="ps.g.{}".format(op), op=op,
                                                process_set=mine),
                       lambda all_xs: [reduce(torch.stack([xs[0] for xs in all_xs]), 0)] * k,
                       lambda ws: [reduce(stacked(ws), 0)], members=members)
    offset = sum(r + 1 for r in members[:j])
    check_gradient(lambda r, i: rank_tensor(r, [r + 1, 2]),
                   lambda xs: hvd.allgather(xs[0], name="ps.g.ag", process_set=mine),
                   lambda all_xs: [torch.cat([xs[0] for xs in all_xs])] * k,
                   lambda ws: [stacked(ws).mean(0)[offset:offset + hvd.rank() + 1]],
                   members=members)
    root = members[-1]
    check_gradient(lambda r, i: rank_tensor(r, [4]),
                   lambda xs: hvd.broadcast(xs[0], root, name="ps.g.bc", process_set=mine),
                   lambda all_xs: [all_xs[-1][0] * 1] * k,
                   lambda ws: [stacked(ws).mean(0) * (hvd.rank() == root)], members=members)
    check_gradient(lambda r, i: rank_tensor(r, [2 * k, 2]),
                   lambda xs: hvd.alltoall(xs[0], name="ps.g.a2a", process_set=mine),
                   lambda all_xs: [torch.cat([xs[0][2 * m:2 * m + 2] for xs in all_xs])
                                   for m in range(k)],
                   lambda ws: [torch.cat([w[0][2 * j:2 * j + 2] for w in ws])], members=members)
    rows = 2 * k + 1
    counts = reducescatter_rows(rows, k)

    def scattered(all_xs):
        full = torch.stack([xs[0] for xs in all_xs]).mean(0)
        return [full[sum(counts[:m]):sum(counts[:m + 1])] for m in range(k)]
    check_gradient(lambda r, i: rank_tensor(r, [rows, 2]),
                   lambda xs: hvd.reducescatter(xs[0], name="ps.g.rs", process_set=mine),
                   scattered, lambda ws: [torch.cat([w[0] for w in ws])], members=members)


def test_distributed_optimizer_on_a_set(sets):
    # Each set trains its own copy: gradients are averaged over its members
    # only. On the other set's optimizer this rank is not a member, so its
    # step() is the plain local one.
    mine, other = sets
    model, reference = make_model(), make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters(),
                                         process_set=mine)
    local = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    outsider, alone = make_model(), make_model()
    outside = hvd.DistributedOptimizer(torch.optim.SGD(outsider.parameters(), lr=0.1),
                                       named_parameters=outsider.named_parameters(),
                                       process_set=other)
    alone_opt = torch.optim.SGD(alone.parameters(), lr=0.1)
    loss_fn = torch.nn.MSELoss()
    for step in range(3):
        for opt in (optimizer, local, outside, alone_opt):
            opt.zero_grad()
        loss_fn(model(batch(step, hvd.rank())[0]), batch(step, hvd.rank())[1]).backward()
        x, y = batch_of(mine.ranks, step)
        loss_fn(reference(x), y).backward()
        for m in (outsider, alone):
            loss_fn(m(batch(step, hvd.rank())[0]), batch(step, hvd.rank())[1]).backward()
        for opt in (optimizer, local, outside, alone_opt):
            opt.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)
        gathered = hvd.allgather(p.detach().unsqueeze(0), name="ps.same." + name,
                                 process_set=mine)
        assert all(torch.equal(g, p.detach()) for g in gathered), name
    for p, q in zip(outsider.parameters(), alone.parameters()):
        assert torch.equal(p.detach(), q.detach())
    with pytest.raises(ValueError, match="not registered"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 process_set=hvd.ProcessSet([0]))


def test_broadcast_helpers_on_a_set(sets):
    mine, _ = sets
    root, me = mine.ranks[-1], hvd.rank()
    model = torch.nn.Linear(3, 2)
    torch.nn.init.constant_(model.weight, float(me))
    hvd.broadcast_parameters(model.state_dict(), root_rank=root, process_set=mine)
    assert torch.equal(model.weight, torch.full([2, 3], float(root)))

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1 + me, momentum=0.9)
    if me == root:
        model(torch.ones(1, 3)).sum().backward()
        optimizer.step()
    hvd.broadcast_optimizer_state(optimizer, root_rank=root, process_set=mine)
    assert optimizer.param_groups[0]["lr"] == 0.1 + root
    momentum = optimizer.state[model.weight]["momentum_buffer"]
    gathered = hvd.allgather(momentum.unsqueeze(0), name="ps.momentum", process_set=mine)
    assert all(torch.equal(g, momentum) for g in gathered)

    assert hvd.broadcast_object({"from": me}, root_rank=root, process_set=mine) == {"from": root}
    assert hvd.allgather_object(me * 10, process_set=mine) == [r * 10 for r in mine.ranks]
