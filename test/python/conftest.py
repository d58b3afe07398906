"""Every test file runs on every rank under hvdrun (see test/CMakeLists.txt):
all ranks run the same tests in the same order, so their collectives meet."""
import pytest

import horovodcpp.torch as hvd


@pytest.fixture(scope="session", autouse=True)
def horovod():
    hvd.init()
    yield
    hvd.shutdown()
