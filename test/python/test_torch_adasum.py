"""op=hvd.Adasum: allreduce against a NumPy reference of the Adasum
recursion, and DistributedOptimizer(op=hvd.Adasum) against one process
running every rank's optimizer and combining their parameter changes. On a
rank count that is not a power of two (3) every rank gets the error."""
import numpy as np
import pytest
import torch

import horovodcpp.common.basics
import horovodcpp.torch as hvd
from reference import batch, make_model, rank_tensor

# Largest error allowed relative to the result's largest magnitude: 16-bit
# types are reduced in float32 and rounded once; float32 rounds per level.
TOLERANCE = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float32: 1e-5,
             torch.float64: 1e-12}


def power_of_two(n):
    return n & (n - 1) == 0


def adasum_reference(vectors):
    """Adasum of the ranks' arrays (in rank order), pairwise up a binary
    tree, in float64, as Horovod defines it."""
    if len(vectors) == 1:
        return vectors[0]
    half = len(vectors) // 2
    a, b = adasum_reference(vectors[:half]), adasum_reference(vectors[half:])
    dot, aa, bb = np.dot(a.ravel(), b.ravel()), np.dot(a.ravel(), a.ravel()), np.dot(
        b.ravel(), b.ravel())
    ca = 1 - dot / (2 * aa) if aa >= 1e-8 else 1.0
    cb = 1 - dot / (2 * bb) if bb >= 1e-8 else 1.0
    return ca * a + cb * b


def adasum_input(r, shape, dtype, seed):
    """Rank r's tensor: a direction shared by every rank plus the rank's own
    noise (so that Adasum's coefficients are far from 1), with a scale per
    seed (so that per-tensor coefficients matter when tensors are fused)."""
    shared = rank_tensor(0, shape, seed=1000 + seed)
    own = rank_tensor(r, shape, seed=2000 + seed)
    return ((shared + 0.5 * (r + 1) * own) * 2.0 ** (seed % 5 - 2)).to(dtype)


def expected(shape, dtype, seed, prescale=1.0, postscale=1.0, ranks=None):
    ranks = range(hvd.size()) if ranks is None else ranks
    inputs = [adasum_input(r, shape, dtype, seed).double().numpy() * prescale for r in ranks]
    return torch.from_numpy(adasum_reference(inputs) * postscale)


def assert_adasum(actual, want, dtype):
    scale = float(want.abs().max())
    torch.testing.assert_close(actual.double(), want, rtol=0, atol=TOLERANCE[dtype] * scale)


