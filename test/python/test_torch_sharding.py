"""DistributedOptimizer(sharding=1|2) (ZeRO): the same training as the
unsharded DistributedOptimizer, with each rank keeping only its shard of
the optimizer's state (and, at stage 2, of the gradients); its state dicts
(consolidated, one file per rank, re-sharded for another number of ranks,
broadcast from a rank that read a checkpoint, elastic); what it refuses.
Every test checks that the state it trained is sharded: with sharding off
they fail."""
import os
import shutil
import tempfile

import pytest
import torch

import horovodcpp.torch as hvd
from horovodcpp.torch.sharded_state import merge_shards, shard_range
from reference import rank_tensor

OPTIMIZERS = {
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
    "adamw": lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1),
    "sgd_momentum": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
}


class Net(torch.nn.Module):
    """Parameters that do not split evenly (40, 18, 21 elements), a scalar,
    and a layer used only on even steps (no gradient on odd ones)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first = torch.nn.Linear(7, 5)
        self.second = torch.nn.Linear(5, 3)
        self.scale = torch.nn.Parameter(torch.tensor(1.5))
        self.sometimes = torch.nn.Linear(7, 3, bias=False)
        self.double()

    def forward(self, x, step):
        y = self.second(torch.tanh(self.first(x))) * self.scale
        return y + self.sometimes(x) if step % 2 == 0 else y


def make(sharding, optimizer="adam", process_set=hvd.global_process_set, **kwargs):
    model = Net()
    optimizer = hvd.DistributedOptimizer(OPTIMIZERS[optimizer](model.parameters()),
                                         named_parameters=model.named_parameters(),
                                         sharding=sharding, process_set=process_set, **kwargs)
    return model, optimizer


def train(model, optimizer, steps, first=0, passes=1, after_backward=None, rank=None):
    rank = hvd.rank() if rank is None else rank
    for step in range(first, first + steps):
        optimizer.zero_grad()
        for micro in range(passes):
            x = rank_tensor(rank, [4, 7], seed=100 * step + micro)
            model(x, step).pow(2).mean().backward()
        if after_backward:
            after_backward(model, optimizer)
        optimizer.step()


def assert_same_parameters(model, reference, tol=1e-9):
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=tol, atol=tol, msg=name)


def assert_sharded(model, optimizer, size=None, rank=None):
    """This rank's per-element state is exactly its shard of each parameter
    (1/size of the whole, give or take an element)."""
    size = hvd.size() if size is None else size
    rank = hvd.rank() if rank is None else rank
    state = optimizer.state_dict()
    assert (state["sharding"]["size"], state["sharding"]["rank"]) == (size, rank)
    params = list(model.parameters())
    assert state["state"], "no state was trained"
    for index, values in state["state"].items():
        start, end = shard_range(params[index].numel(), size, rank)
        keys = state["sharding"]["per_element"][index]
        assert keys, "no per-element state for parameter {}".format(index)
        for key in keys:
            assert values[key].shape == (end - start,), (index, key)


def assert_same_state(actual, expected, tol=1e-9):
    """Two unsharded state dicts (torch's format) hold the same values."""
    assert sorted(actual["state"]) == sorted(expected["state"])
    for index, values in expected["state"].items():
        assert sorted(actual["state"][index]) == sorted(values), index
        for key, value in values.items():
            got = actual["state"][index][key]
            if torch.is_tensor(value):
                torch.testing.assert_close(got.double(), value.double(), rtol=tol, atol=tol,
                                           msg="{}.{}".format(index, key))
            else:
                assert got == value, (index, key)
    for group, saved in zip(actual["param_groups"], expected["param_groups"]):
        assert group == saved


def shared_directory():
    """A directory every rank sees (rank 0's), removed by cleanup()."""
    return hvd.broadcast_object(tempfile.mkdtemp() if hvd.rank() == 0 else None, 0,
                                name="sharding.dir")


def cleanup(directory):
    hvd.barrier()
    if hvd.rank() == 0:
        shutil.rmtree(directory)


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("stage", [1, 2])
def test_same_training_as_distributed_optimizer(stage, optimizer):
    reference, reference_optimizer = make(0, optimizer)
    train(reference, reference_optimizer, 6)
    model, sharded = make(stage, optimizer)
    train(model, sharded, 6)
    assert_same_parameters(model, reference)
    assert_sharded(model, sharded)
    whole = sharded.consolidate_state_dict(to=None)
    assert_same_state(whole, reference_optimizer.state_dict())


@pytest.mark.parametrize("stage", [1, 2])
def test_passes_groups_and_scheduler(stage):
    """backward_passes_per_step, grouped reductions, two parameter groups
    with their own learning rates, and an LR scheduler acting on them."""
    def build(sharding):
        model = Net()
        params = list(model.parameters())
        optimizer = hvd.DistributedOptimizer(
            torch.optim.Adam([{"params": params[:2]}, {"params": params[2:], "lr": 0.03}],
                             lr=0.01),
            named_parameters=model.named_parameters(), backward_passes_per_step=2,
            groups=[[params[0], params[3]]], sharding=sharding)
        return model, optimizer, torch.optim.lr_scheduler.StepLR(optimizer, 1, gamma=0.5)

    runs = []
    for sharding in (0, stage):
        model, optimizer, scheduler = build(sharding)
        for step in range(4):
            train(model, optimizer, 1, first=step, passes=2)
            scheduler.step()
        runs.append((model, optimizer))
    assert_same_parameters(runs[1][0], runs[0][0])
    assert [g["lr"] for g in runs[1][1].param_groups] == [0.01 / 16, 0.03 / 16]
    assert_sharded(*runs[1])


@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_cast_compression(compression):
    """The casts compress what is reduce-scattered: the same training as
    the unsharded optimizer with the same compression."""
    compressor = getattr(hvd.Compression, compression)
    reference, reference_optimizer = make(0, compression=compressor)
    train(reference, reference_optimizer, 4)
    model, sharded = make(2, compression=compressor)
    train(model, sharded, 4)
    assert_same_parameters(model, reference, tol=1e-6)
    assert_sharded(model, sharded)


@pytest.mark.parametrize("stage", [1, 2])
def test_gradients_kept_or_freed(stage):
    """Stage 2 drops each full gradient once it is being reduced; stage 1
    leaves p.grad as backward made it."""
    freed = []
    model, optimizer = make(stage)
    train(model, optimizer, 1, after_backward=lambda m, _: freed.extend(
        p.grad is None for p in m.parameters()))
    assert freed == [stage == 2] * 6
    assert_sharded(model, optimizer)


@pytest.mark.parametrize("stage", [1, 2])
def test_clip_grad_norm(stage):
    """optimizer.clip_grad_norm_ after synchronize() clips as torch's
    clip_grad_norm_ does the averaged whole gradients."""
    def clip_unsharded(model, optimizer):
        optimizer.synchronize()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05))

    def clip_sharded(model, optimizer):
        optimizer.synchronize()
        norms.append(optimizer.clip_grad_norm_(0.05))

    def step_skipping(optimizer):
        step = optimizer.step

        def skipping(closure=None):
            with optimizer.skip_synchronize():
                return step(closure)
        optimizer.step = skipping

    norms = []
    reference, reference_optimizer = make(0)
    step_skipping(reference_optimizer)
    train(reference, reference_optimizer, 3, after_backward=clip_unsharded)
    model, sharded = make(stage)
    step_skipping(sharded)
    train(model, sharded, 3, after_backward=clip_sharded)
    torch.testing.assert_close(torch.stack(norms[3:]).double(), torch.stack(norms[:3]).double())
    assert_same_parameters(model, reference)
    assert_sharded(model, sharded)


