"""Every test file runs on every rank under hvdrun (see test/CMakeLists.txt):
all ranks run the same tests in the same order, so their collectives meet.
Run with the Python that has TensorFlow (scripts/setup.sh's venv)."""
import pytest

import horovodcpp.tensorflow as hvd


@pytest.fixture(scope="session", autouse=True)
def horovod():
    hvd.init()
    yield
    hvd.shutdown()


@pytest.fixture(params=["eager", "function"])
def mode(request):
    """Runs a test's collectives eagerly and inside tf.function."""
    return request.param
