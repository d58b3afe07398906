"""The training API: DistributedOptimizer against one process training on
the whole batch, identical parameters on every rank, the broadcast helpers
and SyncBatchNorm against BatchNorm on the whole batch."""
import warnings

import pytest
import torch

import horovodcpp.torch as hvd
from reference import batch, batch_of, check_sync_batch_norm, every_rank, make_model, rank_tensor

def full_batch(step, micro=0):
    return batch_of(every_rank(lambda r: r), step, micro)


def assert_same_on_every_rank(model):
    for name, p in model.named_parameters():
        gathered = hvd.allgather(p.detach().unsqueeze(0), name="same." + name)
        for other in gathered:
            assert torch.equal(other, p.detach()), name


def train(make_optimizer, steps=4, passes=1, atol=1e-5, **kwargs):
    """Trains with DistributedOptimizer and, locally, on the whole batch;
    checks that parameters agree with the local run and across ranks."""
    model, reference = make_model(), make_model()
    optimizer = hvd.DistributedOptimizer(make_optimizer(model.parameters()),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=passes, **kwargs)
    local = make_optimizer(reference.parameters())
    loss_fn = torch.nn.MSELoss()
    for step in range(steps):
        optimizer.zero_grad()
        local.zero_grad()
        for micro in range(passes):
            x, y = batch(step, hvd.rank(), micro)
            loss_fn(model(x), y).backward()
            x, y = full_batch(step, micro)
            loss_fn(reference(x), y).backward()
        optimizer.step()
        local.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=atol, rtol=atol, msg=name)
    assert_same_on_every_rank(model)


def sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def adam(params):
    return torch.optim.Adam(params, lr=0.01)


def test_distributed_optimizer_matches_whole_batch():
    train(sgd)
    train(adam)


def test_hooked_gradients_go_to_the_core_directly(monkeypatch):
    """Each gradient's hook (forced at one rank too, as in an elastic job)
    hands it to the core's direct call, which reads its address (no DLPack,
    no batch call), the CPU tensors here and CUDA ones alike; the parameters
    still match the whole batch."""
    from horovodcpp import _core
    from horovodcpp.torch import core_ops
    monkeypatch.setenv("HOROVOD_ELASTIC", "1")

    def refused(*args, **kwargs):
        raise AssertionError("a gradient went through the DLPack batch call")
    monkeypatch.setattr(core_ops, "allreduce_async_many_", refused)
    direct = _core.allreduce_async_direct
    handles = []
    monkeypatch.setattr(_core, "allreduce_async_direct",
                        lambda *args: handles.append(direct(*args)) or handles[-1])
    train(sgd, steps=3)
    assert len(handles) == 3 * len(list(make_model().parameters()))
    assert NotImplemented not in handles


def test_backward_passes_per_step():
    train(sgd, passes=2)
    model = make_model()
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), model.named_parameters())
    model(batch(0, hvd.rank())[0]).sum().backward()
    with pytest.raises(AssertionError, match="backward_passes_per_step"):
        model(batch(0, hvd.rank())[0]).sum().backward()
    optimizer.synchronize()


def test_groups():
    train(sgd, groups=2)
    model = make_model()
    params = list(model.parameters())
    optimizer = hvd.DistributedOptimizer(sgd(params), model.named_parameters(),
                                         groups=[params[:2], params[3:]])
    model(batch(0, hvd.rank())[0]).sum().backward()
    optimizer.step()
    assert_same_on_every_rank(model)


def test_fp16_compression_and_predivide():
    train(sgd, atol=1e-2, compression=hvd.Compression.fp16)
    train(sgd, gradient_predivide_factor=2.0)
    with pytest.raises(ValueError, match="gradient_predivide_factor"):
        hvd.DistributedOptimizer(sgd(make_model().parameters()), op=hvd.Sum,
                                 gradient_predivide_factor=2.0)


