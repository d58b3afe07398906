"""`python -m horovodcpp.check`: what the library was built with, the
frameworks this interpreter can use, and a clear error when the extension
cannot be loaded."""
import importlib
import importlib.util
import os
import shutil
import subprocess
import sys

import horovodcpp
from horovodcpp import _core


def run_check(env=None):
    return subprocess.run([sys.executable, "-m", "horovodcpp.check"], capture_output=True,
                          text=True, env=env)


def line(present, name):
    return f"    {'[X]' if present else '[ ]'} {name}\n"


def test_lists_the_controllers_and_operations_of_the_library():
    result = run_check()
    assert result.returncode == 0, result.stderr
    transports = _core.built_transports()
    assert line("mpi" in transports, "MPI") in result.stdout
    assert line("gloo" in transports, "Gloo") in result.stdout
    assert line("nccl" in _core.built_gpu_operations(), "NCCL") in result.stdout
    assert f"horovodcpp v{horovodcpp.__version__} (" in result.stdout


def test_names_each_framework_with_its_version_or_why_not():
    output = run_check().stdout
    for label, module in (("PyTorch", "torch"), ("TensorFlow", "tensorflow")):
        if importlib.util.find_spec(module) is None:
            assert f"    [ ] {label} (ModuleNotFoundError: No module named '{module}')" in output
        else:
            version = importlib.import_module(module).__version__
            assert f"    [X] {label} {version}\n" in output


def test_says_why_when_the_extension_cannot_be_loaded(tmp_path):
    # The package without its extension: what a user sees when _core or the
    # libraries it needs (the MPI module it was built with) cannot be loaded.
    shutil.copytree(os.path.dirname(horovodcpp.__file__), tmp_path / "horovodcpp",
                    ignore=shutil.ignore_patterns("_core*"))
    result = run_check(dict(os.environ, PYTHONPATH=str(tmp_path)))
    assert result.returncode == 1
    assert "cannot load horovodcpp._core: No module named 'horovodcpp._core'" in result.stderr
    assert "It was built with " in result.stderr