def test_consolidated_state_loads_unsharded():
    """consolidate_state_dict(to=0) is on rank 0 what the unsharded
    optimizer's state_dict() is, loadable into a plain torch optimizer;
    loaded into a sharded optimizer it continues the same training."""
    reference, reference_optimizer = make(0)
    train(reference, reference_optimizer, 3)
    model, sharded = make(2)
    train(model, sharded, 3)
    whole = sharded.consolidate_state_dict(to=0)
    if hvd.rank() == 0:
        assert_same_state(whole, reference_optimizer.state_dict())
        plain = torch.optim.Adam(Net().parameters())
        plain.load_state_dict(whole)
        assert_same_state(plain.state_dict(), whole)
    else:
        assert whole is None
    whole = sharded.consolidate_state_dict(to=None)
    resumed, resumed_optimizer = make(2)
    resumed.load_state_dict(model.state_dict())
    resumed_optimizer.load_state_dict(whole)
    assert_sharded(resumed, resumed_optimizer)
    train(resumed, resumed_optimizer, 2, first=3)
    train(reference, reference_optimizer, 2, first=3)
    assert_same_parameters(resumed, reference)


def test_checkpoint_one_file_per_rank():
    """Each rank saves its own state_dict() and loads it back: training
    goes on as if never interrupted."""
    directory = shared_directory()
    model, optimizer = make(2)
    train(model, optimizer, 3)
    path = os.path.join(directory, "optimizer.rank{}.pt".format(hvd.rank()))
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    train(model, optimizer, 2, first=3)

    resumed, resumed_optimizer = make(2)
    checkpoint = torch.load(path)
    resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    train(resumed, resumed_optimizer, 2, first=3)
    assert_same_parameters(resumed, model)
    assert_sharded(resumed, resumed_optimizer)
    # Another rank's file is refused: it holds another shard.
    if hvd.size() > 1:
        other = torch.load(os.path.join(directory, "optimizer.rank{}.pt".format(
            (hvd.rank() + 1) % hvd.size())))
        with pytest.raises(ValueError, match="pass every rank's state dicts"):
            resumed_optimizer.load_state_dict(other["optimizer"])
    cleanup(directory)