def test_adasum_is_exported():
    assert hvd.Adasum is horovodcpp.common.basics.Adasum
    assert hvd.Adasum not in (hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_allreduce_matches_numpy(dtype):
    shapes = [[1], [3, 5], [1000], [7, 3, 2]]
    for seed, shape in enumerate(shapes):
        tensor = adasum_input(hvd.rank(), shape, dtype, seed)
        if not power_of_two(hvd.size()):
            with pytest.raises(hvd.InvalidArgumentError, match="power-of-two number of ranks"):
                hvd.allreduce(tensor, op=hvd.Adasum, name="adasum.np.{}".format(seed))
            continue
        result = hvd.allreduce(tensor, op=hvd.Adasum, name="adasum.np.{}".format(seed))
        assert result.dtype == dtype and result.shape == tensor.shape
        assert_adasum(result, expected(shape, dtype, seed), dtype)
        # The same bits on every rank.
        gathered = hvd.allgather(result.unsqueeze(0), name="adasum.np.same.{}".format(seed))
        assert all(torch.equal(g, result) for g in gathered)


def test_in_place_async_grouped_and_scaled():
    dtype = torch.float32
    shapes = [[5], [64, 3], [2]]
    tensors = [adasum_input(hvd.rank(), s, dtype, seed) for seed, s in enumerate(shapes)]
    if not power_of_two(hvd.size()):
        with pytest.raises(hvd.InvalidArgumentError, match="power-of-two"):
            hvd.grouped_allreduce(tensors, op=hvd.Adasum, name="adasum.grouped")
        return
    in_place = tensors[0].clone()
    hvd.allreduce_(in_place, op=hvd.Adasum, name="adasum.inplace")
    assert_adasum(in_place, expected(shapes[0], dtype, 0), dtype)
    handle = hvd.allreduce_async(tensors[1], op=hvd.Adasum, name="adasum.async",
                                 prescale_factor=0.5, postscale_factor=4.0)
    assert_adasum(hvd.synchronize(handle), expected(shapes[1], dtype, 1, 0.5, 4.0), dtype)
    # One fused buffer, a coefficient per tensor.
    results = hvd.grouped_allreduce(tensors, op=hvd.Adasum, name="adasum.grouped")
    for seed, (shape, result) in enumerate(zip(shapes, results)):
        assert_adasum(result, expected(shape, dtype, seed), dtype)


def test_integer_tensors_are_rejected():
    with pytest.raises(hvd.InvalidArgumentError, match="floating-point"):
        hvd.allreduce(torch.ones(4, dtype=torch.int32), op=hvd.Adasum, name="adasum.int")


def test_backward_is_horovods():
    """As in Horovod, backward reduces the incoming gradient with the same op
    (Adasum of the gradients; not the gradient of Adasum)."""
    x = adasum_input(hvd.rank(), [4], torch.float64, 0).requires_grad_()
    if not power_of_two(hvd.size()):
        with pytest.raises(hvd.InvalidArgumentError, match="power-of-two"):
            hvd.allreduce(x, op=hvd.Adasum, name="adasum.grad")
        return
    y = hvd.allreduce(x, op=hvd.Adasum, name="adasum.grad")
    (y * adasum_input(hvd.rank(), [4], torch.float64, 3)).sum().backward()
    assert_adasum(x.grad, expected([4], torch.float64, 3), torch.float64)


def test_joined_ranks_are_passed_over():
    """A joined rank adds zeros, which Adasum passes over (the last rank joins
    at once; the others' result is the recursion with zeros in its place)."""
    if hvd.size() < 2 or not power_of_two(hvd.size()):
        return
    last = hvd.size() - 1
    if hvd.rank() != last:
        tensor = adasum_input(hvd.rank(), [6], torch.float64, 4)
        result = hvd.allreduce(tensor, op=hvd.Adasum, name="adasum.joined")
        inputs = [adasum_input(r, [6], torch.float64, 4).numpy() for r in range(last)]
        want = torch.from_numpy(adasum_reference(inputs + [np.zeros(6)]))
        assert_adasum(result, want, torch.float64)
    hvd.join()


def simulate(ranks, steps, make_optimizer, passes=1):
    """What DistributedOptimizer(op=Adasum) computes, in one process: each
    of `ranks` steps its own optimizer (with its own state) from the common
    parameters on its own batches; the parameters then move by the Adasum
    of the ranks' changes."""
    models = {r: make_model() for r in ranks}
    optimizers = {r: make_optimizer(models[r].parameters()) for r in ranks}
    loss_fn = torch.nn.MSELoss()
    for step in range(steps):
        before = [p.detach().clone() for p in models[ranks[0]].parameters()]
        deltas = []
        for r in ranks:
            optimizers[r].zero_grad()
            for micro in range(passes):
                x, y = batch(step, r, micro)
                loss_fn(models[r](x), y).backward()
            optimizers[r].step()
            deltas.append([(p.detach() - b).double().numpy()
                           for p, b in zip(models[r].parameters(), before)])
        with torch.no_grad():
            for i, b in enumerate(before):
                combined = adasum_reference([d[i] for d in deltas])
                new = b + torch.from_numpy(combined).to(b.dtype)
                for r in ranks:
                    list(models[r].parameters())[i].copy_(new)
    return models[ranks[0]]


def train(steps, make_optimizer, passes=1, process_set=hvd.global_process_set):
    model = make_model()
    optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=passes, op=hvd.Adasum,
                                         process_set=process_set)
    loss_fn = torch.nn.MSELoss()
    for step in range(steps):
        optimizer.zero_grad()
        for micro in range(passes):
            x, y = batch(step, hvd.rank(), micro)
            loss_fn(model(x), y).backward()
        optimizer.step()
    return model, optimizer


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


@pytest.mark.parametrize("make_optimizer, passes", [(sgd, 1), (adam, 1), (sgd, 2)])
def test_distributed_optimizer_matches_simulation(make_optimizer, passes):
    if not power_of_two(hvd.size()):
        # Every allreduce fails; step() undoes the local steps and raises.
        model = make_model()
        optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                             named_parameters=model.named_parameters(),
                                             op=hvd.Adasum)
        x, y = batch(0, hvd.rank())
        torch.nn.MSELoss()(model(x), y).backward()
        with pytest.raises(hvd.InvalidArgumentError, match="power-of-two"):
            optimizer.step()
        for p, q in zip(model.parameters(), make_model().parameters()):
            assert torch.equal(p, q)
        return
    model, optimizer = train(3, make_optimizer, passes)
    reference = simulate(list(range(hvd.size())), 3, make_optimizer, passes)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)
    optimizer.synchronize()  # a no-op, as in Horovod
    with pytest.raises(AssertionError, match="not supported"):
        with optimizer.skip_synchronize():
            pass


def test_distributed_optimizer_on_a_set():
    """The set's ranks (0 and 1; on 2 ranks just 0, where Adasum is the
    identity) combine with Adasum; the others step alone."""
    members = [0, 1] if hvd.size() > 2 else [0]
    with pytest.raises(ValueError, match="not registered"):
        train(1, sgd, process_set=hvd.ProcessSet(members))
    subset = hvd.add_process_set(members)
    try:
        model, _ = train(2, sgd, process_set=subset)
    finally:
        hvd.remove_process_set(subset)
    ranks = members if hvd.rank() in members else [hvd.rank()]
    reference = simulate(ranks, 2, sgd)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)
