"""Elastic training with horovodcpp.tensorflow, as horovod.tensorflow.elastic
(TensorFlow 2, eager; see horovodcpp.common.elastic for the loop):

    state = hvd.elastic.TensorFlowKerasState(model, optimizer, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        ...
        state.commit()
"""
import re

import numpy as np
import tensorflow as tf

from horovodcpp.common.basics import HorovodInternalError, init, rank, shutdown
from horovodcpp.common.elastic import (  # noqa: F401
    HostsUpdatedInterrupt, ObjectState, State, run_fn)
from horovodcpp.tensorflow.functions import (  # noqa: F401
    broadcast_object, broadcast_object_fn, broadcast_variables)

# How a horovodcpp failure reaches the caller through one of horovodcpp's
# TensorFlow ops (eagerly or inside a tf.function): the error codes the ops
# give a failed or shut-down rank (Aborted), a timeout (DeadlineExceeded) and
# a backend failure (Unknown), with the op's name in the message.
_FAILURE_CODES = (tf.errors.AbortedError, tf.errors.DeadlineExceededError, tf.errors.UnknownError)
_HOROVODCPP_OP = re.compile(r"\bHorovodcpp[A-Z]\w*")


def run(func):
    """Decorator for the training function func(state, ...), as
    horovodcpp.torch.elastic.run; a horovodcpp failure inside a tf.function
    (model.fit's train step) counts as the HorovodInternalError it was."""

    def wrapper(state, *args, **kwargs):
        try:
            return func(state, *args, **kwargs)
        except _FAILURE_CODES as e:
            if _HOROVODCPP_OP.search(e.message or "") or _HOROVODCPP_OP.search(str(e)):
                raise HorovodInternalError(e.message) from e
            raise

    return run_fn(wrapper, _reset)


def _reset():
    shutdown()
    init()


def _optimizer_variables(optimizer, model):
    """The optimizer's variables, built first where they are not yet (a new
    rank has not trained), so that every rank has the same list."""
    if not getattr(optimizer, "built", True) and getattr(model, "built", True):
        optimizer.build(model.trainable_variables)
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


class TensorFlowKerasState(ObjectState):
    """State of a Keras model and its optimizer (the model's own when
    `optimizer` is None), plus keyword arguments as attributes. The model
    must be built. `backend` is accepted for Horovod's signature."""

    def __init__(self, model, optimizer=None, backend=None, **kwargs):
        if not getattr(model, "built", True):
            raise ValueError("Model must be built first. Run `model.build(input_shape)`.")
        self.model = model
        self.optimizer = optimizer or model.optimizer
        self.backend = backend
        self._save_model()
        super(TensorFlowKerasState, self).__init__(bcast_object=broadcast_object, get_rank=rank,
                                                   **kwargs)

    def save(self):
        self._save_model()
        super(TensorFlowKerasState, self).save()

    def restore(self):
        self._load_model()
        super(TensorFlowKerasState, self).restore()

    def sync(self):
        broadcast_variables(self.model.variables, root_rank=0)
        if self.optimizer is not None:
            broadcast_variables(_optimizer_variables(self.optimizer, self.model), root_rank=0)
        self._save_model()
        super(TensorFlowKerasState, self).sync()

    def _variables(self):
        variables = list(self.model.variables)
        if self.optimizer is not None:
            variables += _optimizer_variables(self.optimizer, self.model)
        return variables

    def _save_model(self):
        self._saved = [np.array(v) for v in self._variables()]

    def _load_model(self):
        for variable, value in zip(self._variables(), self._saved):
            variable.assign(value)


class TensorFlowState(ObjectState):
    """State of a list of tf.Variables (eager TensorFlow 2), plus keyword
    arguments as attributes. `session` is accepted for Horovod's signature
    (TensorFlow 1 sessions are not supported)."""

    def __init__(self, variables=None, session=None, **kwargs):
        if variables is None:
            raise ValueError("TensorFlowState needs the variables to keep (TensorFlow 2 has no "
                             "global variable collection)")
        self.variables = list(variables)
        self._save_model()
        super(TensorFlowState, self).__init__(bcast_object=broadcast_object, get_rank=rank,
                                              **kwargs)

    def save(self):
        self._save_model()
        super(TensorFlowState, self).save()

    def restore(self):
        for variable, value in zip(self.variables, self._values):
            variable.assign(value)
        super(TensorFlowState, self).restore()

    def sync(self):
        broadcast_variables(self.variables, root_rank=0)
        self._save_model()
        super(TensorFlowState, self).sync()

    def _save_model(self):
        self._values = [np.array(v) for v in self.variables]
