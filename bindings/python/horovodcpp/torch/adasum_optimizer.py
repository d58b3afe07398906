"""DistributedOptimizer(op=hvd.Adasum), as Horovod's _DistributedAdasumOptimizer:
each rank steps its own optimizer on its own gradients, and the ranks
combine the resulting parameter changes (deltas) with Adasum. Each
parameter's step and delta allreduce start from a hook on its gradient
accumulator once backward has produced its gradient; step() waits for them
and sets every parameter to its value before the step plus the combined
delta."""
import contextlib

import torch

from horovodcpp.common.basics import Adasum
from horovodcpp.torch import core_ops
from horovodcpp.torch.gradient_hooks import HookedOptimizer
from horovodcpp.torch.handles import synchronize


class _DistributedAdasumOptimizer(torch.optim.Optimizer):
    # Mixed into the wrapped optimizer's class by DistributedOptimizer().
    def __init__(self, params, named_parameters, compression, backward_passes_per_step,
                 process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        self.process_set = process_set
        self._parameter_names = self._names_of(named_parameters)
        self._trainable = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        self._delay = {p: backward_passes_per_step for p in self._trainable}
        # Each parameter is a unit of its own for the gradient hooks.
        self._unit_of = {p: (p,) for p in self._trainable}
        self._ready = {(p,): set() for p in self._trainable}
        self._handles = {}  # parameter -> (handle, compression context)
        self._starts = {p: torch.zeros_like(p, requires_grad=False) for p in self._trainable}
        self._grad_accumulators = []  # keeps the hooked nodes alive
        if process_set.included():  # registered: DistributedOptimizer() checked
            for p in self._trainable:
                p.grad = torch.zeros_like(p)  # as Horovod: a step before any backward is valid
            self._register_hooks(self._trainable)

    # HookedOptimizer's hooks count backward passes and call _submit([(p,)])
    # once p's gradient is final.
    def _submit(self, units):
        for (p,) in units:
            self._handles[p] = self._start_delta_allreduce(p)

    @torch.no_grad()
    def _start_delta_allreduce(self, p):
        """The wrapped optimizer's step on p alone, then the Adasum of the
        change it made: p holds the delta until step() (as in Horovod)."""
        start = self._starts[p]
        start.copy_(p)
        stashed = [group["params"] for group in self.param_groups]
        for group in self.param_groups:
            group["params"] = [p] if any(p is q for q in group["params"]) else []
        try:
            super(self.__class__, self).step()
        finally:
            for group, params in zip(self.param_groups, stashed):
                group["params"] = params
        p.sub_(start)
        compressed, ctx = self._compression.compress(p)
        handle = core_ops.allreduce_async_(compressed, name=self._parameter_names[p], op=Adasum,
                                          process_set=self.process_set)
        return handle, ctx

    def synchronize(self):
        """Nothing to do: the combined deltas are applied by step()."""

    @contextlib.contextmanager
    def skip_synchronize(self):
        raise AssertionError("Skipping synchronization is not supported when using Adasum "
                             "optimizer.")

    @torch.no_grad()
    def step(self, closure=None):
        if not self.process_set.included():
            return super(self.__class__, self).step(closure)
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for p in self._trainable:  # those whose hook has not fired: step now
            if p not in self._handles:
                self._handles[p] = self._start_delta_allreduce(p)
        # Every allreduce is waited for, so that none is left in flight; a
        # parameter whose allreduce failed goes back to its value before
        # the step, and the first error is raised at the end.
        error = None
        for p, (handle, ctx) in self._handles.items():
            start = self._starts[p]
            try:
                start.add_(self._compression.decompress(synchronize(handle), ctx))
            except Exception as e:
                error = error or e
            p.copy_(start)
        self._reset_reductions()
        if error is not None:
            raise error
        return loss


def distributed_adasum_optimizer(optimizer, named_parameters, compression,
                                 backward_passes_per_step, process_set):
    """`optimizer` wrapped in a subclass of its own class with Adasum's step."""
    cls = type(optimizer.__class__.__name__, (HookedOptimizer, optimizer.__class__),
               dict(_DistributedAdasumOptimizer.__dict__))
    distributed = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, process_set)
    distributed.state = optimizer.state  # keep any state already loaded
    return distributed
