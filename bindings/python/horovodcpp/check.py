"""What this horovodcpp build has: ``python -m horovodcpp.check``.

Prints, in the layout of ``horovodrun --check-build``, the frameworks whose
front end imports here, the controllers and tensor operations built into the
library, then what they were built with, the communication libraries this
process loaded, and the hvdrun that came with the package. Exits 1 when the
extension cannot be loaded, saying why (on a cluster: usually the MPI module
it was built with is not loaded).
"""
import importlib
import importlib.metadata
import os
import shutil
import sys

import horovodcpp
from horovodcpp import _build_info

FRAMEWORKS = (  # label, framework module, horovodcpp front end
    ("PyTorch", "torch", "horovodcpp.torch"),
    ("TensorFlow", "tensorflow", "horovodcpp.tensorflow"),
    ("Keras", "keras", "horovodcpp.tensorflow.keras"),
)
# Shared libraries worth naming: which MPI (module) the job really uses.
COMMUNICATION_LIBRARIES = ("libmpi.", "libgloo", "libnccl.", "libcudart.")


def mark(present):
    return "[X]" if present else "[ ]"


def framework_lines():
    for label, framework, front_end in FRAMEWORKS:
        try:
            version = importlib.import_module(framework).__version__
            importlib.import_module(front_end)
        except Exception as e:  # not installed, or fails to load (e.g. an ABI clash)
            reason = str(e).splitlines()[0] if str(e) else ""
            yield f"    [ ] {label} ({type(e).__name__}: {reason})"
        else:
            yield f"    [X] {label} {version}"


def loaded_libraries():
    """The communication libraries mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        return []
    return sorted(p for p in paths
                  if any(os.path.basename(p).startswith(n) for n in COMMUNICATION_LIBRARIES))


def installed_hvdrun():
    """The hvdrun pip installed with the imported package, else None (a
    CMake install, or the package imported from a build tree)."""
    try:
        distribution = importlib.metadata.distribution("horovodcpp")
    except importlib.metadata.PackageNotFoundError:
        return None
    package = distribution.locate_file("horovodcpp/__init__.py")
    if not os.path.samefile(package, horovodcpp.__file__):
        return None
    for file in distribution.files or []:
        if file.name == "hvdrun":
            return os.path.normpath(file.locate())
    return None


def built_with():
    parts = []
    if _build_info.CUDA_VERSION:
        parts.append(f"CUDA {_build_info.CUDA_VERSION}")
    if _build_info.NCCL_VERSION:
        parts.append(f"NCCL {_build_info.NCCL_VERSION}")
    if _build_info.MPI_LIBRARIES:
        parts.append(f"MPI {_build_info.MPI_VERSION} ({_build_info.MPI_LIBRARIES})")
    parts.append(f"Python {_build_info.PYTHON_VERSION}")
    return ", ".join(parts)


def main():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up log
    # The frameworks before _core, as their front ends do (see horovodcpp/torch).
    frameworks = list(framework_lines())
    try:
        _core = importlib.import_module("horovodcpp._core")
    except ImportError as e:
        print(f"horovodcpp {_build_info.VERSION}: cannot load horovodcpp._core: {e}\n"
              f"It was built with {built_with()}: load the same modules (module load ...) "
              "or set LD_LIBRARY_PATH so that those libraries are found.", file=sys.stderr)
        return 1
    transports = _core.built_transports()
    gpu_operations = _core.built_gpu_operations()
    staged = any(operation != "nccl" for operation in gpu_operations)
    lines = [f"horovodcpp v{_build_info.VERSION} ({os.path.dirname(horovodcpp.__file__)}):", "",
             "Available Frameworks:", *frameworks, "",
             "Available Controllers:",
             f"    {mark('mpi' in transports)} MPI",
             f"    {mark('gloo' in transports)} Gloo", "",
             "Available Tensor Operations:",
             f"    {mark('nccl' in gpu_operations)} NCCL",
             f"    {mark(staged)} CUDA tensors staged through host memory",
             f"    {mark('mpi' in transports)} MPI",
             f"    {mark('gloo' in transports)} Gloo",
             f"    {mark(_build_info.SHARED_MEMORY)} shared memory (ranks on one host)", "",
             f"Built with: {built_with()}",
             f"Loaded: {', '.join(loaded_libraries()) or 'none'}"]
    hvdrun = installed_hvdrun()
    on_path = shutil.which("hvdrun")
    lines.append(f"hvdrun: {hvdrun or on_path or 'not found'}")
    if hvdrun and on_path and not os.path.samefile(hvdrun, on_path):
        lines.append(f"warning: the hvdrun on PATH is {on_path}, not this package's: "
                     "activate its environment or call it by its path")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