def test_unused_parameters_synchronize_and_skip():
    model = torch.nn.ModuleDict({"used": torch.nn.Linear(3, 1), "unused": torch.nn.Linear(3, 1)})
    optimizer = hvd.DistributedOptimizer(sgd(model.parameters()), model.named_parameters())
    x = rank_tensor(hvd.rank(), [2, 3], torch.float32)
    # The unused layer gets no gradient on rank 0 only: still reduced (as zero).
    loss = model["used"](x).sum() + (model["unused"](x).sum() if hvd.rank() else 0)
    loss.backward()
    # Hooks started each produced gradient's allreduce during backward.
    assert len(optimizer._handles) == (4 if hvd.rank() else 2)
    with pytest.raises(AssertionError, match="zero_grad"):
        optimizer.zero_grad()
    optimizer.synchronize()
    rows = every_rank(lambda r: rank_tensor(r, [2, 3], torch.float32).sum(0))
    torch.testing.assert_close(model["used"].weight.grad[0], sum(rows) / hvd.size())
    torch.testing.assert_close(model["unused"].weight.grad[0],
                               sum(rows[1:], torch.zeros(3)) / hvd.size())
    with optimizer.skip_synchronize():
        optimizer.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        optimizer.zero_grad()


def test_named_parameters_checks():
    model = make_model()
    named = list(model.named_parameters())
    with pytest.raises(ValueError, match="unique"):
        hvd.DistributedOptimizer(sgd(model.parameters()), [("a", p) for _, p in named])
    with pytest.raises(ValueError, match="not named"):
        hvd.DistributedOptimizer(sgd(model.parameters()), named[:1])


def embedding(sparse):
    torch.manual_seed(0)
    return torch.nn.Embedding(10, 3, sparse=sparse)


def embedding_ids(r):
    return torch.tensor([r, r + 1, 7])  # 7 on every rank


@pytest.mark.parametrize("sparse_as_dense", [False, True])
@pytest.mark.parametrize("kind", ["SGD", "SparseAdam"])
def test_sparse_gradients(sparse_as_dense, kind):
    # Gradients stay sparse (SparseAdam refuses dense ones), averaged over
    # the ranks as one process gets them from the mean loss.
    make = {"SGD": lambda p: torch.optim.SGD(p, lr=0.5),
            "SparseAdam": lambda p: torch.optim.SparseAdam(p, lr=0.5)}[kind]
    model, reference = embedding(True), embedding(True)
    optimizer = hvd.DistributedOptimizer(make(list(model.parameters())), model.named_parameters(),
                                         sparse_as_dense=sparse_as_dense)
    local = make(list(reference.parameters()))
    for _ in range(2):
        optimizer.zero_grad()
        model(embedding_ids(hvd.rank())).pow(2).mean().backward()
        optimizer.step()
        assert model.weight.grad.is_sparse
        local.zero_grad()
        sum(reference(embedding_ids(r)).pow(2).mean()
            for r in range(hvd.size())).div(hvd.size()).backward()
        local.step()
    torch.testing.assert_close(model.weight.detach(), reference.weight.detach())


def test_sparse_allreduce_async():
    # As in Horovod, the handle is a function returning the reduced tensor.
    model = embedding(True)
    model(embedding_ids(hvd.rank())).sum().backward()
    handle = hvd.sparse_allreduce_async(model.weight.grad, "sparse.direct", hvd.Average)
    result = handle()
    assert result.is_sparse
    expected = embedding(False)
    sum(expected(embedding_ids(r)).sum() for r in range(hvd.size())).div(hvd.size()).backward()
    torch.testing.assert_close(result.to_dense(), expected.weight.grad)


def test_broadcast_parameters():
    model = torch.nn.Linear(3, 2)
    torch.nn.init.constant_(model.weight, float(hvd.rank()))
    root = hvd.size() - 1
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    assert torch.equal(model.weight, torch.full([2, 3], float(root)))
    torch.nn.init.constant_(model.bias, float(hvd.rank()))
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=0)
    assert torch.equal(model.bias, torch.zeros(2))
    with pytest.raises(ValueError):
        hvd.broadcast_parameters(model, root_rank=0)


