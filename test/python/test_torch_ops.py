"""horovodcpp.torch collectives: every op and dtype against a local
reference, the asynchronous forms, and errors raised on every rank."""
import gc
import json
import os
import time

import pytest
import torch

import horovodcpp.torch as hvd
from horovodcpp import _core
from reference import (DTYPES, OPS, assert_equal, every_rank, rank_tensor, reduce_reference,
                       reducescatter_rows, scaled_like_horovod)


def test_topology():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    assert hvd.is_homogeneous()  # one host
    assert hvd.mpi_built() or hvd.gloo_built()
    assert hvd.gloo_enabled() == (os.environ.get("HOROVODCPP_CPU_OPERATIONS") == "gloo")
    assert hvd.mpi_enabled() != hvd.gloo_enabled()
    assert hvd.cuda_built() or not hvd.nccl_built()  # NCCL only with CUDA
    assert hvd.global_process_set.size() == hvd.size()
    assert hvd.global_process_set.ranks == list(range(hvd.size()))


def test_build_and_transport_queries_as_horovod():
    # nccl_built() is NCCL_VERSION_CODE (user code compares it with numbers),
    # the others are bools; mpi_threads_supported() needs MPI.
    version = hvd.nccl_built()
    assert type(version) is int
    assert (version > 0) == ("nccl" in _core.built_gpu_operations())
    assert version == 0 or version >= 2000  # major * 1000 (< 2.9) or * 10000 + minor * 100
    for query in (hvd.mpi_built, hvd.gloo_built, hvd.cuda_built, hvd.rocm_built, hvd.ddl_built,
                  hvd.ccl_built, hvd.mpi_enabled, hvd.gloo_enabled, hvd.is_homogeneous,
                  hvd.is_initialized):
        assert type(query()) is bool, query
    if hvd.mpi_enabled():
        assert hvd.mpi_threads_supported() is True  # init asks for MPI_THREAD_MULTIPLE
    else:
        with pytest.raises(ValueError, match="MPI is not enabled"):
            hvd.mpi_threads_supported()


def test_errors_user_code_catches():
    # Horovod's import path for the error a failed collective raises, from
    # synchronize() too (the handle is then gone).
    from horovodcpp.common.exceptions import HorovodInternalError
    assert HorovodInternalError is hvd.HorovodInternalError
    me = hvd.size() - 1 == hvd.rank()
    handle = hvd.allreduce_async(torch.zeros(2 + me), name="sync.bad_shape")
    with pytest.raises(HorovodInternalError, match="shape"):
        hvd.synchronize(handle)
    assert hvd.synchronize(handle) is None
    with pytest.raises(ValueError):
        hvd.poll(handle)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", OPS, ids=str)
