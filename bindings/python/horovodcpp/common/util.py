"""Argument handling every framework front end shares."""
import warnings

from horovodcpp.common.basics import Average, Sum


def resolve_op(op, average):
    """Horovod's deprecated `average` argument next to `op` (default Average)."""
    if op is not None:
        if average is not None:
            raise ValueError("The op parameter supersedes average. "
                             "Please provide only one of them.")
        return op
    if average is not None:
        warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                      DeprecationWarning)
        return Average if average else Sum
    return Average


def gradient_groups(op, gradient_predivide_factor, num_groups, groups, tensor_type):
    """Horovod's rules for the gradient options of DistributedOptimizer and
    DistributedGradientTape; returns the effective `groups`."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups`.", DeprecationWarning)
        if groups is None:
            groups = num_groups
    if groups is not None and not (isinstance(groups, list) or groups > 0):
        raise ValueError("groups should be a non-negative integer or a list of list of "
                         "{}.".format(tensor_type))
    return groups


def split_evenly(items, parts):
    """`items` in `parts` consecutive lists of sizes differing by at most one."""
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(parts) if bounds[i] < bounds[i + 1]]


def check_num_rank_power_of_2(num_rank):
    """True when num_rank is a power of two (Adasum's requirement)."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0
