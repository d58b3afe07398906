"""horovodcpp: Horovod-style data-parallel training on a C++ core.

Frameworks: ``import horovodcpp.torch as hvd`` (the API of horovod.torch),
``import horovodcpp.tensorflow as hvd`` (horovod.tensorflow) and
``import horovodcpp.tensorflow.keras as hvd`` (horovod.tensorflow.keras).
"""
# Not from _core: `python -m horovodcpp.check` must import the package even
# when the extension cannot load, to say why.
from horovodcpp._build_info import VERSION as __version__  # noqa: F401
