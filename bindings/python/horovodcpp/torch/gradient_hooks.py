"""What the distributed optimizers (optimizer.py, adasum_optimizer.py,
sharded_optimizer.py) do alike, as methods of a mixin: name the
parameters, group them into units, hook their gradient accumulators so that
a unit is submitted once backward has produced its gradients
(backward_passes_per_step times), synchronize in step() unless told not to,
and refuse zero_grad() while reductions are in flight."""
import contextlib
import warnings

import torch

from horovodcpp.common.util import split_evenly


class HookedOptimizer:
    """Mixed in before the optimizer class; holds no state of its own."""

    def _names_of(self, named_parameters):
        all_params = [p for g in self.param_groups for p in g["params"]]
        if named_parameters is None:
            return {p: "noname.{}".format(i) for i, p in enumerate(all_params)}
        named_parameters = list(named_parameters)
        if any(not isinstance(p, tuple) for p in named_parameters):
            raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                             "usually produced by model.named_parameters().")
        names = [name for name, _ in named_parameters]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError("Parameter names in named_parameters must be unique. "
                             "Found duplicates: " + ", ".join(duplicates))
        named_ids = {id(p) for _, p in named_parameters}
        unnamed = [str(id(p)) for p in all_params if id(p) not in named_ids]
        if unnamed:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: " + ", ".join(unnamed))
        return {p: name for name, p in named_parameters}

    def _build_units(self, trainable, groups, backward_passes_per_step):
        """Units of communication: a parameter alone, or a group reduced
        together once all its members' gradients are ready. `groups`: an int
        (that many groups, split evenly) or lists of parameters."""
        if isinstance(groups, int):
            group_lists = split_evenly(trainable, groups) if groups > 0 else []
        else:
            group_lists = [list(g) for g in groups or []]
        self._unit_of = {p: (p,) for p in trainable}
        for group in group_lists:
            for p in group:
                self._unit_of[p] = tuple(group)
        self._units = list(dict.fromkeys(self._unit_of.values()))
        self._ready = {unit: set() for unit in self._units}
        self._delay = {p: backward_passes_per_step for p in trainable}

    def set_backward_passes_per_step(self, passes):
        """Accumulates `passes` backward passes locally per step from now on."""
        self.backward_passes_per_step = passes
        for p in self._delay:
            self._delay[p] = passes

    def _reset_reductions(self):
        """Forgets the step's reductions (done, failed, or dropped by a
        restored state): the next backward starts afresh, every parameter
        counting backward_passes_per_step passes again."""
        self._handles.clear()
        for ready in self._ready.values():
            ready.clear()
        self.set_backward_passes_per_step(self.backward_passes_per_step)

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For code that calls synchronize() itself (e.g. to clip gradients)
        before step(): step() inside this context does not synchronize again."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def _synchronize_for_step(self):
        """What step() does first: synchronize(), unless inside
        skip_synchronize() (and warn, as Horovod, if it was called already)."""
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False

    def _register_hooks(self, trainable):
        with torch.enable_grad():
            for p in trainable:
                # The AccumulateGrad node: its hook runs once p.grad is final.
                accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
                accumulator.register_hook(self._make_hook(p))
                self._grad_accumulators.append(accumulator)

    def _make_hook(self, p):
        def hook(*_):
            if self._delay[p] <= 0:
                raise AssertionError(
                    "Gradients were computed more than backward_passes_per_step times before "
                    "call to step(). Increase backward_passes_per_step to accumulate gradients "
                    "locally.")
            self._delay[p] -= 1
            if self._delay[p] == 0:
                unit = self._unit_of[p]
                self._ready[unit].add(p)
                if len(self._ready[unit]) == len(unit):
                    self._submit([unit])
        return hook

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super().zero_grad(*args, **kwargs)
