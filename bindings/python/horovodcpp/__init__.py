"""horovodcpp: Horovod-style data-parallel training on a C++ core.

Frameworks: ``import horovodcpp.torch as hvd`` (the API of horovod.torch),
``import horovodcpp.tensorflow as hvd`` (horovod.tensorflow) and
``import horovodcpp.tensorflow.keras as hvd`` (horovod.tensorflow.keras).
"""
from horovodcpp._core import __version__  # noqa: F401
