"""How a sharded optimizer (sharded_optimizer.py) splits its parameters and
their optimizer state, and its state dicts in torch's format.

A parameter, flattened, is split as the core's reducescatter splits rows:
rank r of N owns n // N of its n elements, one more for the first n % N
ranks (a rank may own none). An optimizer's per-element state (Adam's
moments, SGD's momentum) splits the same way; the rest (step counts,
scalars) is the same on every rank.

A rank's state_dict() is torch's format with each per-element value
replaced by the rank's shard, plus a "sharding" entry: the job's size, the
rank, and each parameter's shape and per-element keys. merge_shards() makes
the whole (unsharded) state dict from every rank's, as a plain torch
optimizer of the same parameters saves and loads it."""
import torch


def shard_range(numel, size, rank):
    """The flattened elements [start, end) that `rank` of `size` owns."""
    base, extra = divmod(numel, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def options_of(group):
    """A parameter group's options (lr, betas, ...): all but its "params"."""
    return {k: v for k, v in group.items() if k != "params"}


def numbered_groups(param_groups):
    """The parameter groups as torch's state_dict() writes them: each
    group's options, and its parameters numbered across the groups."""
    groups, start = [], 0
    for group in param_groups:
        groups.append(dict(options_of(group),
                           params=list(range(start, start + len(group["params"])))))
        start += len(group["params"])
    return groups


def is_per_element(value, shard):
    """Whether an optimizer's state value of the 1-D `shard` is per element
    (its shape) rather than a scalar (0-d tensor or Python number)."""
    return torch.is_tensor(value) and value.dim() == 1 and value.shape == shard.shape


def merge_shards(state_dicts):
    """The unsharded state dict from every rank's sharded state_dict() (any
    order): a plain torch optimizer's, loadable by a sharded optimizer at
    any number of ranks. Raises ValueError unless they are one job's
    complete set."""
    state_dicts = list(state_dicts)
    if not state_dicts or any("sharding" not in sd for sd in state_dicts):
        raise ValueError("merge_shards takes the state_dict() of every rank of a sharded "
                         "optimizer")
    state_dicts.sort(key=lambda sd: sd["sharding"]["rank"])
    size = state_dicts[0]["sharding"]["size"]
    ranks = [sd["sharding"]["rank"] for sd in state_dicts]
    if ranks != list(range(size)) or any(sd["sharding"]["size"] != size for sd in state_dicts):
        raise ValueError("merge_shards needs the state dicts of all {} ranks of one job, got "
                         "ranks {}".format(size, ranks))
    first = state_dicts[0]
    state = {}
    for index, values in first["state"].items():
        entry = dict(values)
        shape = first["sharding"]["shapes"][index]
        for key in first["sharding"]["per_element"][index]:
            entry[key] = torch.cat([sd["state"][index][key] for sd in state_dicts]).view(shape)
        state[index] = entry
    return {"state": state, "param_groups": [dict(g) for g in first["param_groups"]]}
