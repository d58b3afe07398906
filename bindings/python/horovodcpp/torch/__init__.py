"""horovodcpp.torch: the API of horovod.torch on horovodcpp's C++ core.

    import horovodcpp.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

Process sets (hvd.ProcessSet, hvd.add_process_set, process_set= on every
operation), hvd.join() and op=hvd.Adasum work as in Horovod. Not supported:
init(comm=...) with a subset of the launched ranks (NotImplementedError).
"""
# torch before horovodcpp._core: the libraries torch loads (a PyPI torch
# bundles NCCL and the CUDA runtime) are then the ones libhorovodcpp binds
# to, instead of an older system copy under the same name that torch cannot
# use ("libtorch_cuda.so: undefined symbol: ncclCommResume").
import torch  # noqa: F401
from horovodcpp.common.basics import *  # noqa: F401,F403  (basics.__all__)
from horovodcpp.common.process_sets import *  # noqa: F401,F403  (ProcessSet, add_process_set, ...)
# rank(), size(), ... in place of the basics': constants of a torch.compile
# graph (compiling.py).
from horovodcpp.torch.compiling import (  # noqa: F401
    cross_rank, cross_size, local_rank, local_size, rank, size)
from horovodcpp.common.util import check_extension  # noqa: F401
from horovodcpp.torch import compiling, elastic  # noqa: F401  (hvd.elastic.run, TorchState, ...)
from horovodcpp.torch.autograd_ops import (  # noqa: F401
    allgather, allreduce, alltoall, broadcast, grouped_allgather, grouped_allreduce,
    grouped_reducescatter, reducescatter)
from horovodcpp.torch.compression import Compression  # noqa: F401
from horovodcpp.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state, broadcast_parameters)
from horovodcpp.torch.handles import poll, synchronize  # noqa: F401
from horovodcpp.torch.core_ops import (  # noqa: F401
    allgather_async, allreduce_, allreduce_async, allreduce_async_, alltoall_async, barrier,
    broadcast_, broadcast_async, broadcast_async_, grouped_allgather_async, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter_async, join,
    reducescatter_async, sparse_allreduce_async)
from horovodcpp.torch.optimizer import DistributedOptimizer  # noqa: F401
from horovodcpp.torch import mpi_ops  # noqa: F401,E402  (hvd.mpi_ops, as in Horovod)
from horovodcpp.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
# The collectives as custom operators, for torch.compile (PyTorch 2.4+).
if compiling.AVAILABLE:
    from horovodcpp.torch.compiled_ops import compile_backend  # noqa: F401,E402
