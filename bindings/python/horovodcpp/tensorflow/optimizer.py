"""hvd.DistributedOptimizer of horovod.tensorflow: a Keras optimizer is
wrapped by horovodcpp.tensorflow.keras.DistributedOptimizer; a
tf.compat.v1.train.Optimizer gets its gradients combined in
compute_gradients()."""
import tensorflow as tf

from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow.compression import Compression
from horovodcpp.tensorflow.gradient_aggregation import GradientAggregation
from horovodcpp.tensorflow.gradients import GradientReducer, check_options


class _LegacyDistributedOptimizer(tf.compat.v1.train.Optimizer):
    """A tf.compat.v1.train.Optimizer whose compute_gradients() combines the
    gradients over the ranks; everything else is the wrapped optimizer's."""

    def __init__(self, optimizer, name, use_locking, reducer, aggregation):
        super().__init__(name=name, use_locking=use_locking)
        self._optimizer = optimizer
        self._reducer = reducer
        self._aggregation = aggregation

    def compute_gradients(self, *args, **kwargs):
        grads_and_vars = self._optimizer.compute_gradients(*args, **kwargs)
        grads, variables = zip(*grads_and_vars)
        if self._aggregation is None:
            return list(zip(self._reducer(grads, variables), variables))
        return list(zip(self._aggregation.compute(grads, variables), variables))

    def register_local_var(self, var):
        """The gradient of `var` is not combined over the ranks."""
        self._reducer.register_local(var)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        if self._aggregation is None:
            return self._optimizer.apply_gradients(grads_and_vars, global_step, name)
        grads_and_vars = list(grads_and_vars)
        return self._aggregation.apply(
            lambda: self._optimizer.apply_gradients(grads_and_vars, global_step, name),
            lambda: None if global_step is None else global_step.assign_add(1))

    def get_slot(self, *args, **kwargs):
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args, **kwargs):
        return self._optimizer.variables(*args, **kwargs)


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense='',
                         device_sparse='', compression=Compression.none, sparse_as_dense=False,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """Wraps a Keras optimizer (see horovodcpp.tensorflow.keras) or a
    tf.compat.v1.train.Optimizer so that the gradients it applies are
    combined over the ranks of `process_set` with `op` (Average). See
    gradients.GradientReducer for compression, sparse_as_dense,
    gradient_predivide_factor, groups and process_set, and
    gradient_aggregation.py for backward_passes_per_step > 1 and
    average_aggregated_gradients."""
    import keras

    if isinstance(optimizer, keras.optimizers.Optimizer):
        from horovodcpp.tensorflow import keras as hvd_keras
        return hvd_keras.DistributedOptimizer(
            optimizer, name=name, compression=compression, sparse_as_dense=sparse_as_dense,
            gradient_predivide_factor=gradient_predivide_factor, op=op,
            backward_passes_per_step=backward_passes_per_step,
            average_aggregated_gradients=average_aggregated_gradients, num_groups=num_groups,
            groups=groups, process_set=process_set, scale_local_gradients=scale_local_gradients)
    if not isinstance(optimizer, tf.compat.v1.train.Optimizer):
        raise ValueError("Provided optimizer doesn't inherit from either legacy TensorFlow or "
                         "Keras optimizer: %s" % optimizer)
    groups = check_options(op, gradient_predivide_factor, num_groups, groups)
    name = name or "Distributed{}".format(type(optimizer).__name__)
    reducer = GradientReducer(name, compression, sparse_as_dense, op, gradient_predivide_factor,
                              groups, process_set, scale_local_gradients)
    aggregation = GradientAggregation.of(backward_passes_per_step, reducer,
                                         average_aggregated_gradients, sparse_as_dense)
    return _LegacyDistributedOptimizer(optimizer, name, use_locking, reducer, aggregation)
