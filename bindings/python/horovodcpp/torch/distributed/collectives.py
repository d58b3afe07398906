"""HorovodcppBackend: torch.distributed's collectives on horovodcpp's core,
as the c10d Backend of a group's CPU and CUDA tensors (process_group.py
registers it). Each collective is submitted as the Horovod API submits it
(the same _core calls, negotiated, fused and run on shared memory, MPI,
Gloo or NCCL); the backend only maps torch's arguments onto them.

torch.distributed collectives carry no names, but every rank issues a
group's collectives in the same order, so the k-th collective of a kind
gets the same name everywhere: "<group>.<kind>.<k mod WINDOW>". Names
repeat, so the response cache serves a steady state (a training loop) with
one bit-vector round; a name still in flight on this rank from WINDOW
collectives ago is waited for first (the core refuses a name twice in
flight). Shapes and dtypes are not part of the name: ranks that disagree
meet under one name, and the core's negotiation fails all of them with an
error naming the ranks and the field that differ."""
import torch
import torch.distributed as dist
from torch.utils.dlpack import to_dlpack

from horovodcpp import _core
from horovodcpp.common.basics import Average, Max, Min, Product, Sum
from horovodcpp.torch.distributed import point_to_point
from horovodcpp.torch.distributed.monitored_barrier import monitored_barrier
from horovodcpp.torch.distributed.work import Work, as_dist_error, completed, timed_out
from horovodcpp.torch.core_ops import _core_tensor, _from_core, _group_stream, _stream

WINDOW = 16

_OPS = {dist.ReduceOp.SUM: Sum, dist.ReduceOp.AVG: Average, dist.ReduceOp.PRODUCT: Product,
        dist.ReduceOp.MIN: Min, dist.ReduceOp.MAX: Max}


_DIRECT = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64,
           torch.int16, torch.int8, torch.uint8}


def _core_of(tensor):
    """What _core takes for `tensor`: complex numbers as pairs of reals."""
    if tensor.dtype in _DIRECT and not tensor.requires_grad:
        return to_dlpack(tensor)  # the common case, without _core_tensor's checks
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return _core_tensor(tensor)


def _flat(tensor):
    """A 1-D view (complex: of the real pairs), for the collectives that only
    move bytes."""
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor)
    return tensor.reshape(-1)


def _contiguous(tensors, what):
    for t in tensors:
        if not t.is_contiguous():
            raise ValueError("horovodcpp {}: tensors must be contiguous".format(what))


_OP_OF_VALUE = {int(kind): op for kind, op in _OPS.items()}
_PREMUL_SUM = int(dist.ReduceOp.PREMUL_SUM)


def reduce_op(op, what):
    """(horovodcpp op, prescale factor) for a torch ReduceOp."""
    kind = getattr(op, "op", op)
    value = int(kind)
    found = _OP_OF_VALUE.get(value)
    if found is not None:
        return found, 1.0
    if value == _PREMUL_SUM:
        factor = op.factor
        return Sum, float(factor.item() if torch.is_tensor(factor) else factor)
    raise ValueError("horovodcpp {}: ReduceOp.{} is not supported (SUM, AVG, PRODUCT, MIN, MAX "
                     "and PREMUL_SUM are)".format(what, getattr(kind, "name", kind)))


class _Names:
    """Per-kind sequence names, the same on every rank of the group."""

    def __init__(self, prefix):
        self._prefix = prefix
        self._counts = {}
        self._names = {}  # kind -> its WINDOW names
        self._in_flight = {}  # name -> the _core.Works submitted under it

    def next(self, kind):
        """The kind's next name, once this rank has nothing in flight under it."""
        count = self._counts.get(kind, 0)
        self._counts[kind] = count + 1
        names = self._names.get(kind)
        if names is None:
            names = self._names[kind] = ["{}.{}.{}".format(self._prefix, kind, i)
                                         for i in range(WINDOW)]
        name = names[count % WINDOW]
        earlier = self._in_flight.pop(name, None)
        if earlier is not None:
            for work in earlier:
                try:
                    work.wait()
                except Exception:  # noqa: BLE001  (its own wait() reports it)
                    pass
        return name

    def hold(self, name, works):
        self._in_flight[name] = works

    def submit(self, kind, submit):
        """submit(name) -> list of _core.Work, under the kind's next name."""
        name = self.next(kind)
        works = submit(name)
        self._in_flight[name] = works
        return works


