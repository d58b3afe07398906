"""horovod.torch's collectives on torch tensors as calls into the core: the
asynchronous forms (returning handles) and the in-place blocking forms. The
differentiable blocking forms (allreduce, allgather, ...) are in
autograd_ops.py; mpi_ops.py re-exports both under Horovod's module name.

Tensors cross into the C++ core through DLPack, in place: in-place
operations write into the tensor's memory, out-of-place ones into a new
tensor (or one the core allocated). An allreduce of dense contiguous
tensors (CPU ones; CUDA ones too when asynchronous, as DistributedOptimizer's
gradients) passes the tensors themselves to the core's fast calls, which
read their addresses. CUDA tensors go with the
current CUDA stream of their device (torch.cuda.current_stream()): the core's copies or
NCCL kernels run after what was queued there when the operation was
started, and that stream's later work runs after the result; results the
core allocates are on the tensor's GPU. Names get the operation as prefix
("allreduce.<name>"), as in Horovod; unnamed operations get automatic names,
which match across ranks only if every rank issues them in the same order.
"""

import torch
from torch.utils.dlpack import from_dlpack, to_dlpack

from horovodcpp import _core
from horovodcpp.common.basics import Average, Sum
from horovodcpp.common.process_sets import core_set as _core_set
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.common.util import resolve_op
from horovodcpp.torch.handles import poll, register, register_tensor, synchronize  # noqa: F401
from horovodcpp.torch import compiling

_SUPPORTED_DTYPES = {
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
    torch.bfloat16, torch.float32, torch.float64, torch.bool}


def _core_tensor(tensor):
    """What _core takes for `tensor`: a DLPack capsule of the same memory,
    made without any stream synchronisation (the core orders itself after
    _stream(tensor)). bool goes as (uint8 view, "bool"): PyTorch 1.x cannot
    export bool."""
    if tensor.dtype not in _SUPPORTED_DTYPES:
        raise ValueError("Tensor type {} is not supported.".format(tensor.type()))
    if tensor.is_sparse:
        raise ValueError("Sparse tensors are not supported here; use sparse_allreduce_async.")
    if tensor.requires_grad:
        tensor = tensor.detach()
    if tensor.dtype == torch.bool:
        return (to_dlpack(tensor.view(torch.uint8)), "bool")
    return to_dlpack(tensor)


# The current stream's handle without making a torch.cuda.Stream (PyTorch 2).
_current_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(tensor):
    """The stream the core orders a CUDA tensor's collective after (and the
    result before): the current stream of the tensor's device; 0 for CPU."""
    if not tensor.is_cuda:
        return 0
    if _current_raw_stream is not None:
        return _current_raw_stream(tensor.device.index)
    return torch.cuda.current_stream(tensor.device).cuda_stream


def _group_stream(tensors):
    """A group's stream: its first CUDA tensor's (a group is on one device)."""
    return next((_stream(t) for t in tensors if t.is_cuda), 0)


# Dense contiguous tensors of these dtypes go to the core's fast calls
# (_core.allreduce_direct for CPU tensors, allreduce_async_direct for CPU
# and CUDA ones), which read their address, shape and device (and a CUDA
# tensor's current stream): no DLPack round trip, no Python per tensor.
_DIRECT_DTYPES = {getattr(torch, name): code for name, code in _core.dtype_codes().items()
                  if isinstance(getattr(torch, name, None), torch.dtype)}
_core.set_direct_tensor_types(_DIRECT_DTYPES, torch.strided, _current_raw_stream)


def _inplace_tensor(tensor):
    if not tensor.is_contiguous():
        raise ValueError("Tensor is required to be contiguous.")
    return _core_tensor(tensor)


def _from_core(buffer, like):
    """A torch tensor over a _core.Buffer, with the dtype of `like`."""
    out = from_dlpack(buffer)
    return out.view(torch.bool) if like.dtype == torch.bool else out


def _name(prefix, name):
    return "" if name is None else "{}.{}".format(prefix, name)


