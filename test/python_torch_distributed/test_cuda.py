"""The horovodcpp group's collectives on CUDA tensors (NCCL underneath, or
staged through host memory with HOROVODCPP_GPU_OPERATIONS=gloo) against
values each rank computes on the CPU, the async form's ordering on the
current stream, and DDP of a CUDA model against DDP of the same model on
the CPU over the Gloo group. Skipped without a CUDA device or a build with
CUDA; scripts/gpu_tests.sh runs it on a GPU machine."""
import os

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import horovodcpp.torch as hvd

from test_collectives import close, every_rank, rank_tensor
from test_training import assert_same, both, loss_of, make_model, params_of

# scripts/gpu_tests.sh sets this: there, skipping would hide a failure.
if os.environ.get("HOROVODCPP_TEST_REQUIRE_GPU") and not (torch.cuda.is_available()
                                                          and hvd.cuda_built()):
    raise RuntimeError("HOROVODCPP_TEST_REQUIRE_GPU is set but torch.cuda.is_available() is {} "
                       "and hvd.cuda_built() is {}".format(torch.cuda.is_available(),
                                                                   hvd.cuda_built()))

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA device (torch.cuda.is_available() is False)"),
    pytest.mark.skipif(not hvd.cuda_built(), reason="horovodcpp was built without CUDA"),
]


def gpu():
    """This rank's GPU (ranks share one when there are fewer GPUs: staged only)."""
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("HOROVOD_LOCAL_RANK", "0")))
    return torch.device("cuda", local % torch.cuda.device_count())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("op", [dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX],
                         ids=["sum", "avg", "max"])
def test_all_reduce(op, dtype):
    if op == dist.ReduceOp.AVG and not dtype.is_floating_point:
        pytest.skip("AVG of integers is refused, as on the CPU")
    inputs = every_rank(lambda r: rank_tensor(r, [5, 3], dtype))
    stacked = torch.stack([i.double() for i in inputs])
    expected = {dist.ReduceOp.SUM: stacked.sum(0), dist.ReduceOp.AVG: stacked.mean(0),
                dist.ReduceOp.MAX: stacked.amax(0)}[op].to(dtype)
    t = inputs[dist.get_rank()].to(gpu())
    dist.all_reduce(t, op=op)
    assert t.device == gpu()
    close(t.cpu(), expected)


def test_every_other_collective():
    n, me = dist.get_world_size(), dist.get_rank()
    t = rank_tensor(me, [6]).to(gpu())
    dist.broadcast(t, src=n - 1)
    close(t.cpu(), rank_tensor(n - 1, [6]))
    mine = rank_tensor(me, [2, 3]).to(gpu())
    gathered = torch.empty(2 * n, 3, device=gpu())
    dist.all_gather_into_tensor(gathered, mine)
    close(gathered.cpu(), torch.cat(every_rank(lambda r: rank_tensor(r, [2, 3]))))
    inputs = every_rank(lambda r: rank_tensor(r, [n * 4]))
    share = torch.empty(4, device=gpu())
    dist.reduce_scatter_tensor(share, inputs[me].to(gpu()))
    close(share.cpu(), torch.stack(inputs).sum(0).reshape(n, 4)[me])
    send = (torch.arange(n * 2, dtype=torch.float32) + 100 * me).to(gpu())
    received = torch.empty(n * 2, device=gpu())
    dist.all_to_all_single(received, send)
    close(received.cpu(), torch.cat([torch.arange(2 * me, 2 * me + 2, dtype=torch.float32) +
                                     100 * r for r in range(n)]))
    dist.barrier()


def test_async_all_reduce_is_ordered_on_the_current_stream():
    """The input is written on a side stream behind a long kernel; the
    collective reads it after that, and what the stream queues after
    work.wait() sees the result, without a host synchronisation."""
    side = torch.cuda.Stream(gpu())
    with torch.cuda.stream(side):
        big = torch.rand(4096, 4096, device=gpu())
        for _ in range(8):
            big = big @ big / 4096
        t = torch.full((1 << 20,), float(dist.get_rank() + 1), device=gpu()) + big[0, 0] * 0
        work = dist.all_reduce(t, async_op=True)
        work.wait()
        after = t * 2
    torch.cuda.current_stream(gpu()).wait_stream(side)
    n = dist.get_world_size()
    assert torch.all(after.cpu() == n * (n + 1))


def test_ddp_of_a_cuda_model_matches_the_cpu(gloo):
    def run(group):
        on_gpu = group is dist.group.WORLD
        model = make_model().to(gpu() if on_gpu else "cpu")
        ddp = DDP(model, process_group=group, device_ids=[gpu().index] if on_gpu else None)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
        for step in range(4):
            optimizer.zero_grad()
            x_device = next(model.parameters()).device
            loss = loss_of(lambda x: ddp(x.to(x_device)).cpu(), step)
            loss.backward()
            optimizer.step()
        return [(n, p.cpu()) for n, p in params_of(model)]
    assert_same(*both(run, gloo), "DDP of a CUDA model", tol=1e-4)
