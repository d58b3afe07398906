"""CUDA tensors through horovodcpp.torch: every op on the GPU (NCCL, or
staged through host memory onto Gloo/MPI with HOROVODCPP_GPU_OPERATIONS),
stream ordering with torch.cuda.current_stream(), results on the tensor's
GPU, DistributedOptimizer on a CUDA model, and join() (the joined ranks
contribute zeros to the CUDA allreduces of the others). Skipped (with the reason)
without a CUDA device or a build with CUDA; scripts/gpu_tests.sh runs it
on a GPU machine."""
import os

import pytest
import torch

import horovodcpp.torch as hvd
from reference import (DTYPES, OPS, assert_equal, batch, batch_of, check_join_with_uneven_batches,
                       check_sync_batch_norm, every_rank, make_model, rank_tensor,
                       reduce_reference, reducescatter_rows)

# scripts/gpu_tests.sh sets this: there, skipping would hide a failure.
if os.environ.get("HOROVODCPP_TEST_REQUIRE_GPU") and not (torch.cuda.is_available()
                                                          and hvd.cuda_built()):
    raise RuntimeError("HOROVODCPP_TEST_REQUIRE_GPU is set but torch.cuda.is_available() is {} "
                       "and horovodcpp.cuda_built() is {}".format(torch.cuda.is_available(),
                                                                   hvd.cuda_built()))

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(),
                       reason="no CUDA device (torch.cuda.is_available() is False)"),
    pytest.mark.skipif(not hvd.cuda_built(), reason="horovodcpp was built without CUDA"),
]


def device():
    """This rank's GPU: ranks share GPUs when there are fewer than ranks
    (only staged operations allow that; NCCL needs one GPU per rank)."""
    return torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())


def on_gpu(tensor):
    return tensor.to(device())


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_allreduce(dtype, op):
    if dtype == torch.bool and op == hvd.Average:
        pytest.skip("bool Average is refused (as for CPU tensors)")
    if dtype == torch.int16 and hvd.nccl_built() and "nccl" in _gpu_operations():
        pytest.skip("int16 has no NCCL type")
    tensor = on_gpu(rank_tensor(hvd.rank(), [3, 5], dtype))
    expected = reduce_reference(every_rank(lambda r: rank_tensor(r, [3, 5], dtype)), op, dtype)
    result = hvd.allreduce(tensor, name="cuda.ar.{}.{}".format(dtype, op), op=op)
    assert result.device == tensor.device
    assert_equal(result.cpu(), expected, dtype)
    hvd.allreduce_(tensor, name="cuda.ar_.{}.{}".format(dtype, op), op=op)
    assert_equal(tensor.cpu(), expected, dtype)


def _gpu_operations():
    return os.environ.get("HOROVODCPP_GPU_OPERATIONS", "nccl" if hvd.nccl_built() else "")


def test_allreduce_waits_for_the_current_stream():
    """The input is written on a side stream (made current) behind a long
    kernel; the collective (out of place, and in place through the core's
    direct call) must read it only after that."""
    side = torch.cuda.Stream(device())
    with torch.cuda.stream(side):
        big = torch.rand(4096, 4096, device=device())
        for _ in range(8):
            big = big @ big / 4096
        tensor = torch.full((1 << 20,), float(hvd.rank() + 1), device=device()) + big[0, 0] * 0
        result = hvd.allreduce(tensor, name="cuda.stream", op=hvd.Sum)
        after = result * 2  # queued on the side stream: ordered after the result
        in_place = torch.full((1 << 20,), float(hvd.rank() + 1), device=device()) + big[0, 0] * 0
        handle = hvd.allreduce_async_(in_place, name="cuda.stream.async_", op=hvd.Sum)
        after_in_place = hvd.synchronize(handle) * 2
    torch.cuda.current_stream(device()).wait_stream(side)
    total = hvd.size() * (hvd.size() + 1) / 2
    assert torch.all(after.cpu() == 2 * total)
    assert torch.all(after_in_place.cpu() == 2 * total)


def test_grouped_allreduce_with_scale_factors():
    tensors = [on_gpu(torch.full((100 + 37 * t,), float(t))) for t in range(12)]
    results = hvd.grouped_allreduce(tensors, name="cuda.group", op=hvd.Average,
                                    prescale_factor=2.0, postscale_factor=0.25)
    for t, r in enumerate(results):
        assert r.is_cuda and torch.all(r.cpu() == t * 0.5), t


def test_broadcast():
    tensor = on_gpu(rank_tensor(hvd.rank(), [4, 3]))
    root = hvd.size() - 1
    hvd.broadcast_(tensor, root, name="cuda.bcast")
    assert torch.equal(tensor.cpu(), rank_tensor(root, [4, 3]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                   torch.bool], ids=str)
def test_allgather_per_rank_sizes(dtype):
    tensor = on_gpu(rank_tensor(hvd.rank(), [hvd.rank() + 1, 3], dtype))
    result = hvd.allgather(tensor, name="cuda.gather.{}".format(dtype))
    assert result.device == tensor.device and result.dtype == dtype
    expected = torch.cat(every_rank(lambda r: rank_tensor(r, [r + 1, 3], dtype)))
    assert_equal(result.cpu(), expected, dtype)


