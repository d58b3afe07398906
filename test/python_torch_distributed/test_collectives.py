"""Every collective of the horovodcpp process group against values each rank
computes locally (rank r's input is a function of r): every reduce op,
dtypes, async forms and their futures, the coalesced forms, groups of a
subset of ranks, point-to-point, and bad input failing with torch's
exceptions and horovodcpp's naming of the ranks."""
import datetime

import pytest
import torch
import torch.distributed as dist

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
          torch.uint8, torch.int8]


def rank_tensor(r, shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(1000 * seed + r)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    low = 0 if dtype == torch.uint8 else -3
    return torch.randint(low, 4, shape, generator=g).to(dtype)


def every_rank(fn, n=None):
    return [fn(r) for r in range(n or dist.get_world_size())]


def close(actual, expected):
    tol = {torch.float16: 1e-2, torch.bfloat16: 3e-2}.get(actual.dtype, 1e-5)
    if actual.dtype.is_floating_point:
        torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol)
    else:
        assert torch.equal(actual, expected), (actual, expected)


REDUCTIONS = {
    dist.ReduceOp.SUM: lambda s: s.sum(0),
    dist.ReduceOp.PRODUCT: lambda s: s.prod(0),
    dist.ReduceOp.MIN: lambda s: s.amin(0),
    dist.ReduceOp.MAX: lambda s: s.amax(0),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(REDUCTIONS), ids=lambda op: str(op).split(".")[-1])
def test_all_reduce(op, dtype):
    inputs = every_rank(lambda r: rank_tensor(r, [5, 3], dtype))
    t = inputs[dist.get_rank()].clone()
    dist.all_reduce(t, op=op)
    expected = REDUCTIONS[op](torch.stack([i.double() if dtype.is_floating_point else i.long()
                                           for i in inputs])).to(dtype)
    close(t, expected)


def test_all_reduce_avg_and_premul_sum():
    inputs = every_rank(lambda r: rank_tensor(r, [7]))
    t = inputs[dist.get_rank()].clone()
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    close(t, torch.stack(inputs).mean(0))
    t = inputs[dist.get_rank()].clone()
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.25))
    close(t, torch.stack(inputs).sum(0) * 0.25)


def test_all_reduce_complex_and_scalar():
    z = torch.complex(torch.ones(3), torch.full((3,), float(dist.get_rank())))
    dist.all_reduce(z)
    n = dist.get_world_size()
    close(torch.view_as_real(z), torch.view_as_real(
        torch.complex(torch.full((3,), float(n)), torch.full((3,), n * (n - 1) / 2.0))))
    s = torch.tensor(float(dist.get_rank()))
    dist.all_reduce(s)
    assert s.item() == n * (n - 1) / 2


def test_bitwise_ops_refused_clearly():
    with pytest.raises(ValueError, match="ReduceOp.BAND is not supported"):
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=dist.ReduceOp.BAND)


def test_async_work_and_future():
    tensors = [torch.full((4,), float(dist.get_rank() + i)) for i in range(5)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future() for w in works[:3]]
    for w in works[3:]:
        assert w.wait()
    n = dist.get_world_size()
    for i, f in enumerate(futures):
        value = f.wait()
        close(value[0], torch.full((4,), float(n * (n - 1) / 2 + n * i)))
    for w in works:
        assert w.is_completed() and w.is_success()
    # A callback chained on the future, as DDP's communication hooks do.
    t = torch.ones(2)
    chained = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    close(chained.wait(), torch.full((2,), 2.0 * n))


