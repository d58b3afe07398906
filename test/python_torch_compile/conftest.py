"""Every test file runs on every rank under hvdrun with a PyTorch that has
torch.library.custom_op (the PyPI venv of scripts/setup.sh): all ranks run
the same tests in the same order, so their collectives meet."""
import pytest

import horovodcpp.torch as hvd


@pytest.fixture(scope="session", autouse=True)
def horovod():
    hvd.init()
    yield
    hvd.shutdown()
