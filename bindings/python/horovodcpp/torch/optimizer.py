"""DistributedOptimizer: wraps a torch optimizer so that each gradient is
averaged over the ranks. Each gradient's allreduce starts from a hook on its
parameter's gradient accumulator as soon as backward has produced it, so
communication overlaps the rest of backward; step() waits for them. At one
rank (hvd.size() == 1, not elastic) no hooks are registered, as in Horovod:
step() reduces every gradient, submitted together and so fused."""
import os

import torch

from horovodcpp import _core
from horovodcpp.common.basics import Adasum, Average
from horovodcpp.common.process_sets import core_set, global_process_set
from horovodcpp.common.util import gradient_groups
from horovodcpp.torch import core_ops
from horovodcpp.torch.adasum_optimizer import distributed_adasum_optimizer
from horovodcpp.torch.compression import Compression
from horovodcpp.torch.gradient_hooks import HookedOptimizer
from horovodcpp.torch.handles import synchronize
from horovodcpp.torch.reducing_compressor import reduces_itself, start_reductions
from horovodcpp.torch.sharded_optimizer import sharded_optimizer

# The contexts of a gradient reduced alone in place, uncompressed: nothing
# to decompress, the result is the gradient itself.
_IN_PLACE = object()


class _DistributedOptimizer(torch.optim.Optimizer):
    # Mixed into the wrapped optimizer's class by DistributedOptimizer().
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression
        self._compression_reduces = reduces_itself(compression)
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._parameter_names = self._names_of(named_parameters)

        trainable = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        self._build_units(trainable, groups, backward_passes_per_step)
        self._handles = {}  # unit -> (handle, compression contexts)
        self._synchronized = False
        self._should_synchronize = True
        self._grad_accumulators = []  # keeps the hooked nodes alive
        # Outside the process set, step() is the wrapped optimizer's alone.
        # (included() also refuses a set that is not registered.)
        if process_set.included() is None:
            raise ValueError("DistributedOptimizer: {} is not registered: pass it to "
                             "hvd.init(process_sets=...) or hvd.add_process_set()".format(
                                 process_set))
        # As Horovod: at one rank (not elastic) there is nothing to overlap
        # with; synchronize() reduces every gradient at step(), fused.
        if process_set.included() and (_core.size() > 1 or
                                       os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks(trainable)

    def _scale_factors(self):
        """Average: divide by the predivide factor before the sum and by
        size / factor after it (the core divides by size for Average)."""
        if self.op == Average:
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _submit(self, units):
        """Starts the allreduces of `units`; the single dense gradients among
        them in one call (each its own allreduce)."""
        if len(units) == 1 and len(units[0]) == 1 and self._compression is Compression.none:
            # A hook's gradient, uncompressed: to the core's direct call
            # where it takes the tensor (a training step runs this once per
            # parameter, on the thread that queues the backward pass's work).
            unit = units[0]
            grad = unit[0].grad
            if grad is not None and not grad.is_sparse:
                prescale, postscale = self._scale_factors()
                handle = core_ops._allreduce_async(grad, grad, self._parameter_names[unit[0]],
                                                   self.op, prescale, postscale,
                                                   core_set(self.process_set))
                self._handles[unit] = (handle, _IN_PLACE)
                return
        prescale, postscale = self._scale_factors()
        singles = []  # (unit, compressed gradient, compression contexts)
        for unit in units:
            for p in unit:
                if p.grad is None:  # unused in this step: contributes zeros
                    p.grad = torch.zeros_like(p)
            name = self._parameter_names[unit[0]]
            if unit[0].grad.is_sparse and not self.sparse_as_dense and len(unit) == 1:
                handle = core_ops.sparse_allreduce_async(unit[0].grad, name, self.op,
                                                        self.process_set)
                self._handles[unit] = (handle, None)
                continue
            # Sparse gradients reduced as dense ones (sparse_as_dense, or in a
            # group) become sparse again in synchronize(), as in Horovod.
            grads = [p.grad.to_dense() if p.grad.is_sparse else p.grad for p in unit]
            if self._compression_reduces:  # each tensor by the compressor, as it defines
                finish = start_reductions(self._compression, grads,
                                          [self._parameter_names[p] for p in unit], self.op,
                                          prescale, postscale, self.process_set)
                self._handles[unit] = (finish, (None,) * len(unit))
                continue
            compressed, ctxs = zip(*[self._compression.compress(g) for g in grads])
            if len(unit) == 1:
                singles.append((unit, compressed[0], ctxs))
                continue
            handle = core_ops.grouped_allreduce_async_(
                list(compressed), name="group." + name, op=self.op, prescale_factor=prescale,
                postscale_factor=postscale, process_set=self.process_set)
            self._handles[unit] = (handle, ctxs)
        if singles:
            handles = core_ops.allreduce_async_many_(
                [grad for _, grad, _ in singles],
                [self._parameter_names[unit[0]] for unit, _, _ in singles], op=self.op,
                prescale_factor=prescale, postscale_factor=postscale,
                process_set=self.process_set)
            for (unit, _, ctxs), handle in zip(singles, handles):
                self._handles[unit] = (handle, ctxs)

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hook has
        not fired: unused parameters, or fewer than backward_passes_per_step
        passes) and stores the averaged gradients in p.grad. Outside the
        optimizer's process set this does nothing."""
        if not self.process_set.included():
            self._synchronized = True
            return
        self._submit([unit for unit in self._units if unit not in self._handles])
        try:
            for unit, (handle, ctxs) in self._handles.items():
                if ctxs is _IN_PLACE:
                    synchronize(handle)
                    continue
                # sparse, or a compressor that reduces itself: a function
                outputs = handle() if callable(handle) else synchronize(handle)
                if ctxs is None:  # sparse: the gathered gradient replaces p.grad
                    unit[0].grad = outputs
                    continue
                if len(unit) == 1 and not self._compression_reduces:
                    outputs = [outputs]  # one tensor, not a group's list
                for p, output, ctx in zip(unit, outputs, ctxs):
                    result = self._compression.decompress(output, ctx)
                    if p.grad.is_sparse:
                        p.grad = result.to_sparse()
                    elif result is not p.grad:  # compressed: reduced in a copy
                        p.grad.copy_(result)
        finally:
            # Done, or failed (a rank died): either way the step's
            # allreduces are over, and the next backward starts afresh
            # (hvd.elastic.run retries after a failure).
            self._reset_reductions()
        self._synchronized = True

    def load_state_dict(self, *args, **kwargs):
        """The wrapped optimizer's, forgetting gradients not yet synchronized
        (as Horovod does: a restored optimizer starts a new step)."""
        self._reset_reductions()
        self._synchronized = False
        self._should_synchronize = True
        return super(self.__class__, self).load_state_dict(*args, **kwargs)

    def step(self, closure=None):
        self._synchronize_for_step()
        return super(self.__class__, self).step(closure)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set, sharding=0):
    """Wraps `optimizer` (of any torch.optim class) so that step() uses
    gradients reduced with `op` (Average) over all ranks, or over the ranks
    of `process_set` (on other ranks, step() only runs `optimizer`'s step).
    With op=Adasum each rank steps on its own gradients and the parameter
    changes are combined with Adasum (adasum_optimizer.py).

    named_parameters: model.named_parameters(), to name each allreduce.
    compression: Compression.none, .fp16 or .bf16 for the transfer, or an
        instance of Compression.twobit or Compression.powersgd (one per
        optimizer: it keeps each gradient's state; docs/compression.md).
    backward_passes_per_step: backward passes accumulated locally per step.
    gradient_predivide_factor: with Average, gradients are divided by this
        before the sum and by size / factor after it.
    groups: an int (split the parameters into that many groups) or a list of
        lists of parameters; each group is reduced by one grouped allreduce.
    sparse_as_dense: reduce sparse gradients as dense tensors (else they are
        gathered as indices and values).
    sharding: 1 or 2 splits the optimizer's state over the ranks (ZeRO stage
        1), and with 2 the gradients too (stage 2): see sharded_optimizer.py
        and docs/sharding.md.
    """
    groups = gradient_groups(op, gradient_predivide_factor, num_groups, groups, "torch.Tensor")
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    if sharding:
        return sharded_optimizer(optimizer, named_parameters, sharding, compression,
                                 backward_passes_per_step, op, gradient_predivide_factor, groups,
                                 sparse_as_dense, process_set)
    # Adasum of one rank is the identity; a set that is not registered (size
    # None) is refused by _DistributedOptimizer.
    if op == Adasum and reduces_itself(compression):
        raise ValueError("op=Adasum combines parameter changes, not gradients: use "
                         "Compression.none, .fp16 or .bf16 with it")
    if op == Adasum and process_set.size() not in (None, 1):
        return distributed_adasum_optimizer(optimizer, named_parameters, compression,
                                            backward_passes_per_step, process_set)
    cls = type(optimizer.__class__.__name__, (HookedOptimizer, optimizer.__class__),
               dict(_DistributedOptimizer.__dict__))
    distributed = cls(optimizer.param_groups, named_parameters, compression,
                      backward_passes_per_step, op, gradient_predivide_factor, groups,
                      sparse_as_dense, process_set)
    distributed.state = optimizer.state  # keep any state already loaded
    return distributed