def test_alltoall_with_splits():
    size, me = hvd.size(), hvd.rank()
    splits = [j + 1 for j in range(size)]  # rank j gets j + 1 rows from everyone
    tensor = on_gpu(torch.cat([torch.full((j + 1, 2), 100.0 * me + j) for j in range(size)]))
    output, received = hvd.alltoall(tensor, splits=splits, name="cuda.alltoall")
    assert output.is_cuda
    assert received.tolist() == [me + 1] * size
    expected = torch.cat([torch.full((me + 1, 2), 100.0 * r + me) for r in range(size)])
    assert torch.equal(output.cpu(), expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_reducescatter(dtype):
    rows = 2 * hvd.size() + 1
    tensor = on_gpu(rank_tensor(hvd.rank(), [rows, 3], dtype))
    result = hvd.reducescatter(tensor, name="cuda.rs.{}".format(dtype), op=hvd.Sum)
    assert result.is_cuda
    total = reduce_reference(every_rank(lambda r: rank_tensor(r, [rows, 3], dtype)), hvd.Sum,
                             dtype)
    counts = reducescatter_rows(rows, hvd.size())
    start = sum(counts[:hvd.rank()])
    assert_equal(result.cpu(), total[start:start + counts[hvd.rank()]], dtype)


@pytest.mark.parametrize("hooks", ["as_size", "always"])
def test_distributed_optimizer_on_a_cuda_model(hooks, monkeypatch):
    """Gradients averaged on the GPU: parameters match one process training
    on the whole batch, and agree across ranks. "always": the per-gradient
    hooks of a job of several ranks even at one (HOROVOD_ELASTIC=1), each
    gradient handed to the core's direct call (no DLPack batch call)."""
    if hooks == "always":
        from horovodcpp.torch import core_ops
        monkeypatch.setenv("HOROVOD_ELASTIC", "1")

        def refused(*args, **kwargs):
            raise AssertionError("a CUDA gradient went through the DLPack batch call")
        monkeypatch.setattr(core_ops, "allreduce_async_many_", refused)
    model, reference = make_model().to(device()), make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    local = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    loss_fn = torch.nn.MSELoss()
    for step in range(4):
        optimizer.zero_grad()
        local.zero_grad()
        x, y = batch(step, hvd.rank())
        loss_fn(model(on_gpu(x)), on_gpu(y)).backward()
        x, y = batch_of(every_rank(lambda r: r), step)
        loss_fn(reference(x), y).backward()
        optimizer.step()
        local.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), atol=1e-4, rtol=1e-4, msg=name)
        gathered = hvd.allgather(p.detach().cpu().unsqueeze(0), name="cuda.same." + name)
        for other in gathered:
            assert torch.equal(other, p.detach().cpu()), name


def test_sync_batch_norm_on_cuda():
    """Its statistics cross ranks by a CUDA allgather (at one rank it is
    plain BatchNorm)."""
    check_sync_batch_norm(device())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_join_allreduces_with_zeros_from_the_joined_ranks(dtype):
    # Rank r has r + 1 steps: at step s the ranks r >= s submit, the joined
    # ranks add zeros and Average divides by every rank (as Horovod).
    n, me = hvd.size(), hvd.rank()
    for step in range(me + 1):
        values = [rank_tensor(r, [4, 3], dtype, seed=step) if r >= step
                  else torch.zeros(4, 3, dtype=dtype) for r in range(n)]
        tensor = on_gpu(values[me])
        tag = "cuda.join.{}.{}".format(dtype, step)
        average = hvd.allreduce(tensor, name=tag + ".avg")
        summed = hvd.allreduce(tensor, name=tag + ".sum", op=hvd.Sum)
        assert average.device == tensor.device
        assert_equal(average.cpu(), reduce_reference(values, hvd.Average, dtype), dtype)
        assert_equal(summed.cpu(), reduce_reference(values, hvd.Sum, dtype), dtype)
    assert hvd.join(device=device().index) == n - 1


def test_join_with_distributed_optimizer_on_a_cuda_model():
    check_join_with_uneven_batches(device())


@pytest.mark.parametrize("kind", ["twobit", "powersgd"])
def test_compression_on_cuda_matches_cpu(kind):
    """Compression.twobit (torch encoder on the GPU) and .powersgd: the
    same results as on the CPU, on the tensor's GPU."""
    def make():
        return (hvd.Compression.twobit(0.25, min_elements=0) if kind == "twobit" else
                hvd.Compression.powersgd(2, start_powerSGD_iter=0))
    on_cpu, on_cuda = make(), make()
    for step in range(3):
        x = rank_tensor(hvd.rank(), [16, 9], torch.float32, seed=step)
        expected = hvd.allreduce(x, name="cpu." + kind, compression=on_cpu)
        result = hvd.allreduce(on_gpu(x), name="cuda." + kind, compression=on_cuda)
        assert result.device == device()
        torch.testing.assert_close(result.cpu(), expected, rtol=1e-5, atol=1e-6)
