"""horovodcpp.torch's collectives as PyTorch custom operators (torch.library,
PyTorch 2.4 and newer), so that torch.compile traces a function that calls
them into its graph: no graph break, and fullgraph=True works.

While torch.compile traces (torch.compiler.is_compiling()), hvd.allreduce,
allgather, broadcast, alltoall, reducescatter, their grouped, in-place and
async forms and synchronize() call these operators; eager calls keep the
usual path. The operators submit the same requests as eager calls (names,
process sets and the negotiation are the same), and carry Horovod's
gradients (autograd_ops.py) written in operators, so a compiled backward
traces too.

Each has a fake implementation giving the output's shape without
communicating: allgather's first dimension is the input's times the set's
size (every rank sends the same number of rows under compile; a rank that
sends another raises at run time), reducescatter's this rank's share, and
alltoall's the input's with equal parts, or a size known only at run time
with splits.

The async forms return the output tensor, still being written, and a
0-d tensor holding the operation's id (it survives the copies torch.compile
may make of the output); wait_(output, id) waits (hvd.synchronize of the
pair under compile). Between the two, nothing may read the output."""
import functools
import sys
from typing import List, Optional

import torch
from torch import Tensor

from horovodcpp import _core
from horovodcpp.common import process_sets as _process_sets
from horovodcpp.torch import compiling, core_ops
from horovodcpp.torch.handles import synchronize

AVAILABLE = compiling.AVAILABLE
_AVERAGE = int(_core.ReduceOp.Average)
_SUM = int(_core.ReduceOp.Sum)


def set_of(process_set_id):
    if process_set_id == 0:
        return _process_sets.global_process_set
    return _process_sets._registered[process_set_id]


def _name(name):
    return name or None


_pending = {}  # handle id -> (the output the core writes, finish(): waits and fills it)
_next_id = iter(range(1, 1 << 62))


def _start(output, handle, fill=None):
    """Registers an async operation writing into `output`; returns the
    tensor that stands for it in the graph (its id, which survives the
    copies torch.compile may make of `output` before wait_)."""
    def finish():
        result = synchronize(handle)
        if fill is not None:
            fill(result)
    handle_id = next(_next_id)
    _pending[handle_id] = (output, finish)
    return torch.tensor(handle_id, dtype=torch.int64)


