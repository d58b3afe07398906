"""What torch's own libraries run on the horovodcpp group, each against the
same few training steps on a Gloo group of the same ranks (float
tolerance): DDP (default, no_sync, static_graph, the fp16/bf16/PowerSGD
communication hooks), FSDP2's fully_shard, a DTensor computation,
torch.distributed.checkpoint save and load, ZeroRedundancyOptimizer and the
object collectives."""
import os
import tempfile

import pytest
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powersgd
from torch.distributed.device_mesh import DeviceMesh
from torch.nn.parallel import DistributedDataParallel as DDP


def make_model(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.ReLU(), torch.nn.Linear(32, 16),
                               torch.nn.ReLU(), torch.nn.Linear(16, 4))


def batch(step, micro=0):
    g = torch.Generator().manual_seed(10000 * step + 100 * dist.get_rank() + micro)
    return torch.randn(8, 12, generator=g), torch.randn(8, 4, generator=g)


def loss_of(model, step, micro=0):
    x, y = batch(step, micro)
    return torch.nn.functional.mse_loss(model(x), y)


def assert_same(horovodcpp, gloo, what, tol=1e-5):
    assert [n for n, _ in horovodcpp] == [n for n, _ in gloo], what
    for (name, a), (_, b) in zip(horovodcpp, gloo):
        torch.testing.assert_close(a, b, rtol=tol, atol=tol, msg=lambda m: "{} {}: {}".format(
            what, name, m))


def both(run, gloo):
    """run(group) on horovodcpp's group and on the Gloo group: two lists of
    (name, tensor) that must agree."""
    return run(dist.group.WORLD), run(gloo)


def params_of(model):
    return [(n, p.detach().clone()) for n, p in model.named_parameters()]


# -- DDP -------------------------------------------------------------------------
def ddp_training(group, steps=4, hook=None, state=None, **ddp_options):
    model = make_model()
    ddp = DDP(model, process_group=group, **ddp_options)
    if hook is not None:
        ddp.register_comm_hook(state(group) if callable(state) else group, hook)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        optimizer.zero_grad()
        loss_of(ddp, step).backward()
        optimizer.step()
    return params_of(model)


@pytest.mark.parametrize("options", [{}, {"static_graph": True}, {"bucket_cap_mb": 0.001},
                                     {"gradient_as_bucket_view": True}],
                         ids=["default", "static_graph", "small_buckets", "bucket_view"])
def test_ddp(gloo, options):
    assert_same(*both(lambda g: ddp_training(g, **options), gloo), "DDP {}".format(options))


def test_ddp_no_sync(gloo):
    def run(group):
        model = make_model()
        ddp = DDP(model, process_group=group)
        optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05)
        for step in range(3):
            optimizer.zero_grad()
            with ddp.no_sync():  # accumulated locally
                loss_of(ddp, step, micro=0).backward()
            loss_of(ddp, step, micro=1).backward()
            optimizer.step()
        return params_of(model)
    assert_same(*both(run, gloo), "DDP no_sync")


@pytest.mark.parametrize("hook", ["fp16", "bf16", "powersgd"])
def test_ddp_communication_hooks(gloo, hook):
    if hook == "powersgd":
        def state(group):
            return powersgd.PowerSGDState(process_group=group, matrix_approximation_rank=2,
                                          start_powerSGD_iter=2, min_compression_rate=0.5,
                                          random_seed=0)
        kwargs = dict(hook=powersgd.powerSGD_hook, state=state)
        tol = 1e-4
    else:
        kwargs = dict(hook=getattr(default_hooks, hook + "_compress_hook"), state=None)
        tol = 1e-3 if hook == "fp16" else 1e-2
    assert_same(*both(lambda g: ddp_training(g, **kwargs), gloo), "DDP hook " + hook, tol)


# -- FSDP2, DTensor ------------------------------------------------------------------
def mesh_of(group):
    return DeviceMesh.from_group(group, "cpu")


def test_fsdp2_fully_shard(gloo):
    from torch.distributed.fsdp import fully_shard

    def run(group):
        model = make_model()
        mesh = mesh_of(group)
        for layer in model:
            if isinstance(layer, torch.nn.Linear):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        for step in range(3):
            optimizer.zero_grad()
            loss_of(model, step).backward()
            optimizer.step()
        return [(n, p.full_tensor().detach().clone()) for n, p in model.named_parameters()]
    assert_same(*both(run, gloo), "FSDP2")


