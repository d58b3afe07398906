"""Helpers for the tests: each rank's inputs are a function of the rank, so
every rank can also compute what all ranks hold and check its result (and
its gradients) against plain PyTorch on one process."""
import copy

import torch

import horovodcpp.torch as hvd

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64, torch.bool]
FLOAT_DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
OPS = [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product]


def rank_tensor(r, shape, dtype=torch.float64, seed=0):
    """Rank r's deterministic tensor: small integers for integer dtypes (so
    sums and products of a few ranks do not overflow), random bits for bool,
    and values in [-2, 2) for floats."""
    g = torch.Generator().manual_seed(1000 * seed + r)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if not dtype.is_floating_point:
        low = 0 if dtype == torch.uint8 else -3
        return torch.randint(low, 4, shape, generator=g).to(dtype)
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)


def scaled_like_horovod(tensor, factor):
    """tensor * factor as Horovod's ScaleBuffer computes it on the CPU:
    integers in float64, truncated toward zero; float16 (and bfloat16) in
    float32, the factor rounded to float32; float64 in float64."""
    if not tensor.dtype.is_floating_point:
        return (tensor.double() * factor).trunc().to(tensor.dtype)
    if tensor.dtype == torch.float64:
        return tensor * factor
    return (tensor.float() * torch.tensor(factor, dtype=torch.float32)).to(tensor.dtype)


def reduce_reference(tensors, op, dtype):
    """`op` over the ranks' `tensors` as the core reduces them (integer
    Average: the sum times 1 / size in float64, truncated, as Horovod;
    bool Sum/Max are OR, Min/Product AND)."""
    stacked = torch.stack(tensors)
    if dtype == torch.bool:
        return stacked.any(0) if op in (hvd.Sum, hvd.Max) else stacked.all(0)
    if not dtype.is_floating_point:
        wide = stacked.long()
        result = {hvd.Sum: lambda: wide.sum(0),
                  hvd.Average: lambda: scaled_like_horovod(wide.sum(0), 1.0 / len(tensors)),
                  hvd.Min: lambda: wide.amin(0), hvd.Max: lambda: wide.amax(0),
                  hvd.Product: lambda: wide.prod(0)}[op]()
        return result.to(dtype)
    wide = stacked.double()
    result = {hvd.Sum: lambda: wide.sum(0), hvd.Average: lambda: wide.mean(0),
              hvd.Min: lambda: wide.amin(0), hvd.Max: lambda: wide.amax(0),
              hvd.Product: lambda: wide.prod(0)}[op]()
    return result.to(dtype)


def every_rank(fn):
    return [fn(r) for r in range(hvd.size())]


