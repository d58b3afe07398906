"""Gradients of the differentiable collectives. Horovod's backward passes
(horovod/torch/mpi_ops.py) are the spec: each test writes its formula out
from every rank's incoming gradients (reference.check_gradient)."""
import pytest
import torch

import horovodcpp.torch as hvd
from reference import check_gradient, rank_tensor, reducescatter_rows


def reduce_all(xs, op, prescale=1.0, postscale=1.0):
    stacked = torch.stack([x * prescale for x in xs])
    reduced = {hvd.Sum: lambda: stacked.sum(0), hvd.Average: lambda: stacked.mean(0),
               hvd.Min: lambda: stacked.amin(0), hvd.Max: lambda: stacked.amax(0),
               hvd.Product: lambda: stacked.prod(0)}[op]()
    return reduced * postscale


def average(ws, i=0):
    """The average over ranks of their incoming gradients of output i."""
    return torch.stack([w[i] for w in ws]).mean(0)


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average, hvd.Min, hvd.Max, hvd.Product], ids=str)
def test_allreduce_grad(op):
    # The allreduce of the incoming gradients with the same op and factors.
    check_gradient(
        lambda r, i: rank_tensor(r, [3, 4]),
        lambda xs: hvd.allreduce(xs[0], name="g.ar.{}".format(op), op=op, prescale_factor=0.5,
                                 postscale_factor=3.0),
        lambda all_xs: [reduce_all([xs[0] for xs in all_xs], op, 0.5, 3.0)] * hvd.size(),
        lambda ws: [reduce_all([w[0] for w in ws], op, 0.5, 3.0)])


@pytest.mark.parametrize("op", [hvd.Average, hvd.Max], ids=str)
def test_grouped_allreduce_grad(op):
    shapes = [[2], [3, 2]]
    check_gradient(
        lambda r, i: rank_tensor(r, shapes[i], seed=i),
        lambda xs: hvd.grouped_allreduce(xs, name="g.gar.{}".format(op), op=op),
        lambda all_xs: [[reduce_all([xs[i] for xs in all_xs], op) for i in range(2)]] * hvd.size(),
        lambda ws: [reduce_all([w[i] for w in ws], op) for i in range(2)],
        count=2)


def test_allreduce_fp16_compression_grad():
    x = rank_tensor(hvd.rank(), [5], torch.float32).requires_grad_()
    hvd.allreduce(x, name="g.fp16", op=hvd.Sum, compression=hvd.Compression.fp16).sum().backward()
    assert x.grad.dtype == torch.float32
    torch.testing.assert_close(x.grad, torch.full([5], float(hvd.size())))


def rows_of(ws, rows, i=0):
    """This rank's rows of the average incoming gradient of output i, rank
    r having contributed rows(r) rows."""
    offset = sum(rows(r) for r in range(hvd.rank()))
    return average(ws, i)[offset:offset + rows(hvd.rank())]


def test_allgather_grad():
    # The Average allreduce of the incoming gradients, this rank's rows.
    check_gradient(lambda r, i: rank_tensor(r, [r + 1, 3]),
                   lambda xs: hvd.allgather(xs[0], name="g.ag"),
                   lambda all_xs: [torch.cat([xs[0] for xs in all_xs])] * hvd.size(),
                   lambda ws: [rows_of(ws, lambda r: r + 1)])


def test_grouped_allgather_grad():
    shapes = [lambda r: [r + 1], lambda r: [2, 2]]
    check_gradient(lambda r, i: rank_tensor(r, shapes[i](r), seed=i),
                   lambda xs: hvd.grouped_allgather(xs, name="g.gag"),
                   lambda all_xs: [[torch.cat([xs[i] for xs in all_xs]) for i in range(2)]]
                   * hvd.size(),
                   lambda ws: [rows_of(ws, lambda r: r + 1, 0), rows_of(ws, lambda r: 2, 1)],
                   count=2)


def test_broadcast_grad():
    # The Average allreduce of the incoming gradients on the root, zero elsewhere.
    root = 1 % hvd.size()
    check_gradient(lambda r, i: rank_tensor(r, [4]),
                   lambda xs: hvd.broadcast(xs[0], root, name="g.bc"),
                   lambda all_xs: [all_xs[root][0] * 1] * hvd.size(),
                   lambda ws: [average(ws) * (hvd.rank() == root)])


def test_alltoall_grad():
    # The incoming gradients go back where their rows came from.
    n, me = hvd.size(), hvd.rank()
    splits = [[(r + j) % 3 for j in range(n)] for r in range(n)]

    def reference(all_xs):
        outputs = []
        for j in range(n):
            pieces = []
            for r in range(n):
                offset = sum(splits[r][:j])
                pieces.append(all_xs[r][0][offset:offset + splits[r][j]])
            outputs.append(torch.cat(pieces))
        return outputs

    def grads(ws):
        pieces = []
        for j in range(n):
            offset = sum(splits[r][j] for r in range(me))
            pieces.append(ws[j][0][offset:offset + splits[me][j]])
        return [torch.cat(pieces)]

    check_gradient(lambda r, i: rank_tensor(r, [sum(splits[r]), 2]),
                   lambda xs: hvd.alltoall(xs[0], splits=splits[hvd.rank()], name="g.a2a")[0],
                   reference, grads)


def scatter_reference(tensors, op, rows, prescale=1.0, postscale=1.0):
    full = reduce_all(tensors, op, prescale, postscale)
    counts = reducescatter_rows(rows, hvd.size())
    return [full[sum(counts[:r]):sum(counts[:r + 1])] for r in range(hvd.size())]


@pytest.mark.parametrize("op", [hvd.Sum, hvd.Average], ids=str)
def test_reducescatter_grad(op):
    # Every rank's incoming gradient gathered, times the scale factors and,
    # for Sum, the number of ranks (Average: not divided by it).
    rows = 2 * hvd.size() + 1
    scale = 2.0 * 0.5 * (hvd.size() if op == hvd.Sum else 1)
    check_gradient(lambda r, i: rank_tensor(r, [rows, 2]),
                   lambda xs: hvd.reducescatter(xs[0], name="g.rs.{}".format(op), op=op,
                                                prescale_factor=2.0, postscale_factor=0.5),
                   lambda all_xs: scatter_reference([xs[0] for xs in all_xs], op, rows, 2.0, 0.5),
                   lambda ws: [torch.cat([w[0] for w in ws]) * scale])


def test_grouped_reducescatter_grad():
    rows = [hvd.size(), hvd.size() + 1]

    def reference(all_xs):
        per_member = [scatter_reference([xs[i] for xs in all_xs], hvd.Average, rows[i])
                      for i in range(2)]
        return [[per_member[i][r] for i in range(2)] for r in range(hvd.size())]

    check_gradient(lambda r, i: rank_tensor(r, [rows[i], 3], seed=i),
                   lambda xs: hvd.grouped_reducescatter(xs, name="g.grs"), reference,
                   lambda ws: [torch.cat([w[i] for w in ws]) for i in range(2)], count=2)
