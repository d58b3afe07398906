"""DistributedGradientTape: a tf.GradientTape whose gradient() returns the
gradients combined over the ranks (averaged by default)."""
import tensorflow as tf

from horovodcpp.common.basics import Average
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.tensorflow.compression import Compression
from horovodcpp.tensorflow.gradients import GradientReducer, check_options, local_layer_weights


class _DistributedGradientTape(tf.GradientTape):
    # Mixed in before the wrapped tape's class by DistributedGradientTape().

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE, use_generic_names=False):
        # use_generic_names (Horovod's): gradients are always named by position.
        grads = super().gradient(target, sources, output_gradients, unconnected_gradients)
        flat_sources = tf.nest.flatten(sources)
        reduced = self._hvd_reducer(tf.nest.flatten(grads), flat_sources)
        return tf.nest.pack_sequence_as(grads, reduced)

    def register_local_source(self, source):
        """The gradient of `source` is not combined over the ranks (it is
        divided by the number of ranks when scale_local_gradients)."""
        self._hvd_reducer.register_local(source)

    def get_local_and_global_gradients(self, target, sources, output_gradients=None,
                                       use_generic_names=False):
        """gradient() of a list of `sources`, split as Horovod does: the
        (source, gradient) pairs of the registered local sources, then those
        of the others, each in the order of `sources`."""
        grads = self.gradient(target, sources, output_gradients,
                              use_generic_names=use_generic_names)
        pairs = list(zip(sources, grads))
        local = [pair for pair in pairs if self._hvd_reducer.is_local(pair[0])]
        return local, [pair for pair in pairs if not self._hvd_reducer.is_local(pair[0])]


def DistributedGradientTape(gradtape, device_dense='', device_sparse='',
                            compression=Compression.none, sparse_as_dense=False, op=Average,
                            gradient_predivide_factor=1.0, num_groups=0, groups=None,
                            process_set=global_process_set, scale_local_gradients=True):
    """Wraps `gradtape` (used or not yet) so that gradient() combines the
    gradients over all ranks with `op` (Average), eagerly or in tf.function:

        with tf.GradientTape() as tape:
            loss = ...
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)

    compression, sparse_as_dense, gradient_predivide_factor, groups,
    process_set, scale_local_gradients: see gradients.GradientReducer.
    device_dense and device_sparse are accepted for Horovod's signature
    (tensors are CPU tensors)."""
    groups = check_options(op, gradient_predivide_factor, num_groups, groups)
    cls = type(gradtape.__class__.__name__, (_DistributedGradientTape, gradtape.__class__), {})
    tape = cls.__new__(cls)
    # The same recording: the wrapper shares the tape's state.
    tape.__dict__.update(gradtape.__dict__)
    tape._hvd_reducer = GradientReducer("DistributedGradientTape", compression, sparse_as_dense,
                                        op, gradient_predivide_factor, groups, process_set,
                                        scale_local_gradients)
    return tape


def PartialDistributedGradientTape(gradtape, device_dense='', device_sparse='',
                                   compression=Compression.none, sparse_as_dense=False, op=Average,
                                   gradient_predivide_factor=1.0, num_groups=0, groups=None,
                                   process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape whose gradients of the trainable weights of
    `local_layers` (a Keras layer or a list of them) stay local, as with
    register_local_source()."""
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression,
                                   sparse_as_dense, op, gradient_predivide_factor, num_groups,
                                   groups, process_set, scale_local_gradients)
    for variable in local_layer_weights(local_layers):
        tape.register_local_source(variable)
    return tape