def test_allreduce(dtype, op):
    tensor = rank_tensor(hvd.rank(), [3, 5], dtype)
    name = "ar.{}.{}".format(dtype, op)
    if dtype == torch.bool and op == hvd.Average:
        with pytest.raises(hvd.InvalidArgumentError, match="Average"):
            hvd.allreduce(tensor, name=name, op=op)
        return
    expected = reduce_reference(every_rank(lambda r: rank_tensor(r, [3, 5], dtype)), op, dtype)
    result = hvd.allreduce(tensor, name=name, op=op)
    assert_equal(result, expected, dtype)
    assert torch.equal(tensor, rank_tensor(hvd.rank(), [3, 5], dtype))  # input untouched
    hvd.allreduce_(tensor, name=name, op=op)
    assert_equal(tensor, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_of_contiguous_cpu_tensors_skips_dlpack(dtype, monkeypatch):
    """Their addresses, dtype and shape go to the core (_core.allreduce_direct,
    _core.allreduce_async_direct): correct results for every dtype without a
    DLPack export, blocking and not; a non-contiguous tensor is copied and
    reduced as before; a handle keeps its tensors alive."""
    from horovodcpp.torch import core_ops

    def no_dlpack(tensor):
        raise AssertionError("exported through DLPack")
    monkeypatch.setattr(core_ops, "_core_tensor", no_dlpack)
    op = hvd.Max if dtype == torch.bool else hvd.Sum
    name = "fast.{}".format(dtype)
    expected = reduce_reference(every_rank(lambda r: rank_tensor(r, [4, 6], dtype)), op, dtype)
    assert_equal(hvd.allreduce(rank_tensor(hvd.rank(), [4, 6], dtype), name=name, op=op),
                 expected, dtype)
    tensor = rank_tensor(hvd.rank(), [4, 6], dtype)
    assert hvd.allreduce_(tensor, name=name, op=op) is tensor
    assert_equal(tensor, expected, dtype)
    transposed = rank_tensor(hvd.rank(), [6, 4], dtype).t()
    assert_equal(hvd.allreduce(transposed, name=name + ".t", op=op),
                 reduce_reference(every_rank(lambda r: rank_tensor(r, [6, 4], dtype).t()), op,
                                  dtype), dtype)
    tensor = rank_tensor(hvd.rank(), [4, 6], dtype)
    assert hvd.synchronize(hvd.allreduce_async_(tensor, name=name + ".async_", op=op)) is tensor
    assert_equal(tensor, expected, dtype)
    handle = hvd.allreduce_async(rank_tensor(hvd.rank(), [4, 6], dtype), name=name + ".async",
                                 op=op)
    gc.collect()  # the input has no other reference: the handle holds it
    assert_equal(hvd.synchronize(handle), expected, dtype)
    assert hvd.synchronize(handle) is None  # already synchronized


def test_handles_of_the_core_table_and_of_python():
    """Address-path handles live in the core's table, the others (a
    non-contiguous tensor through DLPack, a group) in Python's: numbers
    never shared, poll and synchronize work on each, a synchronized handle
    is unknown to poll and gives None again."""
    tensor = torch.ones(5)
    transposed = torch.ones(3, 2).t()
    handles = [hvd.allreduce_async_(tensor, name="handles.table", op=hvd.Sum),
               hvd.allreduce_async(transposed, name="handles.dlpack", op=hvd.Sum),
               hvd.grouped_allreduce_async([torch.ones(2)], name="handles.group", op=hvd.Sum)]
    assert len(set(handles)) == 3
    for handle in handles:
        while not hvd.poll(handle):
            time.sleep(0.001)
    assert hvd.synchronize(handles[0]) is tensor
    torch.testing.assert_close(tensor, torch.full([5], float(hvd.size())))
    torch.testing.assert_close(hvd.synchronize(handles[1]), torch.full([2, 3], float(hvd.size())))
    torch.testing.assert_close(hvd.synchronize(handles[2])[0], torch.full([2], float(hvd.size())))
    for handle in handles:
        assert hvd.synchronize(handle) is None
        with pytest.raises(ValueError, match="unknown or already synchronized"):
            hvd.poll(handle)


def test_the_core_fast_calls_refuse_and_raise():
    """_core.allreduce_direct and allreduce_async_direct (no pybind11
    dispatch) take only dense contiguous tensors of the core's dtypes (the
    blocking call CPU ones only) and give
    NotImplemented back for the others; bad arguments raise TypeError, and
    the core's errors arrive as its Python exceptions, naming
    "allreduce.<name>"."""
    plain = torch.ones(3)
    for other in (torch.ones(3, 2).t(), torch.ones(3, dtype=torch.complex64),
                  torch.ones(3).to_sparse()):
        for call in (_core.allreduce_direct, _core.allreduce_async_direct):
            assert call(other, other, "refused", hvd.Sum, 1.0, 1.0, None) is NotImplemented
            assert call(plain, other, "refused", hvd.Sum, 1.0, 1.0, None) is NotImplemented
    with pytest.raises(TypeError, match="op must be a ReduceOp"):
        _core.allreduce_direct(plain, plain, "bad.op", "Sum", 1.0, 1.0, None)
    with pytest.raises(TypeError, match="takes 7 positional arguments"):
        _core.allreduce_async_direct(plain, plain, "few")
    with pytest.raises(TypeError):
        _core.synchronize_handle("not a handle")
    with pytest.raises(ValueError, match="unknown dtype code"):  # refused, the types kept
        _core.set_direct_tensor_types({torch.float32: 99}, torch.strided, None)
    with pytest.raises(hvd.InvalidArgumentError, match="dtype"):
        _core.allreduce_direct(plain, torch.ones(3, dtype=torch.float64), "mixed", hvd.Sum, 1.0,
                               1.0, None)
    first = hvd.allreduce_async_(torch.ones(2), name="fast.twice", op=hvd.Sum)
    with pytest.raises(hvd.InvalidArgumentError, match="allreduce.fast.twice"):
        hvd.allreduce_async_(torch.ones(2), name="fast.twice", op=hvd.Sum)
    torch.testing.assert_close(hvd.synchronize(first), torch.full([2], float(hvd.size())))


class _TensorOnAGpu:
    """What the direct calls read of a CUDA tensor, on GPU 3."""
    dtype, layout, shape = torch.float32, torch.strided, (2,)
    is_cpu, is_cuda = False, True

    def __init__(self):
        self.host = torch.ones(2)  # an address; a build without CUDA never reads it

    def is_contiguous(self):
        return True

    def data_ptr(self):
        return self.host.data_ptr()

    def get_device(self):
        return 3


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU would use the made-up stream")
def test_a_cuda_tensor_goes_direct_on_its_gpu_after_its_current_stream():
    """The asynchronous direct call takes a CUDA tensor as one on its GPU,
    ordered after that GPU's current stream (asked of the front end's
    function); a build without CUDA, or a machine without a GPU, then
    refuses it naming its device. The
    blocking call, and a front end without a stream function, leave it to
    the DLPack path."""
    from horovodcpp.torch import core_ops
    asked = []
    tensor = _TensorOnAGpu()
    try:
        _core.set_direct_tensor_types(core_ops._DIRECT_DTYPES, torch.strided,
                                      lambda device: asked.append(device) or 0x5000)
        assert _core.allreduce_direct(tensor, tensor, "gpu3", hvd.Sum, 1.0, 1.0,
                                      None) is NotImplemented
        assert _core.allreduce_async_direct(tensor, torch.ones(2), "gpu3", hvd.Sum, 1.0, 1.0,
                                            None) is NotImplemented  # output on another device
        assert asked == [3]
        handle = _core.allreduce_async_direct(tensor, tensor, "gpu3", hvd.Sum, 1.0, 1.0, None)
        assert asked == [3, 3]
        # refused by its device: a build without CUDA, or CUDA without a GPU
        with pytest.raises(hvd.HorovodInternalError,
                           match=r"on cuda:3 need a build|cudaSetDevice\(3\)"):
            hvd.synchronize(handle)
        _core.set_direct_tensor_types(core_ops._DIRECT_DTYPES, torch.strided, None)
        assert _core.allreduce_async_direct(tensor, tensor, "gpu3", hvd.Sum, 1.0, 1.0,
                                            None) is NotImplemented
    finally:
        _core.set_direct_tensor_types(core_ops._DIRECT_DTYPES, torch.strided,
                                      core_ops._current_raw_stream)


def test_allreduce_scale_factors_and_average_argument():
    tensor = rank_tensor(hvd.rank(), [7])
    expected = 3.0 * sum(0.5 * t for t in every_rank(lambda r: rank_tensor(r, [7])))
    result = hvd.allreduce(tensor, op=hvd.Sum, prescale_factor=0.5, postscale_factor=3.0)
    torch.testing.assert_close(result, expected)
    with pytest.warns(DeprecationWarning):
        summed = hvd.allreduce(tensor, average=False, name="deprecated")
    torch.testing.assert_close(summed, sum(every_rank(lambda r: rank_tensor(r, [7]))))
    with pytest.raises(ValueError, match="supersedes"):
        hvd.allreduce(tensor, average=True, op=hvd.Sum)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.uint8, torch.float16],
                         ids=str)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=str)