if AVAILABLE:
    from torch.library import custom_op

    # -- allreduce ---------------------------------------------------------
    @custom_op("horovodcpp::allreduce", mutates_args=())
    def allreduce(tensor: Tensor, name: str, op: int, prescale_factor: float,
                  postscale_factor: float, process_set: int) -> Tensor:
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return core_ops.allreduce_blocking(tensor, output, _name(name), _core.ReduceOp(op),
                                          prescale_factor, postscale_factor, set_of(process_set))

    @allreduce.register_fake
    def _(tensor, name, op, prescale_factor, postscale_factor, process_set):
        return torch.empty_like(tensor, memory_format=torch.contiguous_format)

    def _allreduce_setup(ctx, inputs, output):
        ctx.args = inputs[2:]

    def _allreduce_backward(ctx, grad):
        return (allreduce(grad, "", *ctx.args),) + (None,) * 5

    allreduce.register_autograd(_allreduce_backward, setup_context=_allreduce_setup)

    @custom_op("horovodcpp::allreduce_", mutates_args=("tensor",))
    def allreduce_(tensor: Tensor, name: str, op: int, prescale_factor: float,
                   postscale_factor: float, process_set: int) -> None:
        core_ops.allreduce_blocking(tensor, tensor, _name(name), _core.ReduceOp(op),
                                   prescale_factor, postscale_factor, set_of(process_set))

    @custom_op("horovodcpp::allreduce_async", mutates_args=())
    def allreduce_async(tensor: Tensor, name: str, op: int, prescale_factor: float,
                        postscale_factor: float, process_set: int) -> List[Tensor]:
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return [output, _start(output, core_ops._allreduce_async(
            tensor, output, _name(name), _core.ReduceOp(op), prescale_factor, postscale_factor,
            core_ops._core_set(set_of(process_set))))]

    @allreduce_async.register_fake
    def _(tensor, name, op, prescale_factor, postscale_factor, process_set):
        return [torch.empty_like(tensor, memory_format=torch.contiguous_format), _fake_id()]

    @custom_op("horovodcpp::grouped_allreduce", mutates_args=())
    def grouped_allreduce(tensors: List[Tensor], name: str, op: int, prescale_factor: float,
                          postscale_factor: float, process_set: int) -> List[Tensor]:
        return synchronize(core_ops.grouped_allreduce_async(
            tensors, name=_name(name), op=_core.ReduceOp(op), prescale_factor=prescale_factor,
            postscale_factor=postscale_factor, process_set=set_of(process_set)))

    @grouped_allreduce.register_fake
    def _(tensors, name, op, prescale_factor, postscale_factor, process_set):
        return [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]

    def _grouped_allreduce_backward(ctx, grads):
        return (grouped_allreduce(list(grads), "", *ctx.args),) + (None,) * 5

    grouped_allreduce.register_autograd(_grouped_allreduce_backward,
                                        setup_context=_allreduce_setup)

    @custom_op("horovodcpp::grouped_allreduce_async", mutates_args=())
    def grouped_allreduce_async(tensors: List[Tensor], name: str, op: int,
                                prescale_factor: float, postscale_factor: float,
                                process_set: int) -> List[Tensor]:
        """The outputs, then an id for each (each wait_ waits for the group:
        synchronize once, then a no-op)."""
        outputs = [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors]
        handle = core_ops._grouped_allreduce_async(
            list(tensors), outputs, _name(name), _core.ReduceOp(op), prescale_factor,
            postscale_factor, set_of(process_set))
        return outputs + [_start(output, handle) for output in outputs]

    @grouped_allreduce_async.register_fake
    def _(tensors, name, op, prescale_factor, postscale_factor, process_set):
        return [torch.empty_like(t, memory_format=torch.contiguous_format) for t in tensors] + \
            [_fake_id() for _ in tensors]

    # -- allgather -----------------------------------------------------------
    def _gathered_shape(tensor, process_set):
        rows = tensor.shape[0] if tensor.dim() else 1
        return (rows * set_of(process_set).size(),) + tuple(tensor.shape[1:])

    def _gathered(tensor, gathered, process_set):
        expected = _gathered_shape(tensor, process_set)
        if tuple(gathered.shape) != expected:
            raise ValueError(
                "horovodcpp allgather under torch.compile: gathered {} rows, {} expected: every "
                "rank must send the same number of rows in a compiled function".format(
                    gathered.shape[0], expected[0]))
        return gathered

    @custom_op("horovodcpp::allgather", mutates_args=())
    def allgather(tensor: Tensor, name: str, process_set: int) -> Tensor:
        gathered = synchronize(core_ops.allgather_async(tensor, _name(name), set_of(process_set)))
        return _gathered(tensor, gathered, process_set).clone()

    @allgather.register_fake
    def _(tensor, name, process_set):
        return tensor.new_empty(_gathered_shape(tensor, process_set))

    def _allgather_setup(ctx, inputs, output):
        ctx.rows = inputs[0].shape[0] if inputs[0].dim() else 1
        ctx.shape = inputs[0].shape
        ctx.process_set = inputs[2]

    def _allgather_backward(ctx, grad):
        reduced = allreduce(grad, "", _AVERAGE, 1.0, 1.0, ctx.process_set)
        me = set_of(ctx.process_set).rank()
        return reduced.narrow(0, me * ctx.rows, ctx.rows).reshape(ctx.shape), None, None

    allgather.register_autograd(_allgather_backward, setup_context=_allgather_setup)

    @custom_op("horovodcpp::allgather_async", mutates_args=())
    def allgather_async(tensor: Tensor, name: str, process_set: int) -> List[Tensor]:
        output = tensor.new_empty(_gathered_shape(tensor, process_set))
        handle = core_ops.allgather_async(tensor, _name(name), set_of(process_set))
        return [output, _start(output, handle,
                               lambda g: output.copy_(_gathered(tensor, g, process_set)))]

    @allgather_async.register_fake
    def _(tensor, name, process_set):
        return [tensor.new_empty(_gathered_shape(tensor, process_set)), _fake_id()]

    # -- broadcast -------------------------------------------------------------
    @custom_op("horovodcpp::broadcast", mutates_args=())
    def broadcast(tensor: Tensor, root_rank: int, name: str, process_set: int) -> Tensor:
        return synchronize(core_ops.broadcast_async(tensor, root_rank, _name(name),
                                                   set_of(process_set)))

    @broadcast.register_fake
    def _(tensor, root_rank, name, process_set):
        return torch.empty_like(tensor, memory_format=torch.contiguous_format)

    def _broadcast_setup(ctx, inputs, output):
        ctx.root_rank, ctx.process_set = inputs[1], inputs[3]

    def _broadcast_backward(ctx, grad):
        reduced = allreduce(grad, "", _AVERAGE, 1.0, 1.0, ctx.process_set)
        if _core.rank() != ctx.root_rank:
            reduced = reduced * 0
        return reduced, None, None, None

    broadcast.register_autograd(_broadcast_backward, setup_context=_broadcast_setup)

    @custom_op("horovodcpp::broadcast_async", mutates_args=())
    def broadcast_async(tensor: Tensor, root_rank: int, name: str,
                        process_set: int) -> List[Tensor]:
        output = tensor.detach().clone(memory_format=torch.contiguous_format)
        return [output, _start(output, core_ops.broadcast_async_(output, root_rank, _name(name),
                                                                set_of(process_set)))]

    @broadcast_async.register_fake
    def _(tensor, root_rank, name, process_set):
        return [torch.empty_like(tensor, memory_format=torch.contiguous_format), _fake_id()]

    # -- alltoall ----------------------------------------------------------------
    @custom_op("horovodcpp::alltoall", mutates_args=())
    def alltoall(tensor: Tensor, splits: Optional[Tensor], name: str,
                 process_set: int) -> List[Tensor]:
        output, received = synchronize(core_ops.alltoall_async(
            tensor, splits, _name(name), set_of(process_set)))
        return [output.clone(), received.to(torch.int64)]

    @alltoall.register_fake
    def _(tensor, splits, name, process_set):
        size = set_of(process_set).size()
        if splits is None:
            output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        else:
            rows = torch.library.get_ctx().new_dynamic_size()
            output = tensor.new_empty((rows,) + tuple(tensor.shape[1:]))
        return [output, tensor.new_empty(size, dtype=torch.int64)]

    def _alltoall_setup(ctx, inputs, output):
        ctx.received, ctx.process_set = output[1], inputs[3]

    def _alltoall_backward(ctx, grads):
        grad, _ = alltoall(grads[0].contiguous(), ctx.received, "", ctx.process_set)
        return grad, None, None, None

    alltoall.register_autograd(_alltoall_backward, setup_context=_alltoall_setup)

    # -- reducescatter -------------------------------------------------------
    def _scattered_shape(tensor, process_set):
        ps = set_of(process_set)
        rows = tensor.shape[0] if tensor.dim() else 1
        size, me = ps.size(), ps.rank()
        return (rows // size + (1 if me < rows % size else 0),) + tuple(tensor.shape[1:])

    @custom_op("horovodcpp::reducescatter", mutates_args=())
    def reducescatter(tensor: Tensor, name: str, op: int, process_set: int,
                      prescale_factor: float, postscale_factor: float) -> Tensor:
        return synchronize(core_ops.reducescatter_async(
            tensor, _name(name), _core.ReduceOp(op), set_of(process_set), prescale_factor,
            postscale_factor)).clone()

    @reducescatter.register_fake
    def _(tensor, name, op, process_set, prescale_factor, postscale_factor):
        return tensor.new_empty(_scattered_shape(tensor, process_set))

    def _reducescatter_setup(ctx, inputs, output):
        ctx.op, ctx.process_set, ctx.prescale, ctx.postscale = inputs[2:6]

    def _reducescatter_backward(ctx, grad):
        # Horovod's: the gradients scaled (by the size for Sum), gathered.
        scale = ctx.prescale * ctx.postscale * (
            set_of(ctx.process_set).size() if ctx.op == _SUM else 1)
        gathered = allgather(grad * scale, "", ctx.process_set)
        return (gathered,) + (None,) * 5

    reducescatter.register_autograd(_reducescatter_backward, setup_context=_reducescatter_setup)

    @custom_op("horovodcpp::reducescatter_async", mutates_args=())
    def reducescatter_async(tensor: Tensor, name: str, op: int, process_set: int,
                            prescale_factor: float, postscale_factor: float) -> List[Tensor]:
        output = tensor.new_empty(_scattered_shape(tensor, process_set))
        handle = core_ops.reducescatter_async(tensor, _name(name), _core.ReduceOp(op),
                                             set_of(process_set), prescale_factor,
                                             postscale_factor)
        return [output, _start(output, handle, output.copy_)]

    @reducescatter_async.register_fake
    def _(tensor, name, op, process_set, prescale_factor, postscale_factor):
        return [tensor.new_empty(_scattered_shape(tensor, process_set)), _fake_id()]

    def _fake_id():
        return torch.empty((), dtype=torch.int64)

    # -- wait ---------------------------------------------------------------------
    @custom_op("horovodcpp::wait_", mutates_args=("tensor",))
    def wait_(tensor: Tensor, handle: Tensor) -> None:
        """Waits for the async operation `handle` (the id its op returned),
        and leaves its result in `tensor` (its output, or a copy of it that
        torch.compile made)."""
        output, finish = _pending.pop(int(handle), (None, None))
        if finish is None:
            raise ValueError("horovodcpp wait_: operation {} is unknown or already waited "
                             "for".format(int(handle)))
        finish()
        if tensor.data_ptr() != output.data_ptr():
            tensor.copy_(output)

def compile_backend(backend="inductor", bucket_cap_mb=25.0, recompute=False):
    """A torch.compile backend for models trained with DistributedOptimizer:
    torch.compile(model, backend=hvd.compile_backend()). A compiled model's
    backward is one autograd node, so every gradient becomes final, and its
    allreduce starts, only once the whole backward has run. This splits the
    graph where the parameters' gradient bytes fill a bucket (torch's
    DDPOptimizer, which DDP uses for the same reason) and compiles each part
    with `backend`: a bucket's gradients are final when its part's backward
    ends, and their allreduces run while the earlier layers' backward does.

    recompute=False (inductor only): each part saves for its backward what
    the backward reads, nothing recomputed. Inductor's own partitioner
    (recompute=True) sees a part's output, which the next part saves anyway,
    as one more tensor to save and saves a byte mask in its place: a
    recomputation and a slow mask store at every split (a third of the
    forward's time in bench/compiled_bench.py's MLP), for less memory."""
    from torch._dynamo.backends.distributed import DDPOptimizer
    compile_fn = torch._dynamo.lookup_backend(backend) if isinstance(backend, str) else backend
    if backend == "inductor" and not recompute:
        compile_fn = _without_recomputation(compile_fn)
    cap = max(1, int(bucket_cap_mb * 1024 * 1024))
    first = min(cap, getattr(torch.distributed, "_DEFAULT_FIRST_BUCKET_BYTES", cap))
    return DDPOptimizer(bucket_bytes_cap=cap, backend_compile_fn=compile_fn,
                        first_bucket_cap=first).compile_fn


def _without_recomputation(compile_fn):
    """`compile_fn` (inductor) partitioning each graph with AOTAutograd's
    default partitioner; as it is where inductor takes no custom partitioner
    (older PyTorch)."""
    config = torch._inductor.config
    if not hasattr(config, "custom_partitioner_fn"):
        return compile_fn
    partitioner = _saved_not_recomputed()

    def compile_part(gm, example_inputs):
        # The forward's compilation partitions the joint graph: the
        # backward, compiled later, is already cut.
        with config.patch(custom_partitioner_fn=partitioner):
            return compile_fn(gm, example_inputs)
    return compile_part


@functools.lru_cache(maxsize=None)  # one instance, made on first use (imports inductor)
def _saved_not_recomputed():
    """Inductor's custom partitioner running AOTAutograd's default_partition.
    Inductor pickles its config into each graph's cache key: the instance
    pickles as a call of this function (a class made here would not pickle,
    and inductor would warn at every part and cache none)."""
    from torch._functorch.partitioners import default_partition
    from torch._inductor.custom_graph_pass import CustomPartitionerFn

    class SavedNotRecomputed(CustomPartitionerFn):
        def __call__(self, gm, joint_inputs, **kwargs):
            return default_partition(gm, joint_inputs, num_fwd_outputs=kwargs["num_fwd_outputs"],
                                     static_lifetime_input_indices=kwargs.get(
                                         "static_lifetime_input_indices"))

        def uuid(self):
            return "horovodcpp.default_partition"

        def __reduce__(self):
            return (_saved_not_recomputed, ())
    return SavedNotRecomputed()


compiling.OPS = sys.modules[__name__]