def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, ps):
    """Starts the allreduce of `tensor` into `output` (`tensor` in place) on
    the core's process set `ps`; returns its handle."""
    handle = _core.allreduce_async_direct(tensor, output, name, op, prescale_factor,
                                          postscale_factor, ps)
    if handle is not NotImplemented:  # a dense contiguous tensor: the core's table
        return handle
    if output is tensor:
        work = _core.allreduce_async(_inplace_tensor(tensor), None, _name("allreduce", name), op,
                                     prescale_factor, postscale_factor, ps, _stream(tensor))
    else:
        work = _core.allreduce_async(_core_tensor(tensor.contiguous()), _core_tensor(output),
                                     _name("allreduce", name), op, prescale_factor,
                                     postscale_factor, ps, _stream(tensor))
    return register_tensor(work, output)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing `tensor` over the ranks of `process_set` (default: all)
    into a new tensor:
    postscale_factor * op(prescale_factor * tensor). `op` defaults to Average
    (Sum, Min, Max, Product also work). Returns a handle for synchronize()."""
    op = resolve_op(op, average)
    if compiling.is_compiling():  # the handle is the output tensor (synchronize waits)
        return compiling.OPS.allreduce_async(tensor, name or "", int(op), prescale_factor,
                                         postscale_factor, process_set.process_set_id)
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor,
                            _core_set(process_set))


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    """allreduce_async in place: the result replaces `tensor`'s contents."""
    return _allreduce_async(tensor, tensor, name, resolve_op(op, average), prescale_factor,
                            postscale_factor, _core_set(process_set))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` over all ranks in place and returns it."""
    op = resolve_op(op, average)
    if compiling.is_compiling():
        compiling.OPS.allreduce_(tensor, name or "", int(op), prescale_factor, postscale_factor,
                             process_set.process_set_id)
        return tensor
    return allreduce_blocking(tensor, tensor, name, op, prescale_factor, postscale_factor,
                              process_set)


def allreduce_blocking(tensor, output, name, op, prescale_factor, postscale_factor, process_set):
    """Reduces `tensor` into `output` (which may be `tensor`) and returns
    `output`. A CPU tensor goes through the core's blocking call, which runs
    a lone small allreduce in this thread's own cycle, without a handle."""
    ps = _core_set(process_set)
    if _core.allreduce_direct(tensor, output, name, op, prescale_factor, postscale_factor,
                              ps) is not NotImplemented:
        return output
    if tensor.is_cuda:
        return synchronize(_allreduce_async(tensor, output, name, op, prescale_factor,
                                            postscale_factor, ps))
    if output is tensor:
        _core.allreduce(_inplace_tensor(tensor), None, _name("allreduce", name), op,
                        prescale_factor, postscale_factor, ps)
    else:  # _core_tensor detaches a tensor that requires grad
        _core.allreduce(_core_tensor(tensor.contiguous()), _core_tensor(output),
                        _name("allreduce", name), op, prescale_factor, postscale_factor, ps)
    return output


def _grouped_allreduce_async(tensors, outputs, name, op, prescale_factor, postscale_factor,
                             process_set):
    ps = _core_set(process_set)
    if outputs is tensors:
        inputs, core_outputs = [_inplace_tensor(t) for t in tensors], None
    else:
        inputs = [_core_tensor(t.contiguous()) for t in tensors]
        core_outputs = [_core_tensor(t) for t in outputs]
    works = _core.grouped_allreduce_async(inputs, core_outputs, _name("grouped_allreduce", name),
                                          op, prescale_factor, postscale_factor, ps,
                                          _group_stream(tensors))
    return register(works, lambda: list(outputs))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    """Starts reducing a list of tensors as one group: negotiated together and
    fused into as few backend calls as possible. synchronize() returns the
    list of results."""
    op = resolve_op(op, average)
    if compiling.is_compiling():
        return compiling.OPS.grouped_allreduce_async(list(tensors), name or "", int(op),
                                                 prescale_factor, postscale_factor,
                                                 process_set.process_set_id)
    outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
    return _grouped_allreduce_async(list(tensors), outputs, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    """grouped_allreduce_async in place."""
    op = resolve_op(op, average)
    tensors = list(tensors)
    return _grouped_allreduce_async(tensors, tensors, name, op, prescale_factor,
                                    postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    """Reduces a list of tensors in place as one group; returns the list."""
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


def allreduce_async_many_(tensors, names, op=Average, prescale_factor=1.0, postscale_factor=1.0,
                          process_set=global_process_set):
    """allreduce_async_ of each of `tensors` (names[i] without the
    "allreduce." prefix), submitted in one call: each is its own operation,
    as if submitted one after the other (not a group). One handle each."""
    tensors = list(tensors)
    works = _core.allreduce_async_many([_inplace_tensor(t) for t in tensors],
                                       [_name("allreduce", n) for n in names], op,
                                       prescale_factor, postscale_factor,
                                       _core_set(process_set), _group_stream(tensors))
    return [register_tensor(w, t) for w, t in zip(works, tensors)]


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """Reduces a sparse COO tensor by gathering every rank's indices and
    values (duplicates add up when the result is coalesced). As in Horovod,
    returns a function that waits and returns the sparse result."""
    if op not in (Average, Sum):
        raise NotImplementedError("sparse allreduce supports Sum and Average only")
    ps = _core_set(process_set)
    indices = tensor._indices().t().contiguous()  # rows are nonzeros: gathered along dim 0
    values = tensor._values().contiguous()
    works = [_core.allgather_async(_core_tensor(part), _name("allgather", name + suffix), ps,
                                   _stream(part))
             for part, suffix in ((indices, ".indices"), (values, ".values"))]

    def finish():
        all_indices = _from_core(works[0].output(), indices)
        all_values = _from_core(works[1].output(), values)
        if op == Average:
            all_values = all_values / process_set.size()
        return torch.sparse_coo_tensor(all_indices.t(), all_values, tensor.size())
    handle = register(works, finish)
    return lambda: synchronize(handle)


def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts concatenating every rank's `tensor` along the first dimension
    (which may differ between ranks). synchronize() returns the result."""
    if compiling.is_compiling():
        return compiling.OPS.allgather_async(tensor, name or "", process_set.process_set_id)
    work = _core.allgather_async(_core_tensor(tensor.contiguous()), _name("allgather", name),
                                 _core_set(process_set), _stream(tensor))
    return register([work], lambda: _from_core(work.output(), tensor))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """allgather_async of a list of tensors as one group."""
    tensors = list(tensors)
    works = _core.grouped_allgather_async([_core_tensor(t.contiguous()) for t in tensors],
                                          _name("grouped_allgather", name), _core_set(process_set),
                                          _group_stream(tensors))
    return register(works, lambda: [_from_core(w.output(), t) for w, t in zip(works, tensors)])


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts copying root_rank's `tensor` into a new tensor on every rank (of
    `process_set`; root_rank is a global rank, hvd.rank() of the root)."""
    if compiling.is_compiling():
        return compiling.OPS.broadcast_async(tensor, root_rank, name or "",
                                         process_set.process_set_id)
    output = tensor.detach().clone(memory_format=torch.contiguous_format)
    return broadcast_async_(output, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts overwriting `tensor` with root_rank's `tensor`, in place."""
    work = _core.broadcast_async(_inplace_tensor(tensor), root_rank, _name("broadcast", name),
                                 _core_set(process_set), _stream(tensor))
    return register_tensor(work, tensor)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """Overwrites `tensor` with root_rank's `tensor` in place; returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: splits[j] rows (first-dimension slices) of `tensor`
    go to rank j; without splits, equal parts. synchronize() returns
    (output, received_splits): the rows every rank sent here, in rank order,
    and how many came from each rank. On a process set, j counts in the set."""
    ps = _core_set(process_set)
    if splits is None:
        split_list, splits_dtype = [], torch.int32
    elif isinstance(splits, torch.Tensor):
        split_list, splits_dtype = [int(s) for s in splits.tolist()], splits.dtype
    else:
        split_list, splits_dtype = [int(s) for s in splits], torch.int32
    work = _core.alltoall_async(_core_tensor(tensor.contiguous()), split_list,
                                _name("alltoall", name), ps, _stream(tensor))
    return register([work], lambda: (_from_core(work.output(), tensor),
                                     torch.tensor(work.received_splits(), dtype=splits_dtype)))


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Starts reducing `tensor` (same shape on every rank) and keeping this
    rank's share of the first dimension: the first (rows % size) ranks get
    one row more. `op` is Average or Sum."""
    if compiling.is_compiling():
        return compiling.OPS.reducescatter_async(tensor, name or "", int(op),
                                             process_set.process_set_id, prescale_factor,
                                             postscale_factor)
    work = _core.reducescatter_async(_core_tensor(tensor.contiguous()),
                                     _name("reducescatter", name), op, prescale_factor,
                                     postscale_factor, _core_set(process_set), _stream(tensor))
    return register([work], lambda: _from_core(work.output(), tensor))


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter_async of a list of tensors as one group."""
    tensors = list(tensors)
    works = _core.grouped_reducescatter_async([_core_tensor(t.contiguous()) for t in tensors],
                                              _name("grouped_reducescatter", name), op,
                                              prescale_factor, postscale_factor,
                                              _core_set(process_set), _group_stream(tensors))
    return register(works, lambda: [_from_core(w.output(), t) for w, t in zip(works, tensors)])


def join(device=-1):
    """For uneven numbers of batches: a rank that has run out of data calls
    join() and waits there (without the GIL) until every rank has joined.
    Meanwhile the other ranks' allreduces (any op, e.g. those of
    DistributedOptimizer) and barriers go on without it, as in Horovod: it
    contributes zeros, and Average still divides by every rank. Other
    collectives submitted while a rank has joined fail with
    InvalidArgumentError. Returns, on every rank, the rank that joined last
    (e.g. to broadcast its parameters). Global set only.

    device: Horovod's device for the zero tensors; ignored: with CUDA
    tensors the zeros go to the GPU this rank used for them, else to GPU
    local_rank % torch.cuda.device_count() (staged: host memory)."""
    del device
    return _core.join()


def barrier(process_set=global_process_set):
    """Returns once every rank (of `process_set`) has called barrier(),
    without holding the GIL."""
    _core.barrier(_core_set(process_set))
