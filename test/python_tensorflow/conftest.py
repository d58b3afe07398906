"""Every test file runs on every rank under hvdrun (see test/CMakeLists.txt):
all ranks run the same tests in the same order, so their collectives meet.
Run with the Python that has TensorFlow (scripts/setup.sh's venv)."""
import pytest
import tensorflow as tf

import horovodcpp.tensorflow as hvd

# Fewer inter-op threads than the tests have collectives in flight (at most
# this many TensorFlow ops run at once): blocking one per collective would
# deadlock (see bridge.py). Set before TensorFlow starts its runtime.
INTER_OP_THREADS = 2
tf.config.threading.set_inter_op_parallelism_threads(INTER_OP_THREADS)


@pytest.fixture(scope="session", autouse=True)
def horovod():
    hvd.init()
    yield
    hvd.shutdown()


@pytest.fixture(params=["eager", "function"])
def mode(request):
    """Runs a test's collectives eagerly and inside tf.function."""
    return request.param
