"""DistributedOptimizer for Keras (Keras 3 on TensorFlow, which is tf.keras
since TensorFlow 2.16) and load_model.

The wrapper is a subclass of the optimizer's own class, created on the fly,
whose apply() (reached from apply_gradients() and model.fit) combines the
gradients over the ranks before the wrapped optimizer clips and applies
them. It keeps the class name and serializes as the wrapped class, so a
saved model loads without horovodcpp as the plain optimizer."""
import keras

from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow.compression import Compression
from horovodcpp.tensorflow.gradient_aggregation import GradientAggregation
from horovodcpp.tensorflow.gradients import GradientReducer, check_options, local_layer_weights


class _DistributedOptimizer:
    # Mixed in before the wrapped optimizer's class; _hvd_reducer and
    # _hvd_aggregation (None, or backward_passes_per_step's) are set on the
    # created class.

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is not None:
            trainable_variables = list(trainable_variables)
        if self._hvd_aggregation is None:
            return super().apply(self._hvd_reducer(list(grads), trainable_variables),
                                 trainable_variables)
        if not self.built:  # not inside the tf.cond below
            self.build(trainable_variables)
        grads = self._hvd_aggregation.compute(list(grads), trainable_variables)
        self._hvd_aggregation.apply(lambda: super(_DistributedOptimizer, self).apply(
            grads, trainable_variables), lambda: self.iterations.assign_add(1))

    def register_local_var(self, var):
        """The gradient of `var` is not combined over the ranks."""
        self._hvd_reducer.register_local(var)


def _distributed_class(cls, reducer, aggregation=None):
    # Public Keras optimizers serialize as "keras.optimizers.<Name>".
    public = getattr(keras.optimizers, cls.__name__, None) is cls
    return type(cls.__name__, (_DistributedOptimizer, cls),
                {"__module__": "keras.optimizers" if public else cls.__module__,
                 "_hvd_reducer": reducer, "_hvd_aggregation": aggregation})


def DistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """A copy of the Keras `optimizer` (same class and configuration) whose
    gradients are combined over all ranks with `op` (Average) before they
    are applied, eagerly or in model.fit's compiled step.

    compression, sparse_as_dense, gradient_predivide_factor, groups,
    process_set: see horovodcpp.tensorflow.gradients.GradientReducer. name:
    prefix of the allreduce names (default "Distributed<Class>").
    backward_passes_per_step > 1: gradients are summed locally and combined
    and applied every backward_passes_per_step steps (divided by it with
    average_aggregated_gradients; see gradient_aggregation.py).
    device_dense and device_sparse are accepted for Horovod's signature."""
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("optimizer is already a DistributedOptimizer")
    groups = check_options(op, gradient_predivide_factor, num_groups, groups)
    reducer = GradientReducer(name or "Distributed" + type(optimizer).__name__, compression,
                              sparse_as_dense, op, gradient_predivide_factor, groups, process_set,
                              scale_local_gradients)
    aggregation = GradientAggregation.of(backward_passes_per_step, reducer,
                                         average_aggregated_gradients, sparse_as_dense)
    return _distributed_class(type(optimizer), reducer, aggregation).from_config(
        optimizer.get_config())


def PartialDistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                                compression=Compression.none, sparse_as_dense=False,
                                gradient_predivide_factor=1.0, op=Average,
                                backward_passes_per_step=1, average_aggregated_gradients=False,
                                groups=None, process_set=global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer whose gradients of the trainable weights of
    `local_layers` (a Keras layer or a list of them) stay local, as with
    register_local_var()."""
    optimizer = DistributedOptimizer(
        optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
        gradient_predivide_factor, op, backward_passes_per_step, average_aggregated_gradients,
        groups=groups, process_set=process_set, scale_local_gradients=scale_local_gradients)
    for variable in local_layer_weights(local_layers):
        optimizer.register_local_var(variable)
    return optimizer


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none, legacy_opts=False):
    """keras.models.load_model whose optimizer (any keras.optimizers class,
    or one of `custom_optimizers`) comes back wrapped in a
    DistributedOptimizer, with its saved state. legacy_opts is accepted for
    Horovod's signature (Keras 3 has no legacy optimizers)."""
    classes = [c for c in vars(keras.optimizers).values()
               if isinstance(c, type) and issubclass(c, keras.optimizers.Optimizer)]
    objects = {c.__name__: _distributed_class(c, GradientReducer(
        "Distributed" + c.__name__, compression)) for c in classes + list(custom_optimizers or [])}
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)
