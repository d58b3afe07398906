"""TorchState, as horovod.torch.elastic.TorchState."""
import copy

import torch

from horovodcpp.common.basics import rank
from horovodcpp.common.elastic import ObjectState
from horovodcpp.torch.elastic.sampler import ElasticSampler
from horovodcpp.torch.functions import (
    broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from horovodcpp.torch.sharded_optimizer import ShardedOptimizer
from horovodcpp.torch.sharded_state import numbered_groups


class TorchState(ObjectState):
    """State of a PyTorch training: a model, an optimizer, and any other
    keyword arguments as attributes. Modules, optimizers, LR schedulers and
    ElasticSamplers among them are saved, restored and synchronized through
    their state_dict(); other values as Python objects (broadcast_object).
    Assigning a new one to such an attribute saves it."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        kwargs.update(dict(model=model, optimizer=optimizer))
        self._handlers, kwargs = _get_handlers(kwargs)
        for name, handler in self._handlers.items():
            setattr(self, name, handler.value)
        super(TorchState, self).__init__(bcast_object=broadcast_object, get_rank=rank, **kwargs)

    def save(self):
        for handler in self._handlers.values():
            handler.save()
        super(TorchState, self).save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super(TorchState, self).restore()

    def sync(self):
        for handler in self._handlers.values():
            handler.sync()
        super(TorchState, self).sync()

    def __setattr__(self, name, value):
        if hasattr(self, name) and name in self._handlers:
            self._handlers[name].set_value(value)
        super().__setattr__(name, value)


class StateHandler(object):
    """Saves, restores and synchronizes one object through its state_dict().
    A sync also saves: until the next commit, a restore returns to the
    state every rank received (as ObjectState's sync does)."""

    def __init__(self, value):
        self.value = value
        self._saved = copy.deepcopy(value.state_dict())

    def save(self):
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self):
        self.value.load_state_dict(self._saved)

    def sync(self):
        self.broadcast()
        self.save()

    def broadcast(self):
        self.value.load_state_dict(broadcast_object(self.value.state_dict()))

    def set_value(self, value):
        self.value = value
        self.save()


class ModelStateHandler(StateHandler):
    def broadcast(self):
        broadcast_parameters(self.value.state_dict(), root_rank=0)


class OptimizerStateHandler(StateHandler):
    def broadcast(self):
        broadcast_optimizer_state(self.value, root_rank=0)


class ShardedOptimizerStateHandler(StateHandler):
    """A sharded optimizer's state, kept whole so that a reset can share it
    out again over whichever ranks the job has then. A commit (save) is a
    collective: it gathers the whole state into every rank's host memory.
    Until the first commit, the state is the whole one loaded before the
    first step (or none)."""

    def __init__(self, value):
        self.value = value
        self._saved = _on_host(value._whole_state_loaded)

    def save(self):
        self._saved = _on_host(self.value.consolidate_state_dict(to=None))

    def restore(self):
        self._load(self._saved)

    def sync(self):
        self._saved = broadcast_object(self._saved, root_rank=0, name="zero.elastic")
        self._load(self._saved)

    def _load(self, whole):
        if whole is None:
            whole = {"state": {}, "param_groups": numbered_groups(self.value.param_groups)}
        self.value.load_state_dict(whole)

    def set_value(self, value):
        self.value = value
        self.save()


def _on_host(state_dict):
    """A copy of `state_dict` whose tensors are in host memory."""
    if state_dict is None:
        return None
    return {"state": {i: {k: v.detach().to("cpu", copy=True) if torch.is_tensor(v) else v
                          for k, v in values.items()}
                      for i, values in state_dict["state"].items()},
            "param_groups": copy.deepcopy(state_dict["param_groups"])}


# PyTorch 2's schedulers derive from LRScheduler, no longer from
# _LRScheduler (kept as a subclass of it for old code).
_Scheduler = getattr(torch.optim.lr_scheduler, "LRScheduler",
                     torch.optim.lr_scheduler._LRScheduler)

# Which handler keeps which type (the first that matches); see
# get_handler_registry / set_handler_registry to add types.
_handler_registry = [
    (torch.nn.Module, ModelStateHandler),
    (ShardedOptimizer, ShardedOptimizerStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (_Scheduler, StateHandler),
    (ElasticSampler, StateHandler),
]


def get_handler_registry():
    return _handler_registry


def set_handler_registry(registry):
    global _handler_registry
    _handler_registry = registry


def _get_handlers(kwargs):
    handlers, remainder = {}, {}
    for name, value in kwargs.items():
        handler_cls = next((cls for kind, cls in _handler_registry if isinstance(value, kind)),
                           None)
        if handler_cls is not None:
            handlers[name] = handler_cls(value)
        else:
            remainder[name] = value
    return handlers, remainder
