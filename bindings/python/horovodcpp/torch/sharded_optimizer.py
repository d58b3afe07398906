"""DistributedOptimizer(..., sharding=1 or 2): ZeRO stages 1 and 2.

Every rank keeps the whole parameters but steps only its shard of each
(sharded_state.shard_range), so it keeps 1/N of the optimizer's state. A
parameter's gradient is reduce-scattered as soon as backward has produced
it (DistributedOptimizer's hooks), each rank receiving the average of its
shard. step() runs the wrapped optimizer's class over the shards, which
are views of the parameters' own memory, then allgathers the updated
shards into every rank's parameters. The traffic is an allreduce's: its
reduce-scatter half, then its allgather half.

Stage 1 leaves p.grad as backward made it (this rank's own gradient).
Stage 2 drops each p.grad once its reduce-scatter has started, and the
core's reference to it once that is done, so between backward and step a
rank holds only its gradient shards."""
import collections
import copy
import os

import torch

from horovodcpp.common.basics import Average, Max, Sum
from horovodcpp.torch import core_ops
from horovodcpp.torch.functions import broadcast_object
from horovodcpp.torch.gradient_hooks import HookedOptimizer
from horovodcpp.torch.handles import poll, synchronize
from horovodcpp.torch.reducing_compressor import reduces_itself
from horovodcpp.torch.sharded_state import (
    is_per_element, merge_shards, numbered_groups, options_of, shard_range)

# Their update is not per element (a line search, sparse state, factored
# moments over a tensor's rows and columns): on a shard it would differ.
_NOT_ELEMENTWISE = ("LBFGS", "SparseAdam", "Adafactor")
# step() allgathers the parameters in groups of about this many bytes, two
# at a time: the gathered copies alive at once stay small.
_GATHER_BYTES = 32 << 20
_GATHERS_IN_FLIGHT = 2


class _Reduction:
    """A unit's reduce-scatter: its handle until it is collected, then its
    outputs; the compression contexts to decompress them."""
    __slots__ = ("handle", "contexts", "outputs")

    def __init__(self, handle, contexts):
        self.handle, self.contexts, self.outputs = handle, contexts, None

    def collect(self):
        if self.outputs is None:
            outputs = synchronize(self.handle)
            self.outputs = outputs if isinstance(outputs, list) else [outputs]
        return self.outputs


