"""Every test file runs on every rank under hvdrun or torchrun (see
test/CMakeLists.txt), with a PyTorch the backend supports (the PyPI venv of
scripts/setup.sh): all ranks run the same tests in the same order.

The job's default group is horovodcpp's; `gloo` is a Gloo group of the same
ranks, the reference every training test compares against."""
import datetime

import pytest
import torch.distributed as dist

import horovodcpp.torch.distributed  # noqa: F401  (registers the backend)


@pytest.fixture(scope="session", autouse=True)
def process_group():
    dist.init_process_group("horovodcpp", timeout=datetime.timedelta(seconds=60))
    yield dist.group.WORLD
    dist.destroy_process_group()


@pytest.fixture(scope="session")
def gloo(process_group):
    return dist.new_group(backend="gloo")
