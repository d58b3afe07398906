"""broadcast_optimizer_state where a rank has no optimizer state yet, with
every compressor and a stateful optimizer: resuming when only rank 0 loaded
the checkpoint, and a new elastic worker syncing (TorchState.sync). After
it every rank holds rank 0's optimizer state and compressor state, and
training goes on with identical parameters; with the casts it continues
exactly as training that was never interrupted."""
import copy

import pytest
import torch

import horovodcpp.torch as hvd
from reference import batch, make_model

COMPRESSORS = {
    "none": lambda: hvd.Compression.none,
    "fp16": lambda: hvd.Compression.fp16,
    "bf16": lambda: hvd.Compression.bf16,
    "twobit": lambda: hvd.Compression.twobit(0.01),
    "powersgd": lambda: hvd.Compression.powersgd(1, start_powerSGD_iter=1),
}
OPTIMIZERS = {
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


def fresh(compressor_name, optimizer_name):
    """A new model, DistributedOptimizer and compressor: what a restarted
    job or a new worker starts from (no optimizer state)."""
    model = make_model()
    compression = COMPRESSORS[compressor_name]()
    optimizer = hvd.DistributedOptimizer(OPTIMIZERS[optimizer_name](model.parameters()),
                                         named_parameters=model.named_parameters(),
                                         compression=compression)
    return model, optimizer, compression


def train(model, optimizer, steps, first_step=0):
    for step in range(first_step, first_step + steps):
        optimizer.zero_grad()
        x, y = batch(step, hvd.rank())
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def assert_same_on_every_rank(value, name):
    """Every rank's `value` (a tensor or a picklable object) equals rank 0's."""
    if torch.is_tensor(value):
        root = hvd.broadcast(value, root_rank=0, name="same." + name)
        assert torch.equal(root, value), name
    else:
        assert hvd.broadcast_object(value, root_rank=0, name="same." + name) == value, name


def assert_state_is_roots(model, optimizer, compression):
    state = optimizer.state_dict()["state"]
    assert sorted(state) == list(range(len(list(model.parameters())))), "state of every parameter"
    for index, fields in sorted(state.items()):
        for key, value in sorted(fields.items()):
            assert_same_on_every_rank(value, "opt.{}.{}".format(index, key))
    if hasattr(compression, "state_dict"):
        shared = {key: {f: v for f, v in fields.items() if f != "residual" and f != "error"}
                  for key, fields in compression.state_dict().items()}
        for key, fields in sorted(shared.items()):
            for field, value in sorted(fields.items()):
                assert_same_on_every_rank(value, "compression.{}.{}".format(key, field))


def assert_parameters_identical(model):
    for name, p in model.named_parameters():
        assert_same_on_every_rank(p.detach(), "param." + name)


def checkpoint_resume(compressor_name, optimizer_name):
    """Trains 3 steps; rank 0 keeps a checkpoint; every rank restarts from
    scratch, only rank 0 loads the checkpoint, and broadcast_parameters +
    broadcast_optimizer_state bring the others up."""
    model, optimizer, compression = fresh(compressor_name, optimizer_name)
    train(model, optimizer, 3)
    saved = copy.deepcopy((model.state_dict(), optimizer.state_dict(),
                           getattr(compression, "state_dict", dict)()))
    model, optimizer, compression = fresh(compressor_name, optimizer_name)
    if hvd.rank() == 0:
        model.load_state_dict(saved[0])
        optimizer.load_state_dict(saved[1])
        if hasattr(compression, "load_state_dict"):
            compression.load_state_dict(saved[2])
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    return model, optimizer, compression


def elastic_join(compressor_name, optimizer_name):
    """Trains 3 steps; then every rank but 0 is a new worker (a fresh model
    and optimizer) and TorchState.sync() runs, as after an elastic reset."""
    model, optimizer, compression = fresh(compressor_name, optimizer_name)
    train(model, optimizer, 3)
    if hvd.rank() != 0:
        torch.manual_seed(100 + hvd.rank())  # a new worker's parameters differ
        model, optimizer, compression = fresh(compressor_name, optimizer_name)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
    state = hvd.elastic.TorchState(model, optimizer)
    state.sync()
    return model, optimizer, compression


@pytest.mark.parametrize("scenario", [checkpoint_resume, elastic_join],
                         ids=["checkpoint_resume", "elastic_join"])
@pytest.mark.parametrize("optimizer_name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("compressor_name", sorted(COMPRESSORS))
def test_broadcast_to_a_rank_without_state(compressor_name, optimizer_name, scenario):
    if hvd.size() == 1:
        pytest.skip("needs a second rank that has no state")
    model, optimizer, compression = scenario(compressor_name, optimizer_name)
    assert_state_is_roots(model, optimizer, compression)
    assert_parameters_identical(model)
    train(model, optimizer, 2, first_step=3)
    assert_parameters_identical(model)
    if compressor_name in ("none", "fp16", "bf16"):
        # Stateless transfer: the same as never stopping.
        uninterrupted, uninterrupted_optimizer, _ = fresh(compressor_name, optimizer_name)
        train(uninterrupted, uninterrupted_optimizer, 5)
        for (name, p), q in zip(model.named_parameters(), uninterrupted.parameters()):
            assert torch.equal(p.detach(), q.detach()), name
