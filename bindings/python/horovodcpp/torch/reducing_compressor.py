"""The base of the compressors that keep state between steps and reduce by
themselves (Compression.twobit, Compression.powersgd), where the casts
(fp16, bf16) only convert around an allreduce. DistributedOptimizer,
allreduce and grouped_allreduce hand such a compressor the whole reduction:
reduce_async() starts it and returns a function that waits and returns the
reduced tensor.

State (error-feedback residuals, PowerSGD's Q) is kept per tensor name and
process set, so one instance serves one model: make an instance per
optimizer. Each rank's residuals are its own (the part of its gradients not
yet sent); state_dict()/load_state_dict() save and restore them with a
checkpoint of each rank. broadcast_state() (called by
broadcast_optimizer_state, so also by elastic resets) makes the part every
rank must agree on the root's; residuals are never broadcast: a rank that
joins starts with none.

The first collective of a compressed tensor carries the tensor's allreduce
name ("allreduce.<name>"), so ranks that disagree on the compressor meet
under one name and fail with a mismatch naming it instead of waiting."""
import torch

from horovodcpp.common.basics import Average, HorovodInternalError, Sum
from horovodcpp.common.process_sets import global_process_set
from horovodcpp.torch import core_ops, functions
from horovodcpp.torch.handles import synchronize


class ReducingCompressor:
    """Per-tensor state and the checks every such compressor makes."""
    kind = "compressor"  # how errors name it, e.g. "Compression.twobit"

    def __init__(self):
        self._state = {}  # (process set id, name) -> {field: tensor or int}

    def reduce_async(self, tensor, name, op, prescale_factor, postscale_factor, process_set):
        """Starts reducing `tensor` (named `name`, without prefix) with `op`
        (Average or Sum) over `process_set`; returns a function that waits
        and returns postscale_factor * op(prescale_factor * tensor), as the
        compressor approximates it, in a new tensor."""
        raise NotImplementedError

    # The compress/decompress protocol of the casts does not apply: the
    # operations that only convert around a collective refuse these.
    def compress(self, tensor):
        raise ValueError("{} reduces by itself: use it with DistributedOptimizer, allreduce "
                         "or grouped_allreduce".format(self.kind))

    @staticmethod
    def decompress(tensor, ctx):
        return tensor

    def _state_of(self, tensor, name, op, process_set):
        """The tensor's state (created empty), after the checks every rank
        makes alike."""
        if not name:
            raise ValueError("{}: the tensor needs a name (its state is kept by name)".format(
                self.kind))
        if not tensor.dtype.is_floating_point:
            self._refuse(name, process_set, "{} compresses floating-point tensors; {!r} is {}"
                         .format(self.kind, name, tensor.dtype))
        if op not in (Average, Sum):
            raise ValueError("{}: {!r}: the reduce op must be Average or Sum".format(self.kind,
                                                                                  name))
        return self._state.setdefault((process_set.process_set_id, name), {})

    @staticmethod
    def _exact_async(tensor, name, op, prescale_factor, postscale_factor, process_set):
        """The uncompressed reduction, for tensors a compressor leaves alone."""
        handle = core_ops.allreduce_async(tensor.detach(), name=name, op=op,
                                         prescale_factor=prescale_factor,
                                         postscale_factor=postscale_factor,
                                         process_set=process_set)
        return lambda: synchronize(handle)

    def _check_shape(self, state, field, shape, name, process_set):
        """Refuses a kept state tensor whose shape no longer fits the tensor
        (a changed model, or state loaded from another one)."""
        kept = state.get(field)
        if kept is not None and tuple(kept.shape) != tuple(shape):
            self._refuse(name, process_set,
                         "{}: the kept {} of {!r} has shape {} but the tensor needs {}; call "
                         "reset() after changing the model".format(
                             self.kind, field, name, list(kept.shape), list(shape)))

    def _refuse(self, name, process_set, message):
        """Raises ValueError(message) here after failing the peers' reduction
        of `name`: this rank's empty allreduce of the name matches no peer's
        shape, so theirs ends with a mismatch error naming the tensor instead
        of waiting for this rank (where every rank refuses, all succeed and
        then raise the same message)."""
        try:
            core_ops.allreduce_(torch.zeros(0, dtype=torch.uint8), name=name, op=Sum,
                               process_set=process_set)
        except HorovodInternalError:
            pass
        raise ValueError(message)

    def _shared_fields(self):
        """The fields of each tensor's state that every rank must agree on."""
        return ()

    def state_dict(self):
        """This rank's state: {"<process set id>:<name>": {field: value}}."""
        return {"{}:{}".format(ps, name): {k: v.clone() if torch.is_tensor(v) else v
                                            for k, v in fields.items()}
                for (ps, name), fields in self._state.items()}

    def load_state_dict(self, state):
        """Restores what state_dict() returned (on this rank)."""
        self._state = {}
        for key, fields in state.items():
            ps, name = key.split(":", 1)
            self._state[(int(ps), name)] = dict(fields)

    def broadcast_state(self, root_rank=0, process_set=global_process_set):
        """Makes the shared part of the state (not the residuals) root_rank's
        on every rank of `process_set`."""
        shared = self._shared_fields()
        if not shared:
            return
        mine = {key: {f: fields[f] for f in shared if f in fields}
                for key, fields in self._state.items()}
        root = functions.broadcast_object(mine, root_rank, "{}.state".format(self.kind),
                                          process_set)
        for key in set(self._state) - set(root):
            for field in shared:
                self._state[key].pop(field, None)
        for key, fields in root.items():
            self._state.setdefault(key, {}).update(fields)

    def reset(self):
        """Forgets every tensor's state (residuals, Q, step counts)."""
        self._state = {}


def start_reductions(compression, tensors, names, op, prescale_factor, postscale_factor,
                     process_set):
    """Starts each of `tensors` (named `names`) on `compression`; returns a
    function that waits for them all and returns their results in order."""
    finishes = [compression.reduce_async(t, n, op, prescale_factor, postscale_factor, process_set)
                for t, n in zip(tensors, names)]
    return lambda: [finish() for finish in finishes]


def reduces_itself(compression):
    """True for a ReducingCompressor instance; refuses the class itself
    (its state needs an instance: Compression.twobit(), not .twobit)."""
    if isinstance(compression, type) and issubclass(compression, ReducingCompressor):
        raise ValueError("{} keeps per-tensor state: pass an instance, e.g. {}()".format(
            compression.kind, compression.kind))
    return isinstance(compression, ReducingCompressor)