def reducescatter_rows(rows, size):
    """Rows of each rank in a reducescatter (the first rows % size get one more)."""
    return [rows // size + (1 if r < rows % size else 0) for r in range(size)]


def assert_equal(actual, expected, dtype):
    if dtype.is_floating_point:
        tol = {torch.float16: 1e-2, torch.bfloat16: 2e-2}.get(dtype, 1e-6)
        torch.testing.assert_close(actual.double(), expected.double(), rtol=tol, atol=tol)
    else:
        assert actual.dtype == expected.dtype
        assert torch.equal(actual, expected), (actual, expected)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def check_gradient(make_input, distributed, reference, grads, count=1, members=None):
    """Checks outputs and input gradients of a differentiable collective.

    make_input(r, i): input i of rank r (float64); distributed(inputs) runs
    the collective here; reference(inputs_of_every_rank) returns every
    rank's outputs computed locally. Each rank r back-propagates weights_r
    (a gradient for each of its outputs); grads(weights_of_every_rank)
    returns this rank's expected input gradients: Horovod's backward
    formulas (horovod/torch/mpi_ops.py) are the spec. members: the global
    ranks taking part (a process set's ranks), in set order; default every
    rank.
    """
    members = list(range(hvd.size())) if members is None else list(members)
    me = hvd.rank()

    def weights(r, outputs):
        return [rank_tensor(r, o.shape, seed=7 + i) for i, o in enumerate(outputs)]

    inputs = [make_input(me, i).requires_grad_() for i in range(count)]
    outputs = _as_list(distributed(inputs))
    sum((o * w).sum() for o, w in zip(outputs, weights(me, outputs))).backward()

    all_outputs = [_as_list(o) for o in reference([[make_input(r, i) for i in range(count)]
                                                   for r in members])]
    mine = members.index(me)
    for got, want in zip(outputs, all_outputs[mine]):
        torch.testing.assert_close(got.detach(), want)
    expected = grads([weights(r, outs) for r, outs in zip(members, all_outputs)])
    for got, want in zip(inputs, _as_list(expected)):
        torch.testing.assert_close(got.grad, want)


def make_model():
    """The small model the training tests train (the same on every rank)."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))


def batch(step, r, micro=0, rows=4):
    """Rank r's rows of the global batch of `step` (and micro-batch)."""
    x = rank_tensor(r, [rows, 6], torch.float32, seed=100 * step + micro)
    return x, x.sum(1, keepdim=True).sin()


def batch_of(ranks, step, micro=0):
    """The batches of `ranks` together: what one process trains on to match
    an average of their gradients (equal batch sizes, mean losses)."""
    xs, ys = zip(*[batch(step, r, micro) for r in ranks])
    return torch.cat(xs), torch.cat(ys)


def check_sync_batch_norm(device="cpu"):
    """SyncBatchNorm (on `device`) against BatchNorm2d on the whole batch
    (on the CPU): outputs' gradients, affine gradients summed over ranks,
    running statistics, eval mode."""
    torch.manual_seed(0)
    sync = hvd.SyncBatchNorm(3, momentum=0.5)
    local = torch.nn.BatchNorm2d(3, momentum=0.5)
    with torch.no_grad():
        sync.weight.uniform_()
        sync.bias.uniform_()
    local.load_state_dict(copy.deepcopy(sync.state_dict()))
    sync.to(device)
    make = lambda r: rank_tensor(r, [r + 2, 3, 2, 2], torch.float32) * 3 + r  # noqa: E731
    weight = lambda r: rank_tensor(r, [r + 2, 3, 2, 2], torch.float32, seed=5)  # noqa: E731

    x = make(hvd.rank()).to(device).requires_grad_()
    (sync(x) * weight(hvd.rank()).to(device)).sum().backward()
    xs = [make(r).requires_grad_() for r in range(hvd.size())]
    out = local(torch.cat(xs))
    (out * torch.cat(every_rank(weight))).sum().backward()

    torch.testing.assert_close(x.grad.cpu(), xs[hvd.rank()].grad, atol=1e-5, rtol=1e-5)
    for name in ("weight", "bias"):
        total = hvd.allreduce(getattr(sync, name).grad, op=hvd.Sum, name="sbn." + name)
        torch.testing.assert_close(total.cpu(), getattr(local, name).grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(sync.running_mean.cpu(), local.running_mean)
    torch.testing.assert_close(sync.running_var.cpu(), local.running_var)
    sync.eval()
    local.eval()
    torch.testing.assert_close(sync(make(0).to(device)).cpu(), local(make(0)))


def check_join_with_uneven_batches(device="cpu"):
    """DistributedOptimizer on a model on `device` where rank r trains on
    2 + r batches, then joins. While some ranks have joined, they add zero
    gradients and Average divides by every rank (as Horovod), so the last
    rank's model is the one a single process gets by training, at each
    step, on the batches of the ranks still training with the loss scaled
    by their share of the ranks. Its parameters are then broadcast to every
    rank."""
    # GPU kernels round differently from the CPU reference.
    tolerance = dict(atol=1e-5, rtol=1e-5) if torch.device(device).type == "cpu" else dict(
        atol=1e-4, rtol=1e-4)
    n, me = hvd.size(), hvd.rank()
    steps = [2 + r for r in range(n)]
    model, reference = make_model().to(device), make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    local = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    for step in range(steps[me]):
        optimizer.zero_grad()
        x, y = batch(step, me)
        loss_fn(model(x.to(device)), y.to(device)).backward()
        optimizer.step()
    last = hvd.join()
    assert last == n - 1

    for step in range(max(steps)):
        local.zero_grad()
        training = [r for r in range(n) if step < steps[r]]
        x, y = batch_of(training, step)
        (loss_fn(reference(x), y) * len(training) / n).backward()
        local.step()
    if me == last:
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.detach().cpu(), q.detach(), msg=name, **tolerance)

    hvd.broadcast_parameters(model.state_dict(), root_rank=last)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach().cpu(), q.detach(), msg=name, **tolerance)
        gathered = hvd.allgather(p.detach().cpu().unsqueeze(0), name="join.same." + name)
        assert all(torch.equal(g, p.detach().cpu()) for g in gathered), name
