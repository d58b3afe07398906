"""Each front end loads its framework before horovodcpp._core, so that
libhorovodcpp binds to the NCCL and CUDA runtime the framework brought (a
PyPI torch bundles newer ones than a cluster's CUDA module) rather than
loading the system's under the same name first, which the framework then
cannot use ("libtorch_cuda.so: undefined symbol: ncclCommResume")."""
import importlib.util
import subprocess
import sys

import pytest


@pytest.mark.parametrize("front_end, framework", [("horovodcpp.torch", "torch"),
                                                  ("horovodcpp.tensorflow", "tensorflow")])
def test_framework_is_loaded_before_core(front_end, framework):
    if importlib.util.find_spec(framework) is None:
        pytest.skip(f"{framework} is not installed for {sys.executable}")
    code = (f"import sys, {front_end}; names = list(sys.modules); "
            f"print(names.index('{framework}') < names.index('horovodcpp._core'))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "True"
