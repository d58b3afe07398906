"""Helpers of horovod.torch for starting training consistently:
broadcast_parameters, broadcast_optimizer_state, broadcast_object and
allgather_object."""
import collections
import pickle

import torch

from horovodcpp import _core
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.torch import core_ops
from horovodcpp.torch.handles import synchronize


def broadcast_parameters(params, root_rank, process_set=global_process_set):
    """Overwrites `params` in place with root_rank's: a state_dict (or any
    dict of name -> tensor) or a list of (name, tensor) such as
    model.named_parameters(). Every rank (of `process_set`) passes the same
    names; root_rank is a global rank."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError("invalid params of type: {}".format(type(params)))
    handles = [core_ops.broadcast_async_(p, root_rank, name, process_set)
               for name, p in params if p is not None]
    for handle in handles:
        synchronize(handle)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """Returns root_rank's `obj` (any picklable object) on every rank (of
    `process_set`; root_rank is a global rank)."""
    name = name or type(obj).__name__
    is_root = _core.rank() == root_rank
    payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8) if is_root else None
    length = torch.tensor([payload.numel() if is_root else 0], dtype=torch.int64)
    core_ops.broadcast_(length, root_rank, name + ".sz", process_set)
    if not is_root:
        payload = torch.empty(int(length), dtype=torch.uint8)
    core_ops.broadcast_(payload, root_rank, name + ".t", process_set)
    return obj if is_root else pickle.loads(payload.numpy().tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Returns the list of every rank's `obj` (picklable), in rank order
    (the members of `process_set`)."""
    name = name or type(obj).__name__
    payload = torch.frombuffer(bytearray(pickle.dumps(obj)), dtype=torch.uint8)
    lengths = synchronize(core_ops.allgather_async(torch.tensor([payload.numel()]), name + ".sz",
                                                  process_set))
    data = synchronize(core_ops.allgather_async(payload, name + ".t", process_set))
    data = data.numpy().tobytes()
    offsets = [0] + torch.cumsum(lengths, 0).tolist()
    return [pickle.loads(data[offsets[i]:offsets[i + 1]]) for i in range(len(lengths))]


def _create_state(optimizer, params):
    """Creates the optimizer's state (momentum buffers, ...) of `params`
    without changing any parameter: one step on zero gradients for them
    (sparse for SparseAdam; no gradient for the others), then every
    parameter and gradient is restored."""
    everything = [p for group in optimizer.param_groups for p in group["params"]]
    saved = [(p.detach().clone(), p.grad) for p in everything]
    # Only the ranks without state get here: nothing collective (the
    # compressor's state comes with broadcast_optimizer_state, on every rank).
    sparse = isinstance(optimizer, torch.optim.SparseAdam)
    for p in everything:
        p.grad = None
    for p in params:
        p.grad = torch.zeros_like(p).to_sparse() if sparse else torch.zeros_like(p)
    if hasattr(optimizer, "skip_synchronize"):  # a DistributedOptimizer
        with optimizer.skip_synchronize():
            optimizer.step()
    else:
        optimizer.step()
    with torch.no_grad():
        for p, (value, grad) in zip(everything, saved):
            p.copy_(value)
            p.grad = grad


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=global_process_set):
    """Makes every rank's optimizer state and hyperparameters root_rank's
    (SGD, Adam, AdamW, SparseAdam and other per-parameter-state
    optimizers). Parameters without state on the root (e.g. never given a
    gradient) get none anywhere; the others get the root's, created first
    where a rank has none. As in Horovod, every trainable parameter then
    has a gradient (zeros where it had none: scripts read p.grad right
    after). A DistributedOptimizer's stateful compressor gets the root's
    shared state (broadcast_state). `model` is unused (accepted as in
    Horovod)."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state")
    if hasattr(optimizer, "broadcast_state_from"):  # sharded: each rank keeps its share
        return optimizer.broadcast_state_from(root_rank)
    params = [p for group in optimizer.param_groups for p in group["params"]]
    with_state = broadcast_object([i for i, p in enumerate(params) if optimizer.state.get(p)],
                                  root_rank, "optimizer_state.params", process_set)
    missing = [params[i] for i in with_state if not optimizer.state.get(params[i])]
    if missing:
        _create_state(optimizer, missing)
    for i in set(range(len(params))) - set(with_state):
        optimizer.state.pop(params[i], None)

    tensors, others = [], {}
    for index, p in enumerate(params):
        for key, value in sorted(optimizer.state.get(p, {}).items()):
            if torch.is_tensor(value):
                tensors.append(("optimizer_state.{}.{}".format(index, key), value))
            else:
                others[(index, key)] = value
    broadcast_parameters(tensors, root_rank, process_set)
    options = [{k: v for k, v in group.items() if k != "params"} for group in optimizer.param_groups]
    options, others = broadcast_object((options, others), root_rank, "optimizer_state.options",
                                       process_set)
    for group, values in zip(optimizer.param_groups, options):
        group.update(values)
    for (index, key), value in others.items():
        optimizer.state[params[index]][key] = value
    # A compressor's shared state (PowerSGD's Q and step counts) too.
    broadcast_compression_state = getattr(getattr(optimizer, "_compression", None),
                                          "broadcast_state", None)
    if broadcast_compression_state is not None:
        broadcast_compression_state(root_rank, process_set)
    sparse = isinstance(optimizer, torch.optim.SparseAdam)
    for p in params:
        if p.requires_grad and p.grad is None:
            p.grad = torch.zeros_like(p).to_sparse() if sparse else torch.zeros_like(p)