class ShardedOptimizer(HookedOptimizer, torch.optim.Optimizer):
    """What DistributedOptimizer(optimizer, sharding=1|2) returns. Its
    param_groups are the wrapped optimizer's (hyperparameters and LR
    schedulers act on them); the state lives with the shards."""

    def __init__(self, optimizer, named_parameters, stage, compression, backward_passes_per_step,
                 op, gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super().__init__(optimizer.param_groups, optimizer.defaults)
        self.stage = stage
        self._compression = compression
        self.backward_passes_per_step = backward_passes_per_step
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set
        self._optimizer_class = type(optimizer)
        self._parameter_names = self._names_of(named_parameters)
        self._params = [p for g in self.param_groups for p in g["params"]]  # torch's numbering
        trainable = [p for p in self._params if p.requires_grad]
        for p in trainable:
            if not p.is_contiguous():
                raise ValueError("sharding: parameter {} is not contiguous (a shard is a view of "
                                 "its memory)".format(self._parameter_names[p]))
        self._build_units(trainable, groups, backward_passes_per_step)
        self._handles = {}  # unit -> _Reduction, in the order started
        self._uncollected = collections.deque()  # stage 2: units whose handle is held
        self._synchronized = False
        self._should_synchronize = True
        self._grad_accumulators = []
        self._included = process_set.included()
        if self._included is None:
            raise ValueError("DistributedOptimizer: {} is not registered: pass it to "
                             "hvd.init(process_sets=...) or hvd.add_process_set()".format(
                                 process_set))
        # State the wrapped optimizer already has (a checkpoint loaded into
        # it) counts as loaded: broadcast_optimizer_state can spread it.
        whole = optimizer.state_dict() if optimizer.state else None
        self._shard(whole)
        self._whole_state_loaded = whole
        if self._included and (process_set.size() > 1 or
                               os.environ.get("HOROVOD_ELASTIC") == "1"):
            self._register_hooks(trainable)

    # Layout

    def _place(self):
        """(size, rank) of this rank's place in the process set; (1, 0)
        outside it (the optimizer is then the wrapped one's alone)."""
        if not self._included:
            return 1, 0
        return self.process_set.size(), self.process_set.rank()

    def _shard(self, whole_state):
        """Splits the parameters for the set's current size, and makes the
        wrapped optimizer's class over this rank's shards, with its share of
        `whole_state` (an unsharded state dict) if given."""
        self._size, self._rank = self._place()
        self._shards = {}  # parameter -> its shard, a Parameter over its memory
        groups = []
        for group in self.param_groups:
            shards = []
            for p in group["params"]:
                if p.requires_grad:
                    self._shards[p] = self._make_shard(p)
                    shards.append(self._shards[p])
            groups.append(dict(options_of(group), params=shards))
        self._inner = self._optimizer_class(groups)
        self._memory = {p: p.data_ptr() for p in self._shards}
        self._gather_groups = _split_by_bytes(list(self._shards), _GATHER_BYTES)
        if whole_state is not None:
            self._load_whole(whole_state)

    def _make_shard(self, p):
        start, end = shard_range(p.numel(), self._size, self._rank)
        return torch.nn.Parameter(p.detach().view(-1)[start:end])

    def _follow_moved_parameters(self):
        """Points the shards of parameters whose memory was replaced since
        (p.data = ..., as Module.to() does) at the new memory."""
        for p, address in self._memory.items():
            if p.data_ptr() == address:
                continue
            old, new = self._shards[p], self._make_shard(p)
            for group in self._inner.param_groups:
                group["params"] = [new if s is old else s for s in group["params"]]
            if old in self._inner.state:
                self._inner.state[new] = self._inner.state.pop(old)
            self._shards[p], self._memory[p] = new, p.data_ptr()

    def _check_place(self):
        if self._place() != (self._size, self._rank):
            raise RuntimeError(
                "sharded optimizer: the job changed from {} to {} ranks; load a state dict "
                "(hvd.elastic.TorchState does at a reset) to re-shard".format(
                    self._size, self._place()[0]))

    # Gradients

    def _submit(self, units):
        """Starts the reduce-scatters of `units`' gradients."""
        prescale, postscale = 1.0, 1.0
        if self.op == Average:
            prescale = 1.0 / self.gradient_predivide_factor
            postscale = self.gradient_predivide_factor
        for unit in units:
            grads = []
            for p in unit:
                if p.grad is None:  # unused in this step: contributes zeros
                    p.grad = torch.zeros_like(p)
                grad = p.grad
                if grad.is_sparse:
                    if not self.sparse_as_dense:
                        raise ValueError("sharding reduce-scatters dense gradients: {} has a "
                                         "sparse one (pass sparse_as_dense=True)".format(
                                             self._parameter_names[p]))
                    grad = grad.to_dense()
                grads.append(grad.reshape(-1))
            compressed, contexts = zip(*[self._compression.compress(g) for g in grads])
            name = "zero." + self._parameter_names[unit[0]]
            if len(unit) == 1:
                handle = core_ops.reducescatter_async(compressed[0], name, self.op,
                                                     self.process_set, prescale, postscale)
            else:
                handle = core_ops.grouped_reducescatter_async(list(compressed), "group." + name,
                                                             self.op, self.process_set,
                                                             prescale, postscale)
            self._handles[unit] = _Reduction(handle, contexts)
            if self.stage == 2:
                for p in unit:
                    p.grad = None
                self._uncollected.append(unit)
        if self.stage == 2:
            # Finished reduce-scatters release their full-size inputs.
            while self._uncollected and poll(self._handles[self._uncollected[0]].handle):
                self._handles[self._uncollected.popleft()].collect()

    def synchronize(self):
        """Waits for every gradient's reduce-scatter (starting those whose
        hook has not fired) and gives each shard its averaged gradient."""
        self._follow_moved_parameters()
        if not self._included:  # the wrapped optimizer alone: local gradients
            for p, shard in self._shards.items():
                shard.grad = None if p.grad is None else p.grad.reshape(-1)
            self._synchronized = True
            return
        self._submit([unit for unit in self._units if unit not in self._handles])
        try:
            for unit, reduction in self._handles.items():
                for p, output, context in zip(unit, reduction.collect(), reduction.contexts):
                    shard = self._shards[p]
                    shard.grad = self._compression.decompress(output, context).to(shard.dtype)
        finally:
            # Done or failed (a rank died): the next backward starts afresh.
            self._reset_reductions()
        self._synchronized = True

    def _reset_reductions(self):
        super()._reset_reductions()
        self._uncollected.clear()

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """After synchronize(): torch.nn.utils.clip_grad_norm_ of the averaged
        gradients of all parameters (every rank's shards); returns the total
        norm. Every rank of the set calls it."""
        if not self._synchronized:
            raise RuntimeError("clip_grad_norm_ clips the reduced gradients: call synchronize() "
                               "first (and step() inside skip_synchronize())")
        grads = [s.grad for s in self._shards.values() if s.grad is not None]
        norm_type = float(norm_type)
        device = grads[0].device if grads else torch.device("cpu")
        # in float64, over the set: the p-th powers' sum (the max for inf)
        norms = [torch.linalg.vector_norm(g, norm_type, dtype=torch.float64) for g in grads]
        local = torch.zeros(1, dtype=torch.float64, device=device)
        if norm_type == float("inf"):
            local = torch.stack(norms + [local[0]]).max().reshape(1)
            total = core_ops.allreduce_(local, name="zero.clip", op=Max,
                                       process_set=self.process_set)[0]
        else:
            local = sum((n ** norm_type for n in norms), local)
            total = core_ops.allreduce_(local, name="zero.clip", op=Sum,
                                       process_set=self.process_set)[0] ** (1.0 / norm_type)
        coefficient = torch.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coefficient.to(g.dtype))
        return total

    # Step

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._synchronize_for_step()
        self._check_place()
        for group, inner_group in zip(self.param_groups, self._inner.param_groups):
            inner_group.update(options_of(group))
        self._inner.step()
        self._whole_state_loaded = None
        for shard in self._shards.values():
            shard.grad = None
        if self._included:
            self._gather_parameters()
        return loss

    def _gather_parameters(self):
        """Every rank's updated shards into every rank's parameters."""
        in_flight = collections.deque()
        for index, params in enumerate(self._gather_groups):
            if len(in_flight) == _GATHERS_IN_FLIGHT:
                _copy_gathered(*in_flight.popleft())
            handle = core_ops.grouped_allgather_async([self._shards[p] for p in params],
                                                     "zero.params.{}".format(index),
                                                     self.process_set)
            in_flight.append((params, handle))
        while in_flight:
            _copy_gathered(*in_flight.popleft())

    def add_param_group(self, param_group):
        if hasattr(self, "_inner"):
            raise NotImplementedError("a sharded optimizer's parameters are fixed: add the group "
                                      "to the optimizer before DistributedOptimizer wraps it")
        super().add_param_group(param_group)

    # State

    def state_dict(self):
        """This rank's shard of the state, in torch's format (per-element
        values are the rank's shards) with a "sharding" entry: save one file
        per rank. consolidate_state_dict() gives the whole."""
        inner = self._inner.state_dict()
        inner_shards = [s for g in self._inner.param_groups for s in g["params"]]
        owner = {shard: p for p, shard in self._shards.items()}
        index_of = {p: i for i, p in enumerate(self._params)}
        state, shapes, per_element = {}, {}, {}
        for j, values in inner["state"].items():
            shard = inner_shards[j]
            i = index_of[owner[shard]]
            state[i] = values
            shapes[i] = list(owner[shard].shape)
            per_element[i] = sorted(k for k, v in values.items() if is_per_element(v, shard))
        return {"state": state, "param_groups": numbered_groups(self.param_groups),
                "sharding": {"size": self._size, "rank": self._rank, "stage": self.stage,
                             "shapes": shapes, "per_element": per_element}}

    def consolidate_state_dict(self, to=0):
        """The whole (unsharded) state dict, in the format of the wrapped
        optimizer's own state_dict(), on global rank `to` (None on the
        others), or on every rank with to=None. Every rank of the set calls
        it; `to` must be a member."""
        local = self.state_dict()
        if not self._included or self._size == 1:
            return merge_shards([local])
        per_element = local["sharding"]["per_element"]
        items = [(i, key) for i in sorted(per_element) for key in per_element[i]]
        if to is None:
            handles = [core_ops.allgather_async(local["state"][i][key], "zero.state.{}.{}".format(
                i, key), self.process_set) for i, key in items]
        else:
            if to not in self.process_set.ranks:
                raise ValueError("consolidate_state_dict: rank {} is not a member of {}".format(
                    to, self.process_set))
            destination = self.process_set.ranks.index(to)
            handles = []
            for i, key in items:
                value = local["state"][i][key]
                splits = [0] * self._size
                splits[destination] = value.numel()
                handles.append(core_ops.alltoall_async(value, splits, "zero.state.{}.{}".format(
                    i, key), self.process_set))
        outputs = [synchronize(handle) for handle in handles]
        if to is not None:
            if self.process_set.ranks[self._rank] != to:
                return None
            outputs = [output for output, _ in outputs]
        state = {i: {k: _copy(v) for k, v in values.items()}
                 for i, values in local["state"].items()}
        for (i, key), output in zip(items, outputs):
            state[i][key] = output.view(local["sharding"]["shapes"][i])
        return {"state": state, "param_groups": local["param_groups"]}

    def load_state_dict(self, state_dict):
        """Loads a whole state dict (consolidate_state_dict's, or a plain
        torch optimizer's of the same parameters), this rank's own
        state_dict() (same size and rank), or the list of every rank's
        state_dict() from a job of any size: each rank keeps its share.
        Like Horovod, it forgets gradients not yet synchronized."""
        self._reset_reductions()
        self._synchronized = False
        self._should_synchronize = True
        if isinstance(state_dict, (list, tuple)):
            state_dict = merge_shards(state_dict)
        self._set_options(state_dict["param_groups"])
        sharding = state_dict.get("sharding")
        if sharding is None:
            self._shard(state_dict)
            self._whole_state_loaded = state_dict
            return
        self._shard(None)
        if (sharding["size"], sharding["rank"]) != (self._size, self._rank):
            raise ValueError(
                "this is the state of rank {} of {} ranks, and this rank is {} of {}: pass every "
                "rank's state dicts as a list to re-shard them".format(
                    sharding["rank"], sharding["size"], self._rank, self._size))
        inner_index = self._inner_index()
        state = {inner_index[self._shards[self._params[int(i)]]]: {
            key: _copy(value) for key, value in values.items()}
            for i, values in state_dict["state"].items()}
        self._inner.load_state_dict(
            {"state": state, "param_groups": numbered_groups(self._inner.param_groups)})

    def _set_options(self, saved_groups):
        if len(saved_groups) != len(self.param_groups) or any(
                len(saved["params"]) != len(group["params"])
                for saved, group in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict has parameter groups of other sizes than the "
                             "optimizer's")
        for group, saved in zip(self.param_groups, saved_groups):
            group.update(options_of(saved))

    def _inner_index(self):
        shards = [s for g in self._inner.param_groups for s in g["params"]]
        return {shard: j for j, shard in enumerate(shards)}

    def _load_whole(self, whole):
        """This rank's share of an unsharded state dict into the (new) inner
        optimizer. Which values are per element is what a step on zero
        gradients creates (a scalar parameter's moments look like its step
        count); the parameters are left as they were."""
        with_state = [self._shards[self._params[int(i)]] for i in whole["state"]
                      if self._params[int(i)] in self._shards]
        created = _created_state(self._inner, with_state)
        inner_index = self._inner_index()
        state = {}
        for i, values in whole["state"].items():
            p = self._params[int(i)]
            if p not in self._shards:
                continue
            shard = self._shards[p]
            start, end = shard_range(p.numel(), self._size, self._rank)
            entry = {}
            for key, value in values.items():
                if key in created[shard]:
                    sharded = is_per_element(created[shard][key], shard)
                else:
                    sharded = torch.is_tensor(value) and value.shape == p.shape and p.dim() > 0
                entry[key] = value.reshape(-1)[start:end].clone() if sharded else _copy(value)
            state[inner_index[shard]] = entry
        self._inner.load_state_dict(
            {"state": state, "param_groups": numbered_groups(self._inner.param_groups)})

    def broadcast_state_from(self, root_rank):
        """broadcast_optimizer_state: the root's hyperparameters, and, if the
        root loaded a whole state dict since its last step (resuming from a
        checkpoint only rank 0 read), that state, re-sharded on every rank.
        Otherwise each rank keeps its shards (already parts of one state),
        or drops them if the root has none."""
        whole = self._whole_state_loaded if root_rank == self.process_set.ranks[
            self._rank] else None
        has_state = bool(self._inner.state)
        options, has_whole, root_has_state = broadcast_object(
            ([options_of(g) for g in self.param_groups], whole is not None, has_state), root_rank,
            "zero.options", self.process_set)
        if has_whole:
            self.load_state_dict(broadcast_object(whole, root_rank, "zero.state",
                                                  self.process_set))
        elif not root_has_state:
            self._inner.state.clear()
        for group, values in zip(self.param_groups, options):
            group.update(values)


