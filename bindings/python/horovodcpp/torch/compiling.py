"""What the front end asks while torch.compile traces it: whether it is
tracing (then the collectives are the custom operators of compiled_ops.py,
reached as OPS), and the job's place (rank(), size(), ...) as constants of
the graph instead of calls torch.compile cannot trace (graph breaks)."""
import functools

import torch

from horovodcpp import _core

AVAILABLE = hasattr(torch.library, "custom_op")  # PyTorch 2.4 and newer
OPS = None  # compiled_ops, set when it is imported (by horovodcpp.torch)


# Looked up once: on every collective call, getattr(torch, "compiler") took
# 0.4 us where torch has no compiler module (its __getattr__ raising).
_compiler_is_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) \
    if AVAILABLE else None


def is_compiling():
    return _compiler_is_compiling is not None and _compiler_is_compiling()


def _constant_while_compiling(query):
    """query() of the job's place (rank, size, ...) that torch.compile takes
    as a constant of the graph instead of a call it cannot trace (a graph
    break). An elastic job's size changes between rounds: compile anew then."""
    @functools.wraps(query)
    def value():
        return query()
    assume = getattr(getattr(torch, "_dynamo", None), "assume_constant_result", None)
    return assume(value) if assume is not None else value


rank = _constant_while_compiling(_core.rank)
size = _constant_while_compiling(_core.size)
local_rank = _constant_while_compiling(_core.local_rank)
local_size = _constant_while_compiling(_core.local_size)
cross_rank = _constant_while_compiling(_core.cross_rank)
cross_size = _constant_while_compiling(_core.cross_size)
