"""Compression.twobit and Compression.powersgd: the encoders against a NumPy
reference, their reductions over the ranks (error feedback carried over
steps) against the same reference computed from every rank's inputs, the
DistributedOptimizer paths (groups, backward_passes_per_step, process
sets, broadcast_optimizer_state, checkpoints) and bad input failing on
every rank."""
import numpy as np
import pytest
import torch

import horovodcpp.torch as hvd
from horovodcpp.torch.powersgd import orthogonalize
from horovodcpp.torch.two_bit import decode_sum, decode_sum_with_torch, encode, encode_with_torch
from reference import batch, every_rank, make_model, rank_tensor


def twobit(threshold, min_elements=0):
    """Compression.twobit compressing every tensor, however small."""
    return hvd.Compression.twobit(threshold, min_elements=min_elements)


def twobit_reference(values, threshold):
    """(sent, residual) of MXNet's 2-bit quantization in NumPy."""
    sent = np.where(values >= threshold, threshold,
                    np.where(values <= -threshold, -threshold, 0.0))
    return sent, values - sent


def pack_reference(sent, threshold):
    """The 2-bit codes of `sent` (+t: 1, -t: 2, 0: 0), four per byte from
    the lowest bits, as a bytes object."""
    codes = [1 if v == threshold else 2 if v == -threshold else 0 for v in sent]
    codes += [0] * (-len(codes) % 4)
    return bytes(sum(c << (2 * j) for j, c in enumerate(codes[i:i + 4]))
                 for i in range(0, len(codes), 4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("numel", [1, 4, 7, 1001])
def test_twobit_codec_matches_numpy(numel, dtype):
    """The core's one-pass codec (CPU) and the torch one (CUDA) alike."""
    gradient = rank_tensor(hvd.rank(), [numel], dtype, seed=numel)
    residual = rank_tensor(hvd.rank(), [numel], dtype, seed=numel + 1) * 0.2
    values = gradient.numpy() * 0.5 + residual.numpy()
    sent, expected_residual = twobit_reference(values, 0.5)
    expected_codes = pack_reference(sent, 0.5)

    codes = torch.empty((numel + 3) // 4, dtype=torch.uint8)
    kept = encode(gradient, residual.clone(), 0.5, 0.5, codes)
    assert bytes(codes.numpy()) == expected_codes
    np.testing.assert_allclose(kept.numpy(), expected_residual, atol=1e-6)
    packed, kept = encode_with_torch(torch.from_numpy(values), 0.5)
    assert bytes(packed.numpy()) == expected_codes
    np.testing.assert_allclose(kept.numpy(), expected_residual, atol=1e-6)
    first = torch.empty_like(codes)  # no residual yet: zeros
    encode(gradient, None, 0.5, 1.0, first)
    assert bytes(first.numpy()) == pack_reference(twobit_reference(gradient.numpy(), 0.5)[0],
                                                  0.5)

    header = torch.zeros(3, 4, dtype=torch.uint8)
    rows = torch.cat([header, torch.stack([codes, first, codes])], 1)
    expected = (2 * sent + twobit_reference(gradient.numpy(), 0.5)[0]) / 0.5
    np.testing.assert_allclose(decode_sum(rows, numel, 0.25, dtype).numpy(), expected * 0.25)
    np.testing.assert_array_equal(decode_sum_with_torch(rows[:, 4:], numel).numpy(), expected)


def test_powersgd_orthogonalize_matches_numpy():
    p = rank_tensor(0, [9, 3], torch.float64)
    q = orthogonalize(p)
    np.testing.assert_allclose(q.t() @ q, np.eye(3), atol=1e-12)
    reference = np.linalg.qr(p.numpy())[0]
    np.testing.assert_allclose(np.abs(q.numpy()), np.abs(reference), atol=1e-12)


def gathered(tensor, name):
    """Every rank's `tensor`, stacked in rank order."""
    return hvd.allgather(tensor.unsqueeze(0), name="gathered." + name)


@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_twobit_reduction_against_reference(op, dtype):
    threshold, shape = 0.25, [5, 7]
    compressor = twobit(threshold)
    residuals = [np.zeros(35) for _ in range(hvd.size())]
    for step in range(4):
        inputs = every_rank(lambda r: rank_tensor(r, shape, dtype, seed=step))
        result = hvd.allreduce(inputs[hvd.rank()], name="twobit", op=op, compression=compressor,
                               prescale_factor=0.5, postscale_factor=3.0)
        total = np.zeros(35)
        for r, x in enumerate(inputs):
            sent, residuals[r] = twobit_reference(
                x.double().numpy().reshape(-1) * 0.5 + residuals[r], threshold)
            total += sent
        expected = total * 3.0 / (hvd.size() if op == hvd.Average else 1)
        assert result.dtype == dtype and list(result.shape) == shape
        np.testing.assert_allclose(result.double().numpy().reshape(-1), expected,
                                   rtol=1e-3 if dtype == torch.float16 else 1e-6)
        kept = compressor.state_dict()["0:twobit"]["residual"]
        tolerance = 1e-3 if dtype == torch.float16 else 1e-6
        np.testing.assert_allclose(kept.double().numpy(), residuals[hvd.rank()], atol=tolerance)


@pytest.mark.parametrize("op", [hvd.Average, hvd.Sum])
def test_powersgd_reduction_against_reference(op):
    """Step 1 from the compressor's initial Q; step 2 recomputed in NumPy
    from step 1's Q and every rank's error."""
    shape, rank = [12, 2, 5], 2
    compressor = hvd.Compression.powersgd(matrix_approximation_rank=rank,
                                          start_powerSGD_iter=0)
    first = rank_tensor(hvd.rank(), shape, torch.float64, seed=1)
    out1 = hvd.allreduce(first, name="psgd", op=op, compression=compressor)
    state = compressor.state_dict()["0:psgd"]
    q1, error = state["q"], state["error"]
    share = out1 / hvd.size() if op == hvd.Sum else out1
    torch.testing.assert_close(error, first.reshape(12, 10) - share.reshape(12, 10))

    errors = gathered(error, "psgd.error").numpy()
    grads = every_rank(lambda r: rank_tensor(r, shape, torch.float64, seed=2).reshape(12, 10))
    matrices = [g.numpy() + e for g, e in zip(grads, errors)]
    combine = np.mean if op == hvd.Average else np.sum
    p = np.linalg.qr(combine([m @ q1.numpy() for m in matrices], axis=0))[0]
    q = combine([m.T @ p for m in matrices], axis=0)
    expected = p @ q.T
    out2 = hvd.allreduce(grads[hvd.rank()].reshape(shape), name="psgd", op=op,
                         compression=compressor)
    np.testing.assert_allclose(out2.reshape(12, 10).numpy(), expected, atol=1e-10)
    assert torch.equal(gathered(out2, "psgd.out")[0], out2)  # the same on every rank
    state = compressor.state_dict()["0:psgd"]
    assert state["step"] == 2
    own_share = expected / hvd.size() if op == hvd.Sum else expected
    np.testing.assert_allclose(state["error"].numpy(), matrices[hvd.rank()] - own_share,
                               atol=1e-10)


def test_powersgd_sends_uncompressed_as_ddp():
    """Before start_powerSGD_iter, vectors, and matrices too small to gain:
    an exact average, with no error kept."""
    compressor = hvd.Compression.powersgd(matrix_approximation_rank=1, start_powerSGD_iter=2)
    for name, shape, steps in (("late", [8, 8], 2), ("vector", [50], 3), ("small", [2, 3], 3)):
        for step in range(steps):
            inputs = every_rank(lambda r: rank_tensor(r, shape, torch.float64, seed=step))
            out = hvd.allreduce(inputs[hvd.rank()], name=name, compression=compressor)
            torch.testing.assert_close(out, torch.stack(inputs).mean(0))
        assert "error" not in compressor.state_dict()["0:" + name]


def test_twobit_sends_small_tensors_exact():
    """Below min_elements: an exact average, with no residual kept."""
    compressor = twobit(0.5, min_elements=100)
    for name, numel in (("small", 99), ("large", 100)):
        inputs = every_rank(lambda r: rank_tensor(r, [numel], torch.float64))
        out = hvd.allreduce(inputs[hvd.rank()], name=name, compression=compressor)
        exact = torch.allclose(out, torch.stack(inputs).mean(0))
        assert exact == (numel < 100) and ("residual" in compressor.state_dict()["0:" + name]) \
            == (numel >= 100)


def train(compression, steps=6, **kwargs):
    """`steps` of DistributedOptimizer(SGD) on make_model() with
    `compression`; the parameters must stay identical on every rank.
    Returns the model and the optimizer."""
    model = make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         compression=compression, **kwargs)
    passes = kwargs.get("backward_passes_per_step", 1)
    for step in range(steps):
        optimizer.zero_grad()
        for micro in range(passes):
            x, y = batch(step, hvd.rank(), micro)
            torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    for name, p in model.named_parameters():
        for other in gathered(p.detach(), "train." + name):
            assert torch.equal(other, p.detach()), name
    return model, optimizer


COMPRESSORS = [lambda: twobit(0.01), lambda: hvd.Compression.powersgd(1, start_powerSGD_iter=1)]


@pytest.mark.parametrize("make", COMPRESSORS)
@pytest.mark.parametrize("options", [{}, {"groups": 1}, {"backward_passes_per_step": 2}])
def test_optimizer_reduces_as_the_compressor(make, options):
    """Each gradient (of a group alike; accumulated over the passes)
    becomes what the compressor's own allreduce gives, step after step."""
    compressor, reference = make(), make()
    model, optimizer = train(compressor, steps=0, **options)
    passes = options.get("backward_passes_per_step", 1)
    for step in range(3):
        optimizer.zero_grad()
        for micro in range(passes):
            x, y = batch(step, hvd.rank(), micro)
            torch.nn.functional.mse_loss(model(x), y).backward()
        local = {n: p.grad.clone() for n, p in model.named_parameters()}
        optimizer.synchronize()
        for name, p in model.named_parameters():
            expected = hvd.allreduce(local[name], name=name, compression=reference)
            assert torch.equal(p.grad, expected), (step, name)
        with optimizer.skip_synchronize():
            optimizer.step()
    assert sorted(compressor.state_dict()) == sorted("0:" + n for n, _ in model.named_parameters())


@pytest.mark.parametrize("make", COMPRESSORS)
def test_training_keeps_ranks_identical(make):
    train(make())


def test_process_set():
    """On the set of this rank's parity (the global set at one rank)."""
    parity = hvd.rank() % 2
    ranks = list(range(parity, hvd.size(), 2))
    sets = [hvd.add_process_set(list(range(p, hvd.size(), 2))) for p in (0, 1)] \
        if hvd.size() > 1 else [hvd.global_process_set]
    try:
        mine = sets[parity]
        compressor = twobit(0.5)
        inputs = [rank_tensor(r, [40], torch.float32) for r in ranks]
        out = hvd.allreduce(inputs[ranks.index(hvd.rank())], name="set", compression=compressor,
                            process_set=mine)
        sent = sum(twobit_reference(x.numpy(), np.float32(0.5))[0] for x in inputs)
        np.testing.assert_allclose(out.numpy(), sent / len(ranks), rtol=1e-6)
        assert list(compressor.state_dict()) == ["{}:set".format(mine.process_set_id)]
    finally:
        for s in sets[:2 if hvd.size() > 1 else 0]:
            hvd.remove_process_set(s)


def test_broadcast_optimizer_state_and_checkpoint():
    # Each rank's first Q differs (seeded by rank) until the broadcast.
    compressor = hvd.Compression.powersgd(1, start_powerSGD_iter=0, random_seed=hvd.rank())
    model = make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         compression=compressor)
    x, y = batch(0, hvd.rank())
    torch.nn.functional.mse_loss(model(x), y).backward()
    optimizer.step()
    before = compressor.state_dict()
    # State only the root has is created elsewhere; state only others have loses Q.
    extra = {"0:extra": {"step": 5, "q": torch.ones(3, 1)}} if hvd.rank() == 0 else \
        {"0:stale": {"step": 1, "q": torch.ones(2, 1)}}
    compressor.load_state_dict(dict(before, **extra))
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    state = compressor.state_dict()
    for key, fields in before.items():
        if "q" in fields:
            root_q = hvd.broadcast(state[key]["q"], root_rank=0, name="q." + key)
            assert torch.equal(root_q, state[key]["q"]), key
        if "error" in fields:  # residuals stay each rank's own
            assert torch.equal(state[key]["error"], fields["error"]), key
    assert state["0:extra"]["step"] == 5 and "q" not in state.get("0:stale", {})

    # An elastic sync (TorchState, as after a reset) does the same.
    compressor.load_state_dict({k: dict(v, q=v["q"] + hvd.rank()) if "q" in v else v
                                for k, v in state.items()})
    hvd.elastic.TorchState(model, optimizer).sync()
    for key, fields in compressor.state_dict().items():
        if "q" in fields:  # the root's, which it had not changed
            assert torch.equal(fields["q"], state[key]["q"]), key

    # A checkpoint of this rank's state continues exactly where it was.
    g = rank_tensor(hvd.rank(), [8, 6], torch.float64)
    hvd.allreduce(g, name="ckpt", compression=compressor)
    restored = hvd.Compression.powersgd(1, start_powerSGD_iter=0)
    restored.load_state_dict(compressor.state_dict())
    g = rank_tensor(hvd.rank(), [8, 6], torch.float64, seed=1)
    assert torch.equal(hvd.allreduce(g, name="ckpt", compression=compressor),
                       hvd.allreduce(g, name="ckpt", compression=restored))


def test_bad_input_fails_on_every_rank():
    compressor = twobit(0.5)
    with pytest.raises(ValueError, match="floating-point.*'ints'"):
        hvd.allreduce(torch.ones(4, dtype=torch.int32), name="ints", compression=compressor)
    with pytest.raises(ValueError, match="instance"):
        hvd.DistributedOptimizer(torch.optim.SGD(make_model().parameters(), lr=0.1),
                                 compression=hvd.Compression.twobit)
    with pytest.raises(ValueError, match="Adasum"):
        hvd.DistributedOptimizer(torch.optim.SGD(make_model().parameters(), lr=0.1),
                                 compression=compressor, op=hvd.Adasum)
    with pytest.raises(ValueError, match="reduces by itself"):
        hvd.reducescatter(torch.ones(4), name="rs", compression=compressor)


def test_ranks_disagreeing_fail_on_every_rank():
    if hvd.size() == 1:
        pytest.skip("needs two ranks")
    x = torch.ones(6, 4)
    compressor = twobit(0.5)
    # Ranks disagreeing on the compressor meet under one name and fail.
    mine = compressor if hvd.rank() == 0 else hvd.Compression.none
    with pytest.raises(hvd.MismatchError, match="allreduce.which"):
        hvd.allreduce(x, name="which", compression=mine)
    with pytest.raises(ValueError, match="threshold of 'threshold'"):
        hvd.allreduce(x, name="threshold",
                      compression=twobit(0.5 + hvd.rank()))
    rank_differs = hvd.Compression.powersgd(1 + hvd.rank(), start_powerSGD_iter=0)
    with pytest.raises(hvd.MismatchError, match="allreduce.rank.*shape"):
        hvd.allreduce(x, name="rank", compression=rank_differs)

    # A kept residual that no longer fits, on rank 0 only.
    kept = twobit(0.5)
    hvd.allreduce(x, name="kept", compression=kept)
    if hvd.rank() == 0:
        kept.load_state_dict({"0:kept": {"residual": torch.zeros(5)}})
        with pytest.raises(ValueError, match="kept residual of 'kept' has shape"):
            hvd.allreduce(x, name="kept", compression=kept)
    else:
        with pytest.raises(hvd.MismatchError, match="allreduce.kept"):
            hvd.allreduce(x, name="kept", compression=kept)
    # The job goes on: the same tensor reduces once the state is reset.
    kept.reset()
    torch.testing.assert_close(hvd.allreduce(x, name="kept", compression=kept),
                               torch.full_like(x, 0.5))