def _copy(value):
    """A state value to load: a copy (torch's load_state_dict keeps the
    tensors it is given, which the caller may load again, or keep)."""
    return value.clone() if torch.is_tensor(value) else copy.deepcopy(value)


def _split_by_bytes(params, limit):
    groups, current, size = [], [], 0
    for p in params:
        current.append(p)
        size += p.numel() * p.element_size()
        if size >= limit:
            groups.append(current)
            current, size = [], 0
    return groups + [current] if current else groups


def _copy_gathered(params, handle):
    with torch.no_grad():
        for p, whole in zip(params, synchronize(handle)):
            p.view(-1).copy_(whole)


def _created_state(optimizer, shards):
    """{shard: the state one step on zero gradients creates for it}; the
    shards' values (views of the parameters) are restored after it."""
    everything = [s for g in optimizer.param_groups for s in g["params"]]
    saved = [(s, s.detach().clone(), s.grad) for s in everything]
    for s in everything:
        s.grad = None
    for s in shards:
        s.grad = torch.zeros_like(s)
    optimizer.step()
    with torch.no_grad():
        for s, value, grad in saved:
            s.copy_(value)
            s.grad = grad
    return {s: dict(optimizer.state.get(s, {})) for s in shards}


def sharded_optimizer(optimizer, named_parameters, stage, compression, backward_passes_per_step,
                      op, gradient_predivide_factor, groups, sparse_as_dense, process_set):
    """DistributedOptimizer's sharding=1|2, after checking what sharding
    cannot honour."""
    if stage not in (1, 2):
        raise ValueError("sharding is 0 (none), 1 (optimizer state) or 2 (optimizer state and "
                         "gradients), got {!r}".format(stage))
    if op not in (Average, Sum):
        raise ValueError("sharding reduce-scatters gradients: op must be Average or Sum (Adasum "
                         "combines whole parameter changes)")
    if reduces_itself(compression):
        raise ValueError("sharding reduce-scatters each gradient: use Compression.none, .fp16 "
                         "or .bf16 (twobit and powersgd compress whole gradients)")
    if type(optimizer).__name__ in _NOT_ELEMENTWISE:
        raise ValueError("sharding cannot split {}: its update is not per element".format(
            type(optimizer).__name__))
    return ShardedOptimizer(optimizer, named_parameters, stage, compression,
                            backward_passes_per_step, op, gradient_predivide_factor, groups,
                            sparse_as_dense, process_set)
