"""horovod.tensorflow.util's helpers that user code and Horovod's tests
call: whether TensorFlow executes eagerly, and variables as hashable
references (for dicts and sets keyed by variable); and which Keras tf.keras
is."""
import tensorflow as tf


def legacy_keras():
    """tf.keras when it is tf_keras (Keras 2, under TF_USE_LEGACY_KERAS=1),
    else None: Keras 3, or that flag without tf_keras, where tf.keras cannot
    be imported."""
    try:
        keras_module = tf.keras
    except ImportError:
        return None
    return keras_module if keras_module.__name__.startswith("tf_keras") else None


def _executing_eagerly():
    return tf.executing_eagerly()


class _VariableRef:
    """A hashable reference to a variable without .ref() (a Keras 3
    Variable), with deref() as tf.Variable's reference has."""

    def __init__(self, variable):
        self._variable = variable

    def __hash__(self):
        return id(self._variable)

    def __eq__(self, other):
        return isinstance(other, _VariableRef) and other._variable is self._variable

    def deref(self):
        return self._variable


def vars_to_refs(variables):
    """A variable's hashable reference (a list of them: a tuple, nested)."""
    if isinstance(variables, list):
        return tuple(vars_to_refs(v) for v in variables)
    return variables.ref() if hasattr(variables, "ref") else _VariableRef(variables)


def refs_to_vars(refs):
    """The variables of vars_to_refs' references (a tuple: a list, nested)."""
    if isinstance(refs, tuple):
        return [refs_to_vars(r) for r in refs]
    return refs.deref()
