"""horovodcpp: Horovod-style data-parallel training on a C++ core.

Frameworks: ``import horovodcpp.torch as hvd`` (the API of horovod.torch).
"""
from horovodcpp._core import __version__  # noqa: F401
