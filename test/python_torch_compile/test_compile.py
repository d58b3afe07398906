"""horovodcpp.torch under torch.compile: the collectives are custom
operators, so a compiled function has no graph break (torch._dynamo.explain,
fullgraph=True) and gives eager's results and gradients; a compiled model
trains with DistributedOptimizer (averaged gradients, backward_passes_per_step);
and with hvd.compile_backend() its gradients' allreduces start while the
compiled backward still runs, seen in the timeline's order of events."""
import json
import logging
import os
import tempfile

import pytest
import torch

import horovodcpp.torch as hvd

BACKEND = "aot_eager"  # AOTAutograd without code generation (fast); one test uses inductor


def rank_tensor(shape, seed=0):
    g = torch.Generator().manual_seed(100 * seed + hvd.rank())
    return torch.randn(shape, generator=g)


def explain_breaks(fn, *args):
    torch._dynamo.reset()
    return torch._dynamo.explain(fn)(*args).graph_break_count


def every_collective(x):
    a = hvd.allreduce(x * 2, name="c.allreduce", op=hvd.Sum)
    b = hvd.allgather(x, name="c.allgather")
    c = hvd.broadcast(x, root_rank=0, name="c.broadcast")
    d = hvd.reducescatter(torch.cat([x] * hvd.size()), name="c.reducescatter", op=hvd.Sum)
    e, f = hvd.grouped_allreduce([x, x + 1], name="c.grouped", op=hvd.Average)
    g = hvd.alltoall(torch.cat([x] * hvd.size()), name="c.alltoall")
    h = hvd.synchronize(hvd.allreduce_async(x, name="c.async", op=hvd.Max))
    i = hvd.synchronize(hvd.allgather_async(x, name="c.allgather_async"))
    j = hvd.synchronize(hvd.broadcast_async(x, 1 % hvd.size(), name="c.broadcast_async"))
    k = hvd.synchronize(hvd.reducescatter_async(torch.cat([x] * hvd.size()),
                                                name="c.reducescatter_async", op=hvd.Sum))
    m, n = hvd.synchronize(hvd.grouped_allreduce_async([x, x * 3], name="c.grouped_async",
                                                       op=hvd.Sum))
    y = x.clone()
    hvd.allreduce_(y, name="c.in_place", op=hvd.Min)
    return [a, b, c, d, e, f, g, h, i, j, k, m, n, y]


def test_no_graph_break_and_eager_results():
    x = rank_tensor([4, 3])
    assert explain_breaks(every_collective, x) == 0
    compiled = torch.compile(every_collective, backend=BACKEND, fullgraph=True)
    for got, want in zip(compiled(x), every_collective(x)):
        torch.testing.assert_close(got, want)


def test_inductor_compiles_them():
    def f(x):
        return hvd.allreduce(torch.sin(x), name="inductor", op=hvd.Sum) * 2
    x = rank_tensor([8])
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x), f(x))


def test_gradients_are_horovods():
    def f(x):
        return (hvd.allreduce(x, name="g.ar", op=hvd.Sum) * 3).sum() + \
            hvd.allgather(x, name="g.ag").pow(2).sum() + \
            hvd.reducescatter(torch.cat([x] * hvd.size()), name="g.rs", op=hvd.Average).sum() + \
            hvd.broadcast(x, root_rank=0, name="g.bc").sum()
    grads = []
    for fn in (f, torch.compile(f, backend=BACKEND, fullgraph=True)):
        x = rank_tensor([2, 3]).requires_grad_()
        fn(x).backward()
        grads.append(x.grad)
    torch.testing.assert_close(grads[1], grads[0])


def test_process_set_and_names_as_eager():
    if hvd.size() < 2:
        pytest.skip("needs two ranks")
    evens = hvd.add_process_set(list(range(0, hvd.size(), 2)))
    odds = hvd.add_process_set(list(range(1, hvd.size(), 2)))
    try:
        mine = evens if hvd.rank() % 2 == 0 else odds

        def f(x):
            return hvd.allreduce(x, name="set", op=hvd.Sum, process_set=mine)
        x = torch.full((3,), float(hvd.rank()))
        members = mine.ranks
        expected = torch.full((3,), float(sum(members)))
        torch.testing.assert_close(torch.compile(f, backend=BACKEND, fullgraph=True)(x), expected)
        # A rank disagreeing on the shape under one name fails every rank, as in eager mode.
        bad = torch.compile(lambda t: hvd.allreduce(t, name="mismatch", op=hvd.Sum),
                            backend=BACKEND, fullgraph=True)
        with pytest.raises(hvd.MismatchError, match="mismatch"):
            bad(torch.ones(2 + hvd.rank()))
    finally:
        hvd.remove_process_set(odds)
        hvd.remove_process_set(evens)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 4))


def batch(step, micro=0):
    g = torch.Generator().manual_seed(1000 * step + 10 * hvd.rank() + micro)
    return torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)


@pytest.mark.parametrize("passes", [1, 3])
@pytest.mark.parametrize("overlap", [False, True], ids=["plain", "compile_backend"])
def test_compiled_model_trains_with_the_ranks_mean(passes, overlap):
    """Each step's gradients are the ranks' mean of the gradient summed over
    the passes, computed here from every rank's batches by one eager model."""
    model = make_model()
    reference = make_model()
    backend = hvd.compile_backend(backend=BACKEND, bucket_cap_mb=0.01) if overlap else BACKEND
    compiled = torch.compile(model, backend=backend)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                         named_parameters=model.named_parameters(),
                                         backward_passes_per_step=passes)
    for step in range(3):
        optimizer.zero_grad()
        for micro in range(passes):
            x, y = batch(step, micro)
            torch.nn.functional.mse_loss(compiled(x), y).backward()
        optimizer.synchronize()
        reference.zero_grad()
        for rank in range(hvd.size()):
            for micro in range(passes):
                g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro)
                x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
                (torch.nn.functional.mse_loss(reference(x), y) / hvd.size()).backward()
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)
        with optimizer.skip_synchronize():
            optimizer.step()
        with torch.no_grad():
            for p, q in zip(model.parameters(), reference.parameters()):
                q.copy_(p)