@pytest.mark.parametrize("kind", ["SGD", "Adam", "AdamW"])
def test_broadcast_optimizer_state(kind):
    make = {"SGD": lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9),
            "Adam": lambda p, lr: torch.optim.Adam(p, lr=lr),
            "AdamW": lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=0.1)}[kind]
    model = make_model()
    optimizer = make(model.parameters(), 0.1 + hvd.rank())
    if hvd.rank() == 0:  # only the root has trained (say, resumed from a checkpoint)
        for step in range(2):
            model(batch(step, 0)[0]).sum().backward()
            optimizer.step()
    before = [p.detach().clone() for p in model.parameters()]
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    for p, b in zip(model.parameters(), before):  # parameters are not touched
        assert torch.equal(p.detach(), b)
    assert optimizer.param_groups[0]["lr"] == 0.1
    for p in model.parameters():
        for key, value in optimizer.state[p].items():
            gathered = hvd.allgather_object(value.tolist() if torch.is_tensor(value) else value)
            assert all(g == gathered[0] for g in gathered), key
    assert len(optimizer.state) == len(list(model.parameters()))
    # As in Horovod: a trainable parameter without a gradient then has a
    # zero one (scripts read p.grad right after).
    for p in model.parameters():
        assert p.grad is not None
        assert hvd.rank() == 0 or not p.grad.any()

    fresh_model = make_model()
    fresh_model[0].bias.requires_grad_(False)
    fresh = make(fresh_model.parameters(), 0.5)  # the root has no state: nobody keeps any
    hvd.broadcast_optimizer_state(hvd.DistributedOptimizer(fresh), root_rank=0)
    assert len(fresh.state) == 0
    assert [p.grad is None for p in fresh_model.parameters()] == [False, True, False, False]


def test_broadcast_optimizer_state_with_parameters_without_gradients():
    # Only the root has trained, and only the first layer got gradients: the
    # root has no state for the other parameters, so no rank keeps any for
    # them; SparseAdam's state is created from sparse zero gradients.
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    if hvd.rank() == 0:
        model[0](batch(0, 0)[0]).sum().backward()
        optimizer.step()
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    assert [bool(optimizer.state.get(p)) for p in model.parameters()] == [True, True, False, False]
    for p in list(model.parameters())[:2]:
        gathered = hvd.allgather_object(optimizer.state[p]["exp_avg"].tolist())
        assert all(g == gathered[0] for g in gathered)

    sparse = embedding(True)
    adam = torch.optim.SparseAdam(list(sparse.parameters()), lr=0.1)
    if hvd.rank() == 0:
        sparse(embedding_ids(0)).sum().backward()
        adam.step()
    hvd.broadcast_optimizer_state(adam, root_rank=0)
    gathered = hvd.allgather_object(adam.state[sparse.weight]["exp_avg"].tolist())
    assert all(g == gathered[0] for g in gathered)


def test_distributed_optimizer_api_as_horovod():
    model = make_model()
    with pytest.raises(ValueError, match="backward_passes_per_step"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                 backward_passes_per_step=0)
    with pytest.raises(ValueError, match="groups"):
        hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), groups=0)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters())
    optimizer.set_backward_passes_per_step(2)
    assert optimizer.backward_passes_per_step == 2
    for micro in range(2):  # two passes accumulate before the step
        model(batch(0, hvd.rank(), micro)[0]).sum().backward()
    optimizer.step()
    optimizer.load_state_dict(optimizer.state_dict())


def test_broadcast_and_allgather_object():
    obj = {"rank": hvd.rank(), "payload": list(range(hvd.rank() * 100))}
    assert hvd.broadcast_object(obj, root_rank=0) == {"rank": 0, "payload": []}
    gathered = hvd.allgather_object(obj)
    assert [g["rank"] for g in gathered] == list(range(hvd.size()))
    assert all(len(g["payload"]) == 100 * r for r, g in enumerate(gathered))


def test_sync_batch_norm_matches_whole_batch():
    check_sync_batch_norm()