def test_scale_factors_as_horovod(dtype, op):
    # Horovod scales each rank's tensor before the sum and the sum after it
    # (Average: by postscale / size), integers in float64 truncated back,
    # float16 in float32: allreduce, reducescatter and their grouped forms.
    n, me = hvd.size(), hvd.rank()
    pre, post = (0.7, 1.5) if dtype != torch.uint8 else (1.5, 0.7)
    make = lambda r: (rank_tensor(r, [2 * n, 3], torch.float64) * 8).round().to(dtype)  # noqa
    if dtype == torch.uint8:
        make = lambda r: rank_tensor(r, [2 * n, 3], dtype) * 9 + r  # noqa: E731
    summed = sum(scaled_like_horovod(t, pre).float() for t in every_rank(make)).to(dtype)
    expected = scaled_like_horovod(summed, post / n if op == hvd.Average else post)
    rows = reducescatter_rows(2 * n, n)
    share = expected[sum(rows[:me]):sum(rows[:me + 1])]
    kwargs = dict(op=op, prescale_factor=pre, postscale_factor=post)
    tag = "scaled.{}.{}".format(dtype, op)
    assert torch.equal(hvd.allreduce(make(me), name=tag, **kwargs), expected)
    for got in hvd.grouped_allreduce([make(me), make(me)], name=tag + ".g", **kwargs):
        assert torch.equal(got, expected)
    assert torch.equal(hvd.reducescatter(make(me), name=tag + ".rs", **kwargs), share)
    for got in hvd.grouped_reducescatter([make(me)] * 2, name=tag + ".grs", **kwargs):
        assert torch.equal(got, share)