def test_many_of_one_kind_in_flight():
    """More collectives of one kind in flight than the name window (16)."""
    tensors = [torch.full((3,), float(i)) for i in range(40)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    for w in works:
        w.wait()
    for i, t in enumerate(tensors):
        close(t, torch.full((3,), float(i * dist.get_world_size())))


def test_all_reduce_coalesced():
    tensors = [rank_tensor(dist.get_rank(), [i + 1]) for i in range(4)]
    expected = [torch.stack(every_rank(lambda r: rank_tensor(r, [i + 1]))).sum(0)
                for i in range(4)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for t in tensors:
            dist.all_reduce(t)
    cm.wait()
    for t, e in zip(tensors, expected):
        close(t, e)


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_from_every_root(dtype):
    for root in range(dist.get_world_size()):
        t = rank_tensor(dist.get_rank(), [6], dtype)
        dist.broadcast(t, src=root)
        close(t, rank_tensor(root, [6], dtype))


def test_reduce_to_every_root():
    inputs = every_rank(lambda r: rank_tensor(r, [4]))
    for root in range(dist.get_world_size()):
        t = inputs[dist.get_rank()].clone()
        dist.reduce(t, dst=root, op=dist.ReduceOp.MAX)
        if dist.get_rank() == root:
            close(t, torch.stack(inputs).amax(0))
        else:
            close(t, inputs[dist.get_rank()])  # untouched


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_all_gather_forms(dtype):
    n, me = dist.get_world_size(), dist.get_rank()
    mine = rank_tensor(me, [2, 3], torch.int32).to(dtype)
    want = every_rank(lambda r: rank_tensor(r, [2, 3], torch.int32).to(dtype))
    out = [torch.empty(2, 3, dtype=dtype) for _ in range(n)]
    dist.all_gather(out, mine)
    for o, w in zip(out, want):
        close(o, w)
    flat = torch.empty(2 * n, 3, dtype=dtype)
    dist.all_gather_into_tensor(flat, mine)
    close(flat, torch.cat(want))
    stacked = torch.empty(n, 2, 3, dtype=dtype)
    dist.all_gather_into_tensor(stacked, mine)
    close(stacked, torch.stack(want))
    outs = [torch.empty(2 * n, 3, dtype=dtype) for _ in range(3)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for o in outs:
            dist.all_gather_into_tensor(o, mine)
    cm.wait()
    for o in outs:
        close(o, torch.cat(want))


def test_all_gather_uneven_shapes():
    n, me = dist.get_world_size(), dist.get_rank()
    out = [torch.empty(r + 1, dtype=torch.float64) for r in range(n)]
    dist.all_gather(out, torch.full((me + 1,), float(me), dtype=torch.float64))
    for r, o in enumerate(out):
        close(o, torch.full((r + 1,), float(r), dtype=torch.float64))


def test_gather_and_scatter_every_root():
    n, me = dist.get_world_size(), dist.get_rank()
    for root in range(n):
        out = [torch.empty(3) for _ in range(n)] if me == root else None
        dist.gather(rank_tensor(me, [3]), out, dst=root)
        if me == root:
            for r, o in enumerate(out):
                close(o, rank_tensor(r, [3]))
        received = torch.empty(2, dtype=torch.int64)
        parts = [torch.full((2,), 10 * root + r, dtype=torch.int64) for r in range(n)] \
            if me == root else None
        dist.scatter(received, parts, src=root)
        close(received, torch.full((2,), 10 * root + me, dtype=torch.int64))


@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX],
                         ids=["sum", "avg", "max"])
def test_reduce_scatter_forms(op):
    n, me = dist.get_world_size(), dist.get_rank()
    inputs = every_rank(lambda r: rank_tensor(r, [n * 4]))
    reduce = {dist.ReduceOp.SUM: lambda s: s.sum(0), dist.ReduceOp.AVG: lambda s: s.mean(0),
              dist.ReduceOp.MAX: lambda s: s.amax(0)}[op]
    expected = reduce(torch.stack(inputs)).reshape(n, 4)[me]
    out = torch.empty(4)
    dist.reduce_scatter_tensor(out, inputs[me].clone(), op=op)
    close(out, expected)
    out = torch.empty(4)
    dist.reduce_scatter(out, list(inputs[me].clone().reshape(n, 4)), op=op)
    close(out, expected)
    outs = [torch.empty(4) for _ in range(2)]
    with dist._coalescing_manager(async_ops=True) as cm:
        for o in outs:
            dist.reduce_scatter_tensor(o, inputs[me].clone(), op=op)
    cm.wait()
    for o in outs:
        close(o, expected)


def test_reduce_scatter_uneven_parts():
    n, me = dist.get_world_size(), dist.get_rank()
    parts = [torch.full((r + 1,), float(me)) for r in range(n)]
    out = torch.empty(me + 1)
    dist.reduce_scatter(out, parts)
    close(out, torch.full((me + 1,), n * (n - 1) / 2.0))


def test_all_to_all_forms():
    n, me = dist.get_world_size(), dist.get_rank()
    send = torch.arange(n * 2, dtype=torch.float32) + 100 * me
    out = torch.empty(n * 2)
    dist.all_to_all_single(out, send)
    close(out, torch.cat([torch.arange(2 * me, 2 * me + 2, dtype=torch.float32) + 100 * r
                          for r in range(n)]))
    # With splits: rank r sends j + 1 rows to rank j.
    send = torch.full((sum(range(1, n + 1)), 2), float(me))
    received = torch.empty(n * (me + 1), 2)
    dist.all_to_all_single(received, send, output_split_sizes=[me + 1] * n,
                           input_split_sizes=[j + 1 for j in range(n)])
    close(received, torch.cat([torch.full((me + 1, 2), float(r)) for r in range(n)]))
    outputs = [torch.empty(r + 1) for r in range(n)]
    dist.all_to_all(outputs, [torch.full((me + 1,), float(10 * me + j)) for j in range(n)])
    for r, o in enumerate(outputs):
        close(o, torch.full((r + 1,), float(10 * r + me)))


def test_barrier_and_monitored_barrier():
    dist.barrier()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=True)