def test_checkpoint_of_another_number_of_ranks():
    """Files saved by a job of N ranks (here a process set of all but the
    last rank) load into one of M (every rank): merged, then shared out."""
    smaller = list(range(max(1, hvd.size() - 1)))
    subset = hvd.add_process_set(smaller)
    directory = shared_directory()
    try:
        if subset.included():
            model, optimizer = make(2, process_set=subset)
            train(model, optimizer, 3, rank=smaller.index(hvd.rank()))
            assert_sharded(model, optimizer, len(smaller), smaller.index(hvd.rank()))
            torch.save(optimizer.state_dict(),
                       os.path.join(directory, "optimizer.rank{}.pt".format(hvd.rank())))
            if hvd.rank() == 0:
                torch.save(model.state_dict(), os.path.join(directory, "model.pt"))
        hvd.barrier()
        files = [torch.load(os.path.join(directory, "optimizer.rank{}.pt".format(r)))
                 for r in smaller]
        model, optimizer = make(2)
        model.load_state_dict(torch.load(os.path.join(directory, "model.pt")))
        optimizer.load_state_dict(files)
        assert_sharded(model, optimizer)
        reference, reference_optimizer = make(0)
        reference.load_state_dict(model.state_dict())
        reference_optimizer.load_state_dict(merge_shards(files))
        train(model, optimizer, 2, first=3)
        train(reference, reference_optimizer, 2, first=3)
        assert_same_parameters(model, reference)
        assert_same_state(optimizer.consolidate_state_dict(to=None),
                          reference_optimizer.state_dict())
    finally:
        hvd.remove_process_set(subset)
        cleanup(directory)


def test_broadcast_optimizer_state_from_a_checkpoint_on_rank_0():
    """Horovod's resume: rank 0 loads the whole state, broadcast_optimizer_
    state shares it out; every rank then holds its shard of it."""
    model, optimizer = make(2)
    train(model, optimizer, 3)
    whole = optimizer.consolidate_state_dict(to=0)
    parameters = {k: v.clone() for k, v in model.state_dict().items()}
    train(model, optimizer, 2, first=3)

    resumed, resumed_optimizer = make(2)
    if hvd.rank() == 0:
        resumed.load_state_dict(parameters)
        resumed_optimizer.load_state_dict(whole)
    hvd.broadcast_parameters(resumed.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(resumed_optimizer, root_rank=0)
    assert_sharded(resumed, resumed_optimizer)
    train(resumed, resumed_optimizer, 2, first=3)
    assert_same_parameters(resumed, model)
    # After training, each rank keeps its shards; the root's options win.
    before = resumed_optimizer.state_dict()
    if hvd.rank() == 0:
        resumed_optimizer.param_groups[0]["lr"] = 0.123
    hvd.broadcast_optimizer_state(resumed_optimizer, root_rank=0)
    after = resumed_optimizer.state_dict()
    assert after["param_groups"][0]["lr"] == 0.123
    for index, values in before["state"].items():
        for key, value in values.items():
            assert torch.equal(torch.as_tensor(after["state"][index][key]),
                               torch.as_tensor(value))


def test_fresh_broadcast_optimizer_state():
    model, optimizer = make(1)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    train(model, optimizer, 2)
    assert_sharded(model, optimizer)


def test_elastic_state_commit_restore_sync():
    """hvd.elastic.TorchState keeps the whole state at each commit and
    shares it out again on restore and sync (at a reset, over the ranks the
    job then has)."""
    model, optimizer = make(2)
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    state.sync()
    train(model, optimizer, 2)
    state.commit()
    committed = optimizer.consolidate_state_dict(to=None)
    parameters = [p.detach().clone() for p in model.parameters()]
    train(model, optimizer, 2, first=2)
    state.restore()
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), parameters))
    assert_same_state(optimizer.consolidate_state_dict(to=None), committed, tol=0)
    state.sync()
    assert_same_state(optimizer.consolidate_state_dict(to=None), committed, tol=0)
    assert_sharded(model, optimizer)


