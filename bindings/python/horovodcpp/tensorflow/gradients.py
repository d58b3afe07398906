"""GradientReducer: combines a list of gradients over the ranks, what
DistributedGradientTape and the DistributedOptimizers share. The whole list
is one batched operation (one op inside tf.function): every allreduce is
submitted before any is waited for, so the core fuses them. Gradients are
named by their position in the list (variable names may differ between
ranks, e.g. Keras' "dense_3"), the same every step, so the response cache
serves them."""
import tensorflow as tf

from horovodcpp import _core
from horovodcpp.common.basics import Average, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import gradient_groups, split_evenly
from horovodcpp.tensorflow import bridge, mpi_ops
from horovodcpp.tensorflow.compression import Compression


def check_options(op, gradient_predivide_factor, num_groups, groups):
    """Horovod's argument rules; returns the effective `groups`."""
    return gradient_groups(op, gradient_predivide_factor, num_groups, groups, "tf.Variable")


class GradientReducer:
    """reducer(grads, variables) -> grads combined with `op` over the ranks.

    compression: Compression.none/fp16/bf16 for the transfer.
    sparse_as_dense: tf.IndexedSlices gradients are made dense (else their
        values and indices are gathered).
    gradient_predivide_factor: with Average, divide by this before the sum
        and by size / factor after it.
    groups: an int (split the gradients into that many grouped allreduces)
        or lists of variables reduced together.
    Gradients of variables registered with register_local() stay local
    (divided by size when scale_local_gradients)."""

    def __init__(self, name, compression=Compression.none, sparse_as_dense=False, op=Average,
                 gradient_predivide_factor=1.0, groups=None, process_set=global_process_set,
                 scale_local_gradients=True):
        bridge.check_process_set(process_set)
        self.name = name
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.prescale, self.postscale = 1.0, 1.0
        if op == Average:  # the core divides by size for Average
            self.prescale = 1.0 / gradient_predivide_factor
            self.postscale = gradient_predivide_factor
        self.groups = groups
        self.scale_local_gradients = scale_local_gradients
        self._local = set()

    def register_local(self, variable):
        self._local.add(variable.ref() if hasattr(variable, "ref") else id(variable))

    def _is_local(self, variable):
        return variable is not None and (
            variable.ref() if hasattr(variable, "ref") else id(variable)) in self._local

    def _units(self, indices, variables):
        """Lists of gradient indices reduced together."""
        if isinstance(self.groups, int) and self.groups > 0:
            return split_evenly(indices, self.groups)
        if isinstance(self.groups, list) and variables is not None:
            position = {id(variables[i]): i for i in indices}
            units = [[position.pop(id(v)) for v in group if id(v) in position]
                     for group in self.groups]
            return [u for u in units if u] + [[i] for i in indices if i in position.values()]
        return [[i] for i in indices]

    def __call__(self, grads, variables=None):
        grads = list(grads)
        if variables is not None:
            variables = list(variables)
        if self.sparse_as_dense:
            grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g
                     for g in grads]
        var = (lambda i: variables[i]) if variables is not None else (lambda i: None)
        local = [i for i, g in enumerate(grads) if g is not None and self._is_local(var(i))]
        shared = [i for i, g in enumerate(grads) if g is not None and i not in local]
        results = list(grads)
        if self.scale_local_gradients and _core.size() > 1:
            for i in local:
                results[i] = _divide(grads[i], _core.size())
        if _core.size() == 1 or not shared:
            return results
        sparse = [i for i in shared if isinstance(grads[i], tf.IndexedSlices)]
        dense = [i for i in shared if i not in sparse]
        collectives, finishers = [], []
        for unit in self._units(dense, variables):
            compressed, ctxs = zip(*[self.compression.compress(grads[i]) for i in unit])
            if len(unit) == 1:
                name = "{}.{}".format(self.name, unit[0])
                collectives.append(mpi_ops.allreduce_op(
                    compressed[0], self._full(name), self.op, self.prescale, self.postscale))
            else:
                name = "{}.group.{}".format(self.name, unit[0])
                collectives.append(mpi_ops.grouped_allreduce_op(
                    list(compressed), self._full(name), self.op, self.prescale, self.postscale))
            finishers.append((unit, ctxs))
        for i in sparse:
            self._check_sparse_op()
            for part in ("values", "indices"):
                name = "{}.{}.{}".format(self.name, i, part)
                collectives.append(mpi_ops.allgather_op(getattr(grads[i], part), self._full(name)))
        outputs = bridge.run(collectives)
        for (unit, ctxs), out in zip(finishers, outputs):
            for i, o, ctx in zip(unit, out, ctxs):
                results[i] = self.compression.decompress(o, ctx)
        gathered = outputs[len(finishers):]
        for k, i in enumerate(sparse):
            values, indices = gathered[2 * k][0], gathered[2 * k + 1][0]
            if self.op == Average:
                values = _divide(values, _core.size())
            results[i] = tf.IndexedSlices(values, indices, dense_shape=grads[i].dense_shape)
        return results

    def _full(self, name):
        return bridge.collective_name("allreduce", name)

    def _check_sparse_op(self):
        if self.op not in (Sum, Average):
            raise NotImplementedError("Only Sum and Average ops are supported with "
                                      "tf.IndexedSlices; use sparse_as_dense=True")


def _divide(grad, n):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(n, grad.values.dtype), grad.indices,
                                grad.dense_shape)
    return grad / tf.cast(n, grad.dtype)
