"""GradientReducer: combines a list of gradients over the ranks, what
DistributedGradientTape and the DistributedOptimizers share. Each gradient
(or group) is its own collective op; the ops run at once and the core fuses
them (eagerly the list runs as one cached tf.function, see
bridge.as_graph). Gradients are named by their position in the list
(variable names may differ between ranks, e.g. Keras' "dense_3"), the same
every step, so the response cache serves them."""
import collections
import functools

import tensorflow as tf

from horovodcpp.common.basics import Average, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import gradient_groups, split_evenly
from horovodcpp.tensorflow import bridge, kernels
from horovodcpp.tensorflow.util import legacy_keras, vars_to_refs
from horovodcpp.tensorflow.compression import Compression


def check_options(op, gradient_predivide_factor, num_groups, groups):
    """Horovod's argument rules; returns the effective `groups`."""
    return gradient_groups(op, gradient_predivide_factor, num_groups, groups, "tf.Variable")


def local_layer_weights(local_layers):
    """The trainable weights of `local_layers` (None, a Keras layer or a list
    of them): what the Partial tape and optimizer keep local."""
    import keras

    if local_layers is None:
        return []
    # Keras 3's layers, and tf_keras's where tf.keras is Keras 2: a tape
    # works on the variables of either.
    legacy = legacy_keras()
    layer_types = (keras.layers.Layer,) + (() if legacy is None else (legacy.layers.Layer,))
    if isinstance(local_layers, layer_types):
        local_layers = [local_layers]
    if not all(isinstance(layer, layer_types) for layer in local_layers):
        raise ValueError("All local layers must be of tf.keras.layers.Layer type.")
    return [variable for layer in local_layers for variable in layer.trainable_weights]


class GradientReducer:
    """reducer(grads, variables) -> grads combined with `op` over the ranks
    of `process_set`.

    compression: Compression.none/fp16/bf16 for the transfer.
    sparse_as_dense: tf.IndexedSlices gradients are made dense (else their
        values and indices are gathered).
    gradient_predivide_factor: with Average, divide by this before the sum
        and by size / factor after it.
    groups: an int (split the gradients into that many grouped allreduces)
        or lists of variables reduced together.
    Gradients of variables registered with register_local() stay local
    (divided by the set's size when scale_local_gradients). On a rank
    outside the process set, or a set of one rank, nothing is combined (as
    in Horovod)."""

    def __init__(self, name, compression=Compression.none, sparse_as_dense=False, op=Average,
                 gradient_predivide_factor=1.0, groups=None, process_set=global_process_set,
                 scale_local_gradients=True):
        bridge.set_id(process_set)
        self.name = name
        self.compression = compression
        self.sparse_as_dense = sparse_as_dense
        self.op = op
        self.prescale, self.postscale = 1.0, 1.0
        if op == Average:  # the core divides by size for Average
            self.prescale = 1.0 / gradient_predivide_factor
            self.postscale = gradient_predivide_factor
        self.groups = groups
        self.process_set = process_set
        self.scale_local_gradients = scale_local_gradients
        self._local = set()

    def register_local(self, variable):
        self._local.add(variable_key(variable))

    def is_local(self, variable):
        return variable is not None and variable_key(variable) in self._local

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
        local = [i for i, g in enumerate(grads) if g is not None and self.is_local(var(i))]
        shared = [i for i, g in enumerate(grads) if g is not None and i not in local]
        results = list(grads)
        size = self.process_set.size()
        if self.scale_local_gradients and size > 1:
            for i in local:
                results[i] = _divide(grads[i], size)
        if not self.process_set.included() or size == 1 or not shared:
            return results
        sparse = tuple(i for i in shared if isinstance(grads[i], tf.IndexedSlices))
        if sparse and self.op not in (Sum, Average):
            raise NotImplementedError("Only Sum and Average ops are supported with "
                                      "tf.IndexedSlices; use sparse_as_dense=True")
        dense = [i for i in shared if i not in sparse]
        units = tuple(tuple(u) for u in self._units(dense, variables))
        plan = _Plan(self.name, self.compression, self.op, self.prescale, self.postscale,
                     self.process_set, units, sparse)
        reduced = bridge.as_graph(plan, functools.partial(_reduce, plan),
                                  [grads[i] if i in shared else None for i in range(len(grads))])
        for i in shared:
            results[i] = reduced[i]
        return results


# What one reduction does (hashable: bridge.as_graph's key): units are tuples
# of dense gradient indices reduced together, sparse the indices of
# tf.IndexedSlices gradients.
_Plan = collections.namedtuple(
    "_Plan", "name compression op prescale postscale process_set units sparse")


def _reduce(plan, grads):
    """The gradients of `plan` combined; None elsewhere."""
    results = [None] * len(grads)

    def full(name):
        return bridge.collective_name("allreduce", "{}.{}".format(plan.name, name))
    for unit in plan.units:
        compressed, ctxs = zip(*[plan.compression.compress(grads[i]) for i in unit])
        if len(unit) == 1:
            reduced = [kernels.allreduce(compressed[0], full(unit[0]), plan.op, plan.prescale,
                                         plan.postscale, plan.process_set)]
        else:
            reduced = kernels.grouped_allreduce(list(compressed), full("group.{}".format(unit[0])),
                                                plan.op, plan.prescale, plan.postscale,
                                                plan.process_set)
        for i, r, ctx in zip(unit, reduced, ctxs):
            results[i] = plan.compression.decompress(r, ctx)
    for i in plan.sparse:
        values, indices = [kernels.allgather(getattr(grads[i], part),
                                             full("{}.{}".format(i, part)), plan.process_set)
                           for part in ("values", "indices")]
        if plan.op == Average:
            values = _divide(values, plan.process_set.size())
        results[i] = tf.IndexedSlices(values, indices, dense_shape=grads[i].dense_shape)
    return results


def variable_key(variable):
    """A hashable identity of a tf.Variable or Keras variable."""
    return vars_to_refs(variable)


def _divide(grad, n):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values / tf.cast(n, grad.values.dtype), grad.indices,
                                grad.dense_shape)
    return grad / tf.cast(n, grad.dtype)