def test_process_set():
    """Sharded over a process set (the even ranks): their training is the
    unsharded optimizer's on that set; other ranks step on their own."""
    evens = list(range(0, hvd.size(), 2))
    subset = hvd.add_process_set(evens)
    try:
        reference, reference_optimizer = make(0, process_set=subset)
        train(reference, reference_optimizer, 3)
        model, sharded = make(2, process_set=subset)
        train(model, sharded, 3)
        assert_same_parameters(model, reference)
        if subset.included():
            assert_sharded(model, sharded, len(evens), evens.index(hvd.rank()))
        else:
            assert_sharded(model, sharded, 1, 0)
    finally:
        hvd.remove_process_set(subset)


def test_parameters_moved_after_wrapping():
    """Module.to() replaces each parameter's memory: the shards follow."""
    def build(sharding):
        model = Net().float()
        optimizer = hvd.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                             named_parameters=model.named_parameters(),
                                             sharding=sharding)
        model.double()
        return model, optimizer

    reference, reference_optimizer = build(0)
    train(reference, reference_optimizer, 3)
    model, sharded = build(2)
    train(model, sharded, 3)
    assert_same_parameters(model, reference)
    assert_sharded(model, sharded)


@pytest.mark.parametrize("what, kwargs, match", [
    ("adasum", dict(op=hvd.Adasum), "op must be Average or Sum"),
    ("twobit", dict(compression=hvd.Compression.twobit(0.5)), "twobit and powersgd"),
    ("powersgd", dict(compression=hvd.Compression.powersgd(1)), "twobit and powersgd"),
    ("stage 3", dict(sharding=3), "sharding is 0"),
])
def test_refused_combinations(what, kwargs, match):
    model = Net()
    kwargs.setdefault("sharding", 2)
    with pytest.raises(ValueError, match=match):
        hvd.DistributedOptimizer(torch.optim.Adam(model.parameters()),
                                 named_parameters=model.named_parameters(), **kwargs)


@pytest.mark.parametrize("optimizer", [
    lambda params: torch.optim.LBFGS(params),
    lambda params: torch.optim.SparseAdam(params)])
def test_refused_optimizers(optimizer):
    model = Net()
    with pytest.raises(ValueError, match="not per element"):
        hvd.DistributedOptimizer(optimizer(list(model.parameters())), sharding=1)


def test_sparse_gradient_refused_unless_dense():
    embedding = torch.nn.Embedding(10, 3, sparse=True)
    hvd.DistributedOptimizer(torch.optim.SGD(embedding.parameters(), lr=0.1), sharding=2)
    with pytest.raises(ValueError, match="sparse_as_dense=True"):
        embedding(torch.tensor([1, 2])).sum().backward()
    # as dense: the same step as the unsharded optimizer's
    steps = []
    for sharding in (0, 2):
        torch.manual_seed(0)
        embedding = torch.nn.Embedding(10, 3, sparse=True)
        optimizer = hvd.DistributedOptimizer(torch.optim.SGD(embedding.parameters(), lr=0.1),
                                             sharding=sharding, sparse_as_dense=True)
        embedding(torch.tensor([1, hvd.rank()])).sum().backward()
        optimizer.step()
        steps.append(embedding.weight.detach())
    torch.testing.assert_close(steps[1], steps[0])
