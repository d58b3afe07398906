"""What both distributed optimizers (optimizer.py, adasum_optimizer.py) do
alike, as methods of theirs (each function takes the optimizer as `self`):
name the parameters, hook their gradient accumulators so that a unit of
parameters is submitted once backward has produced its gradients
(backward_passes_per_step times), and refuse zero_grad() while reductions
are in flight."""
import torch


def parameter_names(self, named_parameters):
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


def register_hooks(self, trainable):
    with torch.enable_grad():
        for p in trainable:
            # The AccumulateGrad node: its hook runs once p.grad is final.
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
            accumulator.register_hook(self._make_hook(p))
            self._grad_accumulators.append(accumulator)


def make_hook(self, p):
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
    return super(self.__class__, self).zero_grad(*args, **kwargs)
