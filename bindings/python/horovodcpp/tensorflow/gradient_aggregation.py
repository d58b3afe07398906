"""GradientAggregation: Horovod's backward_passes_per_step for the
DistributedOptimizers. Gradients are summed locally over
backward_passes_per_step steps and combined over the ranks on the last one
(divided by backward_passes_per_step with average_aggregated_gradients);
the optimizer applies them then, and on the other steps only counts the
step (its iterations, or the global step). The state lives in variables
and the branches are tf.cond, taken alike on every rank, so it works
eagerly and inside tf.function."""
import tensorflow as tf


class GradientAggregation:

    @classmethod
    def of(cls, backward_passes_per_step, reducer, average_aggregated_gradients,
           sparse_as_dense):
        """The aggregation for these options; None for one backward pass per
        step."""
        if backward_passes_per_step == 1:
            return None
        return cls(backward_passes_per_step, reducer, average_aggregated_gradients,
                   sparse_as_dense)

    def __init__(self, backward_passes_per_step, reducer, average_aggregated_gradients,
                 sparse_as_dense):
        if backward_passes_per_step <= 0:
            raise ValueError("backward_passes_per_step must be > 0")
        self.steps = backward_passes_per_step
        self.reducer = reducer
        self.average = average_aggregated_gradients
        self.sparse_as_dense = sparse_as_dense
        self.counter = None  # backward passes summed since the last combination
        self.sums = None  # one variable per gradient that is not None

    def _dense(self, grad):
        if isinstance(grad, tf.IndexedSlices):
            if not self.sparse_as_dense:
                raise ValueError("IndexedSlices are not supported when `backward_passes_per_step` "
                                 "> 1 and `sparse_as_dense` is False.")
            return tf.convert_to_tensor(grad)
        return grad

    def compute(self, grads, variables=None):
        """Adds `grads` to the sums; returns them combined over the ranks on
        every backward_passes_per_step-th call, else `grads` unchanged."""
        grads = [None if g is None else self._dense(g) for g in grads]
        present = [i for i, g in enumerate(grads) if g is not None]
        if self.sums is None:
            with tf.init_scope():  # created once, outside any tf.function
                self.counter = tf.Variable(0, dtype=tf.int64, trainable=False,
                                           name="hvd_aggregation_counter")
                self.sums = [tf.Variable(tf.zeros(grads[i].shape, grads[i].dtype),
                                         trainable=False, name="hvd_aggregated_{}".format(i))
                             for i in present]
        tf.cond(tf.equal(self.counter, 0), self._clear, tf.no_op)
        for total, i in zip(self.sums, present):
            total.assign_add(grads[i])
        self.counter.assign_add(1)

        def combine():
            reduced = self.reducer(self._full([s.read_value() for s in self.sums], present,
                                              len(grads)), variables)
            self.counter.assign(0)
            divisor = self.steps if self.average else 1
            return [reduced[i] / tf.cast(divisor, reduced[i].dtype) for i in present]

        combined = tf.cond(tf.equal(self.counter, self.steps), combine,
                           lambda: [grads[i] for i in present])
        return self._full(list(combined), present, len(grads))

    def apply(self, apply_fn, count_step_fn):
        """apply_fn() on the steps where compute() combined the gradients,
        else count_step_fn()."""
        def applied():
            apply_fn()
            return tf.constant(True)

        def counted():
            count_step_fn()
            return tf.constant(False)
        return tf.cond(tf.equal(self.counter, 0), applied, counted)

    def _clear(self):
        for total in self.sums:
            total.assign(tf.zeros_like(total))
        return tf.no_op()

    @staticmethod
    def _full(values, present, length):
        full = [None] * length
        for i, value in zip(present, values):
            full[i] = value
        return full