def test_monitored_barrier_names_the_missing_rank():
    if dist.get_world_size() < 2:
        pytest.skip("needs two ranks")
    last = dist.get_world_size() - 1
    if dist.get_rank() != last:
        with pytest.raises(RuntimeError, match="Rank {} failed to pass monitoredBarrier".format(
                last)):
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))
    dist.barrier()
    if dist.get_rank() == last:  # it calls later, and gets rank 0's verdict
        with pytest.raises(RuntimeError, match="Rank {} failed".format(last)):
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=2))


def test_point_to_point():
    n, me = dist.get_world_size(), dist.get_rank()
    if n < 2:
        pytest.skip("needs two ranks")
    right, left = (me + 1) % n, (me - 1) % n
    got = torch.empty(3)
    ops = [dist.P2POp(dist.isend, torch.full((3,), float(me)), right),
           dist.P2POp(dist.irecv, got, left)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    close(got, torch.full((3,), float(left)))
    if me == 0:
        dist.send(torch.arange(4.0), dst=1)
    elif me == 1:
        t = torch.empty(4)
        dist.recv(t, src=0)
        close(t, torch.arange(4.0))


def test_subgroups_are_process_sets():
    n, me = dist.get_world_size(), dist.get_rank()
    evens = dist.new_group([r for r in range(n) if r % 2 == 0])
    odds = dist.new_group([r for r in range(n) if r % 2 == 1]) if n > 1 else None
    mine = evens if me % 2 == 0 else odds
    members = [r for r in range(n) if r % 2 == me % 2]
    t = torch.tensor([float(me)])
    dist.all_reduce(t, group=mine)
    assert t.item() == sum(members)
    assert dist.get_rank(mine) == members.index(me)
    b = torch.tensor([float(me)])
    dist.broadcast(b, src=members[-1], group=mine)
    assert b.item() == members[-1]
    out = [torch.empty(1) for _ in members]
    dist.all_gather(out, torch.tensor([float(me)]), group=mine)
    assert [o.item() for o in out] == members
    # The same ranks again: the same process set.
    again = dist.new_group([r for r in range(n) if r % 2 == 0])
    if me % 2 == 0:
        assert again.process_set.process_set_id == evens.process_set.process_set_id
    # A 2-D device mesh: a group per row and per column.
    if n == 4:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        t = torch.tensor([float(me)])
        dist.all_reduce(t, group=mesh.get_group("tp"))
        assert t.item() == sum(r for r in range(n) if r // 2 == me // 2)


def test_local_synchronization_refused():
    """Only the members would call new_group: a process set cannot be
    registered so (every rank registers it), and every member is told."""
    with pytest.raises(ValueError, match="use_local_synchronization"):
        dist.new_group(list(range(dist.get_world_size())), use_local_synchronization=True)


def test_mismatched_shapes_fail_on_every_rank_naming_them():
    if dist.get_world_size() < 2:
        pytest.skip("needs two ranks")
    t = torch.ones(2 + dist.get_rank())
    with pytest.raises(dist.DistBackendError, match=r"(?s)shape.*rank 0.*rank 1"):
        dist.all_reduce(t)
    d = torch.ones(2, dtype=torch.float32 if dist.get_rank() == 0 else torch.float64)
    with pytest.raises(dist.DistBackendError, match="dtype"):
        dist.all_reduce(d)
    # The group still works.
    t = torch.ones(2)
    dist.all_reduce(t)
    close(t, torch.full((2,), float(dist.get_world_size())))


def test_timeout_raises_instead_of_hanging():
    if dist.get_world_size() < 2:
        pytest.skip("needs two ranks")
    group = dist.new_group(list(range(dist.get_world_size())),
                           timeout=datetime.timedelta(seconds=2))
    if dist.get_rank() == 0:
        with pytest.raises(dist.DistBackendError, match="not complete after 2 s"):
            dist.all_reduce(torch.ones(1), group=group)
    dist.barrier()
    if dist.get_rank() != 0:  # the late ones complete what rank 0 started
        dist.all_reduce(torch.ones(1), group=group)
    dist.barrier()


def test_bad_arguments_refused():
    n = dist.get_world_size()
    with pytest.raises(ValueError, match="contiguous"):
        dist.all_reduce(torch.ones(4, 4).t())
    with pytest.raises(ValueError, match="elements"):
        dist.reduce_scatter_tensor(torch.empty(3), torch.ones(3 * n + 1))