class HorovodcppBackend(torch._C._distributed_c10d.Backend):
    """A group's collectives: rank and size are within the group; `members`
    are the global ranks in group order; `process_set` the horovodcpp
    ProcessSet (the global one, or one added for the group)."""

    def __init__(self, rank, size, members, process_set, timeout, store):
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._members = list(members)
        self._process_set = process_set
        self._core_set = None if process_set.process_set_id == 0 else process_set._core_set()
        self._timeout = timeout.total_seconds() if timeout is not None else None
        self._store = store
        self._names = _Names("pg{}".format(process_set.process_set_id))
        self._p2p = point_to_point.PointToPoint(store, rank, size, timeout)
        self._monitored = 0
        self._done = completed([])

    # batch_isend_irecv asks; point-to-point goes one by one (point_to_point.py).
    supports_coalescing = False

    def getBackendName(self):
        return "horovodcpp"

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    # -- plumbing -------------------------------------------------------
    def _work(self, kind, submit, what, result):
        """A collective whose result is `result` (tensors written in place)."""
        works = self._names.submit(kind, submit)
        return Work(works, None, what, self._timeout, result)

    def _root(self, group_root):
        if not 0 <= group_root < self.size():
            raise ValueError("horovodcpp: root {} is not a rank of this group of {}".format(
                group_root, self.size()))
        return self._members[group_root]

    # -- allreduce --------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        op, scale = reduce_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM,
                              "all_reduce")
        if len(tensors) != 1:
            return self.allreduce_coalesced(tensors, opts)
        tensor = tensors[0]
        if not tensor.is_contiguous():
            _contiguous(tensors, "all_reduce")
        name = self._names.next("allreduce")
        if opts is not None and not opts.asyncOp and not tensor.is_cuda:
            # torch waits at once: the core's blocking call (a lone small
            # allreduce runs in this thread's own cycle), and a finished
            # Work that nobody keeps (one per backend, its result updated).
            try:
                _core.allreduce(_core_of(tensor), None, name, op, scale, 1.0, self._core_set, 0,
                                self._timeout)
            except _core.HorovodTimeoutError:
                raise timed_out("all_reduce", self._timeout) from None
            except Exception as error:  # noqa: BLE001
                raise as_dist_error(error, "all_reduce") from error
            self._done._result = tensors
            return self._done
        work = _core.allreduce_async(_core_of(tensor), None, name, op, scale, 1.0,
                                     self._core_set, _stream(tensor))
        self._names.hold(name, (work,))
        return Work((work,), None, "all_reduce", self._timeout, tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        op, scale = reduce_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM,
                              "all_reduce_coalesced")
        _contiguous(tensors, "all_reduce_coalesced")
        tensors = list(tensors)

        def submit(name):
            return _core.grouped_allreduce_async([_core_of(t) for t in tensors], None, name, op,
                                                 scale, 1.0, self._core_set,
                                                 _group_stream(tensors))
        return self._work("allreduce_coalesced", submit, "all_reduce_coalesced", tensors)

    # -- broadcast and reduce -------------------------------------------
    def broadcast(self, tensors, opts=None):
        root = self._root(opts.rootRank if opts is not None else 0)
        _contiguous(tensors, "broadcast")
        tensor = tensors[0]

        def submit(name):
            return [_core.broadcast_async(_core_of(tensor), root, name, self._core_set,
                                          _stream(tensor))]
        return self._work("broadcast", submit, "broadcast", tensors)

    def reduce(self, tensors, opts=None):
        """The reduction reaches every rank (an allreduce); only the root's
        tensor is written, as torch's reduce promises."""
        op, scale = reduce_op(opts.reduceOp, "reduce")
        _contiguous(tensors, "reduce")
        tensor = tensors[0]
        mine = self.rank() == opts.rootRank
        output = tensor if mine else torch.empty_like(tensor)

        def submit(name):
            return [_core.allreduce_async(_core_of(tensor), None if mine else _core_of(output),
                                          name, op, scale, 1.0, self._core_set,
                                          _stream(tensor))]
        return self._work("reduce", submit, "reduce", tensors)

    # -- allgather and gather --------------------------------------------
    def _gather_flat(self, kind, tensor, what, copy_out):
        """Every rank's `tensor`, flattened and concatenated in rank order,
        handed to copy_out(gathered)."""
        flat = _flat(tensor.contiguous())

        def submit(name):
            return [_core.allgather_async(_core_tensor(flat), name, self._core_set,
                                          _stream(flat))]
        works = self._names.submit(kind, submit)

        def finish():
            return copy_out(_from_core(works[0].output(), flat))
        return Work(works, finish, what, self._timeout)

    def _split_into(self, gathered, outputs, what):
        sizes = [_flat(o).numel() for o in outputs]
        if gathered.numel() != sum(sizes):
            raise ValueError(
                "horovodcpp {}: the ranks sent {} elements in all, the outputs hold {}: the ranks' "
                "inputs differ in size".format(what, gathered.numel(), sum(sizes)))
        for output, part in zip(outputs, torch.split(gathered, sizes)):
            _flat(output).copy_(part)

    def allgather(self, output_lists, inputs, opts=None):
        outputs = output_lists[0]
        if len(outputs) != self.size():
            raise ValueError("horovodcpp all_gather: {} output tensors for a group of {}".format(
                len(outputs), self.size()))

        def copy_out(gathered):
            self._split_into(gathered, outputs, "all_gather")
            return output_lists
        return self._gather_flat("allgather", inputs[0], "all_gather", copy_out)

    def _allgather_base(self, output, input, opts=None):
        def copy_out(gathered):
            self._split_into(gathered, [output], "all_gather_into_tensor")
            return [output]
        return self._gather_flat("allgather", input, "all_gather_into_tensor", copy_out)

    all_gather_single = _allgather_base

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        flats = [_flat(t.contiguous()) for t in inputs]

        def submit(name):
            return _core.grouped_allgather_async([_core_tensor(f) for f in flats], name,
                                                 self._core_set, _group_stream(flats))
        works = self._names.submit("allgather_coalesced", submit)

        def finish():
            for work, flat, output in zip(works, flats, outputs):
                self._split_into(_from_core(work.output(), flat), [output],
                                 "all_gather_into_tensor (coalesced)")
            return list(outputs)
        return Work(works, finish, "all_gather_into_tensor (coalesced)", self._timeout)

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        flats = [_flat(t.contiguous()) for t in inputs]

        def submit(name):
            return _core.grouped_allgather_async([_core_tensor(f) for f in flats], name,
                                                 self._core_set, _group_stream(flats))
        works = self._names.submit("allgather_coalesced", submit)

        def finish():
            # output_lists[r][i]: input i of rank r
            for i, (work, flat) in enumerate(zip(works, flats)):
                self._split_into(_from_core(work.output(), flat),
                                 [outputs[i] for outputs in output_lists],
                                 "all_gather_coalesced")
            return [t for outputs in output_lists for t in outputs]
        return Work(works, finish, "all_gather_coalesced", self._timeout)

    def gather(self, output_lists, inputs, opts=None):
        """Every rank's input reaches every rank (an allgather); only the
        root keeps them."""
        mine = self.rank() == opts.rootRank
        if mine and len(output_lists[0]) != self.size():
            raise ValueError("horovodcpp gather: {} output tensors for a group of {}".format(
                len(output_lists[0]), self.size()))

        def copy_out(gathered):
            if mine:
                self._split_into(gathered, output_lists[0], "gather")
            return output_lists[0] if mine else []
        return self._gather_flat("gather", inputs[0], "gather", copy_out)

    def gather_single(self, output, input, opts=None):
        mine = self.rank() == opts.rootRank

        def copy_out(gathered):
            if mine:
                self._split_into(gathered, [output], "gather_into_tensor")
            return [output] if mine else []
        return self._gather_flat("gather", input, "gather_into_tensor", copy_out)

    # -- scatter and alltoall ----------------------------------------------
    def _alltoall_flat(self, kind, send, splits, outputs, what):
        """Alltoall of a 1-D tensor: splits[j] elements to rank j; what
        arrives is split into `outputs` (flattened) in rank order."""
        def submit(name):
            return [_core.alltoall_async(_core_tensor(send), splits, name, self._core_set,
                                         _stream(send))]
        works = self._names.submit(kind, submit)

        def finish():
            self._split_into(_from_core(works[0].output(), send), outputs, what)
            return list(outputs)
        return Work(works, finish, what, self._timeout)

    def scatter(self, outputs, input_lists, opts=None):
        output = outputs[0]
        if self.rank() == opts.rootRank:
            parts = input_lists[0]
            if len(parts) != self.size():
                raise ValueError("horovodcpp scatter: {} input tensors for a group of {}".format(
                    len(parts), self.size()))
            send = torch.cat([_flat(p.contiguous()) for p in parts])
            splits = [_flat(p).numel() for p in parts]
        else:
            send = _flat(output).new_empty(0)
            splits = [0] * self.size()
        return self._alltoall_flat("scatter", send, splits, [output], "scatter")

    def alltoall(self, outputs, inputs, opts=None):
        if len(inputs) != self.size() or len(outputs) != self.size():
            raise ValueError("horovodcpp all_to_all: {} inputs and {} outputs for a group of "
                             "{}".format(len(inputs), len(outputs), self.size()))
        send = torch.cat([_flat(t.contiguous()) for t in inputs])
        return self._alltoall_flat("alltoall", send, [_flat(t).numel() for t in inputs],
                                   outputs, "all_to_all")

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        size = self.size()
        if input.dim() == 0 or input.shape[0] % size and not input_split_sizes:
            raise ValueError("horovodcpp all_to_all_single: the first dimension ({}) does not "
                             "split evenly over {} ranks".format(
                                 input.shape[0] if input.dim() else "a scalar", size))
        rows = list(input_split_sizes) or [input.shape[0] // size] * size
        expected = list(output_split_sizes) or None
        data = torch.view_as_real(input) if input.is_complex() else input
        data = data.contiguous()

        def submit(name):
            return [_core.alltoall_async(_core_tensor(data), rows, name, self._core_set,
                                         _stream(data))]
        works = self._names.submit("alltoall", submit)

        def finish():
            received = works[0].received_splits()
            if expected is not None and list(received) != expected:
                raise ValueError("horovodcpp all_to_all_single: rows received from each rank "
                                 "{}, output_split_sizes {}".format(list(received), expected))
            self._split_into(_from_core(works[0].output(), data).reshape(-1), [output],
                             "all_to_all_single")
            return [output]
        return Work(works, finish, "all_to_all_single", self._timeout)

    all_to_all_single = alltoall_base

    # -- reduce_scatter ---------------------------------------------------------
    def _reduce_scatter_rows(self, kind, rows, output, op, scale, what):
        """Reduces `rows` ([size, k]) and keeps this rank's row in `output`.
        The core's reducescatter takes Sum and Average; the other ops reduce
        every row (an allreduce) and keep this rank's."""
        if op in (Sum, Average):
            def submit(name):
                return [_core.reducescatter_async(_core_tensor(rows), name, op, scale, 1.0,
                                                  self._core_set, _stream(rows))]
            works = self._names.submit(kind, submit)

            def finish():
                _flat(output).copy_(_from_core(works[0].output(), rows).reshape(-1))
                return [output]
        else:
            reduced = torch.empty_like(rows)

            def submit(name):
                return [_core.allreduce_async(_core_tensor(rows), _core_tensor(reduced), name,
                                              op, scale, 1.0, self._core_set, _stream(rows))]
            works = self._names.submit(kind + "_any_op", submit)

            def finish():
                _flat(output).copy_(reduced[self.rank()])
                return [output]
        return Work(works, finish, what, self._timeout)

    def _rows_of(self, input, output, what):
        flat = _flat(input.contiguous())
        if flat.numel() != self.size() * _flat(output).numel():
            raise ValueError("horovodcpp {}: the input has {} elements, {} x the output's {} "
                             "expected".format(what, flat.numel(), self.size(),
                                               _flat(output).numel()))
        return flat.reshape(self.size(), -1)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        op, scale = reduce_op(opts.reduceOp, "reduce_scatter")
        parts = input_lists[0]
        if len(parts) != self.size():
            raise ValueError("horovodcpp reduce_scatter: {} inputs for a group of {}".format(
                len(parts), self.size()))
        sizes = [_flat(p).numel() for p in parts]
        if len(set(sizes)) == 1:
            rows = torch.stack([_flat(p.contiguous()) for p in parts])
            return self._reduce_scatter_rows("reduce_scatter", rows, outputs[0], op, scale,
                                             "reduce_scatter")
        # Parts of different sizes: reduce them all, keep this rank's.
        whole = torch.cat([_flat(p.contiguous()) for p in parts])
        reduced = torch.empty_like(whole)
        start = sum(sizes[:self.rank()])

        def submit(name):
            return [_core.allreduce_async(_core_tensor(whole), _core_tensor(reduced), name, op,
                                          scale, 1.0, self._core_set, _stream(whole))]
        works = self._names.submit("reduce_scatter_uneven", submit)

        def finish():
            _flat(outputs[0]).copy_(reduced[start:start + sizes[self.rank()]])
            return outputs
        return Work(works, finish, "reduce_scatter", self._timeout)

    def _reduce_scatter_base(self, output, input, opts=None):
        op, scale = reduce_op(opts.reduceOp, "reduce_scatter_tensor")
        rows = self._rows_of(input, output, "reduce_scatter_tensor")
        return self._reduce_scatter_rows("reduce_scatter", rows, output, op, scale,
                                         "reduce_scatter_tensor")

    reduce_scatter_single = _reduce_scatter_base

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        op, scale = reduce_op(opts.reduceOp, "reduce_scatter_tensor (coalesced)")
        if op not in (Sum, Average):
            works = [self._reduce_scatter_base(o, i, opts) for o, i in zip(outputs, inputs)]
            return Work([w for work in works for w in work._works],
                        lambda: [t for work in works for t in work.result()],
                        "reduce_scatter_tensor (coalesced)", self._timeout)
        rows = [self._rows_of(i, o, "reduce_scatter_tensor (coalesced)")
                for o, i in zip(outputs, inputs)]

        def submit(name):
            return _core.grouped_reducescatter_async([_core_tensor(r) for r in rows], name, op,
                                                     scale, 1.0, self._core_set,
                                                     _group_stream(rows))
        works = self._names.submit("reduce_scatter_coalesced", submit)

        def finish():
            for work, row, output in zip(works, rows, outputs):
                _flat(output).copy_(_from_core(work.output(), row).reshape(-1))
            return list(outputs)
        return Work(works, finish, "reduce_scatter_tensor (coalesced)", self._timeout)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    # -- barriers ------------------------------------------------------------
    def barrier(self, opts=None):
        try:
            _core.barrier(self._core_set)
        except Exception as error:  # noqa: BLE001
            raise as_dist_error(error, "barrier") from error
        return completed([])

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """As Gloo's: rank 0 waits for every rank's arrival (through the
        group's store) for `timeout`, and raises naming the first rank that
        did not arrive (every such rank with wait_all_ranks); the other
        ranks then raise the same error instead of waiting on."""
        self._monitored += 1
        monitored_barrier(self._store, self.rank(), self.size(), self._monitored,
                          timeout if timeout is not None else self._timeout, wait_all_ranks)

    # -- point to point (a Gloo group of the same ranks: point_to_point.py) ---
    def send(self, tensors, dst, tag):
        return self._p2p.send(tensors, dst, tag)

    def recv(self, tensors, src, tag):
        return self._p2p.recv(tensors, src, tag)

    def recv_anysource(self, tensors, tag):
        return self._p2p.recv_anysource(tensors, tag)