def test_dtensor_computation(gloo):
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    def run(group):
        mesh = mesh_of(group)
        torch.manual_seed(3)
        a = torch.randn(8 * dist.get_world_size(), 6)
        b = torch.randn(6, 5)
        da = distribute_tensor(a, mesh, [Shard(0)])
        db = distribute_tensor(b, mesh, [Replicate()])
        product = (da @ db).redistribute(mesh, [Replicate()]).to_local()
        column_sum = distribute_tensor(a, mesh, [Shard(0)]).sum(0).full_tensor()
        sharded_cols = distribute_tensor(a, mesh, [Shard(1)]) if a.shape[1] % \
            dist.get_world_size() == 0 else da
        return [("product", product), ("column_sum", column_sum),
                ("resharded", sharded_cols.redistribute(mesh, [Shard(0)]).full_tensor())]
    assert_same(*both(run, gloo), "DTensor")


# -- checkpoint, ZeRO, objects ---------------------------------------------------------
def test_distributed_checkpoint_save_and_load(gloo):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    def run(group):
        path = [tempfile.mkdtemp(prefix="hvd-dcp-") if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(path, src=0, group=group)
        mesh = mesh_of(group)
        model = make_model(seed=1)
        fully_shard(model, mesh=mesh)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        loss_of(model, 0).backward()
        optimizer.step()
        dcp.save({"model": model.state_dict()}, checkpoint_id=path[0], process_group=group)
        saved = [(n, p.full_tensor().detach().clone()) for n, p in model.named_parameters()]
        restored = make_model(seed=2)
        fully_shard(restored, mesh=mesh)
        state = {"model": restored.state_dict()}
        dcp.load(state, checkpoint_id=path[0], process_group=group)
        restored.load_state_dict(state["model"])
        loaded = [(n, p.full_tensor().detach().clone()) for n, p in restored.named_parameters()]
        assert_same(loaded, saved, "DCP round trip")
        dist.barrier(group=group)
        if dist.get_rank() == 0:
            for name in os.listdir(path[0]):
                os.remove(os.path.join(path[0], name))
            os.rmdir(path[0])
        return loaded
    assert_same(*both(run, gloo), "DCP")


@pytest.mark.parametrize("optimizer_class", [torch.optim.SGD, torch.optim.Adam],
                         ids=["sgd", "adam"])
def test_zero_redundancy_optimizer(gloo, optimizer_class):
    from torch.distributed.optim import ZeroRedundancyOptimizer

    def run(group):
        model = make_model()
        ddp = DDP(model, process_group=group)
        optimizer = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=optimizer_class,
                                            process_group=group, lr=0.01)
        for step in range(3):
            optimizer.zero_grad()
            loss_of(ddp, step).backward()
            optimizer.step()
        optimizer.consolidate_state_dict(to=0)
        return params_of(model)
    assert_same(*both(run, gloo), "ZeroRedundancyOptimizer")


def test_object_collectives(gloo):
    def run(group):
        n, me = dist.get_world_size(), dist.get_rank()
        mine = {"rank": me, "data": list(range(me + 1)), "text": "x" * (10 * me)}
        gathered = [None] * n
        dist.all_gather_object(gathered, mine, group=group)
        objects = [{"from": 0, "n": n}, "second"] if me == 0 else [None, None]
        dist.broadcast_object_list(objects, src=0, group=group)
        to_root = [None] * n if me == n - 1 else None
        dist.gather_object(mine, to_root, dst=n - 1, group=group)
        received = [None]
        dist.scatter_object_list(received, [{"to": r} for r in range(n)] if me == 0 else None,
                                 src=0, group=group)
        assert gathered == [{"rank": r, "data": list(range(r + 1)), "text": "x" * (10 * r)}
                            for r in range(n)]
        assert objects == [{"from": 0, "n": n}, "second"]
        assert received == [{"to": me}]
        if me == n - 1:
            assert to_root == gathered
        return [("ok", torch.ones(1))]
    assert_same(*both(run, gloo), "object collectives")