@pytest.mark.parametrize("recompute", [False, True], ids=["saved", "recomputed"])
def test_compile_backend_parts_save_what_their_backward_reads(recompute, monkeypatch):
    """With inductor, compile_backend() partitions each part with AOTAutograd's
    default partitioner (nothing recomputed), recompute=True with
    inductor's; the gradients are eager's either way."""
    if not hasattr(torch._inductor.config, "custom_partitioner_fn"):
        pytest.skip("this PyTorch's inductor takes no custom partitioner")
    import torch._functorch.partitioners as partitioners
    calls = []
    default_partition = partitioners.default_partition
    monkeypatch.setattr(partitioners, "default_partition",
                        lambda *a, **k: calls.append(1) or default_partition(*a, **k))
    torch._dynamo.reset()
    model, reference = make_model(), make_model()
    compiled = torch.compile(model, backend=hvd.compile_backend(bucket_cap_mb=0.01,
                                                                recompute=recompute))
    x, y = batch(0)
    torch.nn.functional.mse_loss(compiled(x), y).backward()
    torch.nn.functional.mse_loss(reference(x), y).backward()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-6, msg=name)
    assert (len(calls) > 1) != recompute, "{} parts partitioned by default_partition".format(
        len(calls))


def test_compile_backend_parts_are_cached_by_inductor():
    """Inductor pickles its config, and so compile_backend()'s partitioner,
    into each compiled part's cache key: no "Failed to pickle cache key"
    warning, and the parts can be cached."""
    if not hasattr(torch._inductor.config, "custom_partitioner_fn"):
        pytest.skip("this PyTorch's inductor takes no custom partitioner")
    warnings = []

    class Collect(logging.Handler):
        def emit(self, record):
            warnings.append(record.getMessage())
    handler = Collect(level=logging.WARNING)
    logger = logging.getLogger("torch._inductor.codecache")
    logger.addHandler(handler)
    try:
        torch._dynamo.reset()
        compiled = torch.compile(make_model(), backend=hvd.compile_backend(bucket_cap_mb=0.01))
        x, y = batch(0)
        torch.nn.functional.mse_loss(compiled(x), y).backward()
    finally:
        logger.removeHandler(handler)
    assert not [w for w in warnings if "pickle" in w], warnings


# -- overlap ---------------------------------------------------------------------------
@torch.library.custom_op("horovodcpp_test::backward_marker", mutates_args=())
def backward_marker(x: torch.Tensor) -> torch.Tensor:
    return x.clone()


@backward_marker.register_fake
def _(x):
    return torch.empty_like(x)


def _marker_backward(ctx, grad):
    # The gradient of the model's input: the backward is ending. Marked in
    # the timeline by a collective of its own, which depends on it and which
    # the returned gradient depends on (so that it runs here, and is kept).
    marker = torch.ops.horovodcpp.allreduce(grad.sum().reshape(1) * 0, "backward.end",
                                            int(hvd.Sum), 1.0, 1.0, 0)
    return grad + marker


backward_marker.register_autograd(_marker_backward)


class Marked(torch.nn.Module):
    """A deep enough MLP whose input passes the marker first, so that the
    marker's backward is the last of the model's backward."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(6)])

    def forward(self, x):
        return self.layers(backward_marker(x))


def allreduce_order(timeline):
    """Tensor names in the order the timeline first shows them (each
    tensor's row is named when its first event is recorded)."""
    with open(timeline) as f:
        events = json.load(f)["traceEvents"]
    return [e["args"]["name"] for e in events
            if e.get("ph") == "M" and e.get("name") == "thread_name"]


@pytest.mark.parametrize("overlap", [True, False], ids=["compile_backend", "plain"])
def test_gradients_sent_while_the_compiled_backward_runs(overlap):
    """With hvd.compile_backend(), the first gradient allreduce of a step is
    in the timeline before the marker that the end of the backward sends;
    with a plain torch.compile every gradient waits for the whole backward."""
    model = Marked()
    backend = hvd.compile_backend(backend=BACKEND, bucket_cap_mb=0.02) if overlap else BACKEND
    compiled = torch.compile(model, backend=backend)
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                         named_parameters=model.named_parameters())
    x = torch.randn(4, 64, requires_grad=True)
    compiled(x).sum().backward()  # compiles; not timed
    optimizer.step()
    optimizer.zero_grad()
    path = os.path.join(tempfile.gettempdir(), "hvd-compile-timeline-{}-{}.json".format(
        os.getpid(), overlap))
    hvd.start_timeline(path)
    try:
        compiled(x).sum().backward()
        optimizer.step()
    finally:
        hvd.stop_timeline()
    if hvd.rank() != 0:  # rank 0 writes the timeline
        return
    order = [n for n in allreduce_order(path) if "layers." in n or "backward.end" in n]
    os.remove(path)
    assert any("backward.end" in n for n in order) and any("layers." in n for n in order), order
    end = next(i for i, n in enumerate(order) if "backward.end" in n)
    first_gradient = next(i for i, n in enumerate(order) if "layers." in n)
    if overlap:
        assert first_gradient < end, order
    else:
        assert end < first_gradient, order
