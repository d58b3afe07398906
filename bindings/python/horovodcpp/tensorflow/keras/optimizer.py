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
from horovodcpp.tensorflow.gradients import GradientReducer, check_options


class _DistributedOptimizer:
    # Mixed in before the wrapped optimizer's class; _hvd_reducer is set
    # on the created class.

    def apply(self, grads, trainable_variables=None):
        if trainable_variables is not None:
            trainable_variables = list(trainable_variables)
        grads = self._hvd_reducer(list(grads), trainable_variables)
        return super().apply(grads, trainable_variables)

    def register_local_var(self, var):
        """The gradient of `var` is not combined over the ranks."""
        self._hvd_reducer.register_local(var)


def _distributed_class(cls, reducer):
    # Public Keras optimizers serialize as "keras.optimizers.<Name>".
    public = getattr(keras.optimizers, cls.__name__, None) is cls
    return type(cls.__name__, (_DistributedOptimizer, cls),
                {"__module__": "keras.optimizers" if public else cls.__module__,
                 "_hvd_reducer": reducer})


def DistributedOptimizer(optimizer, name=None, device_dense='', device_sparse='',
                         compression=Compression.none, sparse_as_dense=False,
                         gradient_predivide_factor=1.0, op=Average, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=global_process_set, scale_local_gradients=True):
    """A copy of the Keras `optimizer` (same class and configuration) whose
    gradients are combined over all ranks with `op` (Average) before they
    are applied, eagerly or in model.fit's compiled step.

    compression, sparse_as_dense, gradient_predivide_factor, groups: see
    horovodcpp.tensorflow.gradients.GradientReducer. name: prefix of the
    allreduce names (default "Distributed<Class>"). backward_passes_per_step
    other than 1 is not supported: set the Keras optimizer's own
    gradient_accumulation_steps instead (gradients are then combined every
    step and accumulated after). device_dense and device_sparse are accepted
    for Horovod's signature."""
    if backward_passes_per_step != 1 or average_aggregated_gradients:
        raise NotImplementedError(
            "backward_passes_per_step > 1 is not supported; use the Keras optimizer's "
            "gradient_accumulation_steps")
    if isinstance(optimizer, _DistributedOptimizer):
        raise ValueError("optimizer is already a DistributedOptimizer")
    groups = check_options(op, gradient_predivide_factor, num_groups, groups)
    reducer = GradientReducer(name or "Distributed" + type(optimizer).__name__, compression,
                              sparse_as_dense, op, gradient_predivide_factor, groups, process_set,
                              scale_local_gradients)
    return _distributed_class(type(optimizer), reducer).from_config(optimizer.get_config())


def load_model(filepath, custom_optimizers=None, custom_objects=None,
               compression=Compression.none):
    """keras.models.load_model whose optimizer (any keras.optimizers class,
    or one of `custom_optimizers`) comes back wrapped in a
    DistributedOptimizer, with its saved state."""
    classes = [c for c in vars(keras.optimizers).values()
               if isinstance(c, type) and issubclass(c, keras.optimizers.Optimizer)]
    objects = {c.__name__: _distributed_class(c, GradientReducer(
        "Distributed" + c.__name__, compression)) for c in classes + list(custom_optimizers or [])}
    objects.update(custom_objects or {})
    return keras.models.load_model(filepath, custom_objects=objects)