def test_allreduce_async_poll_synchronize():
    tensors = [rank_tensor(hvd.rank(), [4], seed=i) for i in range(3)]
    handles = [hvd.allreduce_async(t, name="async.{}".format(i), op=hvd.Sum)
               for i, t in enumerate(tensors)]
    handle_ = hvd.allreduce_async_(tensors[0].clone(), name="async_", op=hvd.Max)
    results = [hvd.synchronize(h) for h in reversed(handles)][::-1]
    assert hvd.poll(handle_) in (True, False)
    in_place = hvd.synchronize(handle_)
    for i, result in enumerate(results):
        torch.testing.assert_close(result, sum(every_rank(lambda r: rank_tensor(r, [4], seed=i))))
    torch.testing.assert_close(in_place, torch.stack(every_rank(
        lambda r: rank_tensor(r, [4]))).amax(0))
    assert hvd.synchronize(handles[0]) is None  # already synchronized
    with pytest.raises(ValueError):
        hvd.poll(handles[0])


def test_allreduce_fp16_compression():
    tensor = rank_tensor(hvd.rank(), [64], torch.float32)
    result = hvd.allreduce(tensor, name="fp16", compression=hvd.Compression.fp16)
    assert result.dtype == torch.float32
    expected = torch.stack(every_rank(lambda r: rank_tensor(r, [64], torch.float32))).mean(0)
    torch.testing.assert_close(result, expected, rtol=1e-2, atol=1e-2)
    bf16 = hvd.allreduce(tensor, name="bf16", compression=hvd.Compression.bf16)
    torch.testing.assert_close(bf16, expected, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("in_place", [False, True], ids=["out_of_place", "in_place"])
def test_grouped_allreduce(in_place):
    shapes = [[3], [2, 4], [], [5, 1, 2]]
    dtypes = [torch.float32, torch.int32, torch.float64, torch.bfloat16]
    tensors = [rank_tensor(hvd.rank(), s, d, seed=i)
               for i, (s, d) in enumerate(zip(shapes, dtypes))]
    if in_place:
        results = hvd.grouped_allreduce_(tensors, name="group_", op=hvd.Sum)
        assert all(a is b for a, b in zip(results, tensors))
    else:
        results = hvd.synchronize(hvd.grouped_allreduce_async(tensors, name="group", op=hvd.Sum))
        assert hvd.grouped_allreduce([]) == []
    for i, (s, d) in enumerate(zip(shapes, dtypes)):
        expected = reduce_reference(every_rank(lambda r: rank_tensor(r, s, d, seed=i)), hvd.Sum, d)
        assert_equal(results[i], expected, d)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather(dtype):
    # Ragged first dimension: rank r contributes r + 1 rows (rank 0 also a zero-row case below).
    make = lambda r: rank_tensor(r, [r + 1, 2, 3], dtype)  # noqa: E731
    result = hvd.allgather(make(hvd.rank()), name="ag.{}".format(dtype))
    assert_equal(result, torch.cat(every_rank(make)), dtype)
    empty = hvd.synchronize(hvd.allgather_async(torch.zeros(0, 4, dtype=dtype), name="ag0"))
    assert empty.shape == (0, 4) and empty.dtype == dtype


def test_allgather_scalar_and_grouped():
    scalar = hvd.allgather(torch.tensor(float(hvd.rank())), name="scalar")
    assert torch.equal(scalar, torch.arange(hvd.size(), dtype=torch.float32))
    make = [lambda r: rank_tensor(r, [r + 2]), lambda r: rank_tensor(r, [1, 3], torch.int64)]
    mine = [m(hvd.rank()) for m in make]
    expected = [torch.cat(every_rank(m)) for m in make]
    for results in (hvd.grouped_allgather(mine, name="gag"),
                    hvd.synchronize(hvd.grouped_allgather_async(mine, name="gag_async"))):
        for got, want in zip(results, expected):
            assert torch.equal(got, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast(dtype):
    for root in range(hvd.size()):
        tensor = rank_tensor(hvd.rank(), [4, 3], dtype)
        expected = rank_tensor(root, [4, 3], dtype)
        name = "bc.{}.{}".format(dtype, root)
        assert torch.equal(hvd.broadcast(tensor, root, name=name), expected)
        assert torch.equal(tensor, rank_tensor(hvd.rank(), [4, 3], dtype))
        assert torch.equal(hvd.synchronize(hvd.broadcast_async(tensor, root, name)), expected)
        hvd.synchronize(hvd.broadcast_async_(tensor, root, name))
        assert torch.equal(tensor, expected)
        other = rank_tensor(hvd.rank(), [4, 3], dtype, seed=1)
        assert hvd.broadcast_(other, root, name) is other
        assert torch.equal(other, rank_tensor(root, [4, 3], dtype, seed=1))


def splits_of(r, size):
    return [(r + j) % 3 for j in range(size)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_alltoall(dtype):
    n, me = hvd.size(), hvd.rank()
    make = lambda r: rank_tensor(r, [sum(splits_of(r, n)), 2], dtype)  # noqa: E731
    output, received = hvd.alltoall(make(me), splits=splits_of(me, n), name="a2a.{}".format(dtype))
    pieces = []
    for r in range(n):
        offset = sum(splits_of(r, n)[:me])
        pieces.append(make(r)[offset:offset + splits_of(r, n)[me]])
    assert_equal(output, torch.cat(pieces), dtype)
    assert received.dtype == torch.int32
    assert received.tolist() == [splits_of(r, n)[me] for r in range(n)]

    # Equal parts without splits; splits as a tensor keep their dtype.
    equal = rank_tensor(me, [2 * n, 3], dtype)
    output = hvd.alltoall(equal, name="a2a_equal.{}".format(dtype))
    expected = torch.cat(every_rank(lambda r: rank_tensor(r, [2 * n, 3], dtype)[2 * me:2 * me + 2]))
    assert_equal(output, expected, dtype)
    output, received = hvd.synchronize(hvd.alltoall_async(
        equal, torch.full([n], 2, dtype=torch.int64), name="a2a_async"))
    assert_equal(output, expected, dtype)
    assert received.dtype == torch.int64 and received.tolist() == [2] * n


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d not in (torch.bool, torch.uint8)],
                         ids=str)
@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=str)
def test_reducescatter(dtype, op):
    n, me = hvd.size(), hvd.rank()
    rows = 2 * n + 1  # not divisible: the first ranks get one row more
    tensor = rank_tensor(me, [rows, 3], dtype)
    full = reduce_reference(every_rank(lambda r: rank_tensor(r, [rows, 3], dtype)), op, dtype)
    counts = reducescatter_rows(rows, n)
    expected = full[sum(counts[:me]):sum(counts[:me + 1])]
    assert_equal(hvd.reducescatter(tensor, name="rs.{}.{}".format(dtype, op), op=op), expected, dtype)
    assert_equal(hvd.synchronize(hvd.reducescatter_async(tensor, name="rs_async", op=op)),
                 expected, dtype)


def test_reducescatter_scaled_and_grouped():
    n, me = hvd.size(), hvd.rank()
    shapes = [[n, 2], [3 * n + 2]]
    mine = [rank_tensor(me, s, seed=i) for i, s in enumerate(shapes)]
    expected = []
    for i, s in enumerate(shapes):
        full = 2.0 * sum(0.25 * t for t in every_rank(lambda r: rank_tensor(r, s, seed=i)))
        counts = reducescatter_rows(s[0], n)
        expected.append(full[sum(counts[:me]):sum(counts[:me + 1])])
    kwargs = dict(op=hvd.Sum, prescale_factor=0.25, postscale_factor=2.0)
    for results in (hvd.grouped_reducescatter(mine, name="grs", **kwargs),
                    hvd.synchronize(hvd.grouped_reducescatter_async(mine, name="grs_a", **kwargs))):
        for got, want in zip(results, expected):
            torch.testing.assert_close(got, want)
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.reducescatter(mine[0], name="rs_max", op=hvd.Max)


def test_mismatches_fail_on_every_rank():
    me = hvd.size() - 1 == hvd.rank()  # the last rank disagrees
    with pytest.raises(hvd.MismatchError, match="shape"):
        hvd.allreduce(torch.zeros(3 + me), name="bad_shape")
    with pytest.raises(hvd.MismatchError, match="dtype"):
        hvd.allreduce(torch.zeros(3, dtype=torch.float64 if me else torch.float32),
                      name="bad_dtype")
    with pytest.raises(hvd.MismatchError, match="root"):
        hvd.broadcast(torch.zeros(2), root_rank=int(me), name="bad_root")
    with pytest.raises(hvd.MismatchError):
        hvd.allgather(torch.zeros(2, 3 + me), name="bad_gather")
    with pytest.raises(hvd.HorovodInternalError):  # every error is a HorovodInternalError
        hvd.grouped_allreduce([torch.zeros(2), torch.zeros(2 + me)], name="bad_group")
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.alltoall(torch.zeros(hvd.size() + 1), name="bad_split")


def test_invalid_arguments():
    with pytest.raises(ValueError, match="not supported"):
        hvd.allreduce(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(ValueError, match="contiguous"):
        hvd.allreduce_(torch.zeros(4, 4).t())
    assert hvd.allreduce(torch.ones(4, 4).t(), op=hvd.Sum).is_contiguous()  # copied


def test_barrier_and_timeline(tmp_path):
    path = str(tmp_path / "timeline.json")
    hvd.start_timeline(path)
    hvd.allreduce(torch.ones(8), name="timeline_tensor")
    hvd.stop_timeline()
    hvd.barrier()
    if hvd.rank() == 0:
        with open(path) as f:
            events = json.load(f)
        assert "allreduce.timeline_tensor" in json.dumps(events)


def test_shutdown_and_init_again():
    hvd.shutdown()
    assert not hvd.is_initialized()
    with pytest.raises(ValueError):
        hvd.rank()
    hvd.init()
    assert torch.equal(hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full([2], hvd.size() * 1.0))
