"""Argument handling every framework front end shares, and the helpers of
horovod.common.util that user code and Horovod's tests import."""
import contextlib
import os
import sysconfig
import warnings

from horovodcpp.common import basics
from horovodcpp.common.basics import Average, cuda_built
from horovodcpp.common.exceptions import (  # noqa: F401
    HorovodVersionMismatchError, get_version_mismatch_message)

# The frameworks Horovod builds an extension for. horovodcpp has one
# compiled core for all of them (horovodcpp._core), built against no
# framework: it cannot mismatch a framework's version.
EXTENSIONS = ["tensorflow", "torch", "mxnet"]
_FRONT_ENDS = ("tensorflow", "torch")


def get_average_backwards_compatibility_fun(reduce_ops):
    """Horovod's resolver of the deprecated `average` argument next to `op`
    (default Average), with `reduce_ops` providing Average and Sum."""
    def resolve(op, average):
        if op is not None:
            if average is not None:
                raise ValueError("The op parameter supersedes average. "
                                 "Please provide only one of them.")
            return op
        if average is not None:
            warnings.warn("Parameter `average` has been replaced with `op` and will be removed",
                          DeprecationWarning)
            return reduce_ops.Average if average else reduce_ops.Sum
        return reduce_ops.Average
    return resolve


resolve_op = get_average_backwards_compatibility_fun(basics)


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


def split_list(items, parts):
    """`items` in `parts` consecutive lists (some empty when there are fewer
    items than parts) whose sizes differ by at most one."""
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[bounds[i]:bounds[i + 1]] for i in range(parts)]


def split_evenly(items, parts):
    """split_list without its empty lists."""
    return [chunk for chunk in split_list(items, parts) if chunk]


def num_rank_is_power_2(num_rank):
    """True when num_rank is a power of two (Adasum's requirement)."""
    return num_rank != 0 and (num_rank & (num_rank - 1)) == 0


def is_iterable(x):
    try:
        iter(x)
    except TypeError:
        return False
    return True


def is_version_greater_equal_than(ver, target):
    """ver >= target, both version strings; target as major.minor.patch."""
    if not isinstance(ver, str) or not isinstance(target, str):
        raise ValueError("is_version_greater_equal_than takes two strings, got %r and %r"
                         % (ver, target))
    if len(target.split(".")) != 3:
        raise ValueError("the target version must be major.minor.patch, got %r" % target)
    from packaging import version
    return version.parse(ver) >= version.parse(target)


@contextlib.contextmanager
def env(**variables):
    """Sets the environment variables given (None: left alone) for the
    duration of the with-block, then restores them."""
    variables = {k: v for k, v in variables.items() if v is not None}
    saved = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def get_ext_suffix():
    """The file name ending of this interpreter's compiled extensions."""
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def get_extension_full_path(pkg_path, *args):
    """Where Horovod keeps a framework's compiled extension, next to pkg_path."""
    if not args:
        raise ValueError("get_extension_full_path needs the extension's path components")
    return os.path.join(os.path.dirname(pkg_path), *args[:-1], args[-1] + get_ext_suffix())


def check_extension(ext_name, ext_env_var, pkg_path, *args):
    """Horovod raises ImportError when a framework's extension was not
    built. horovodcpp's one core serves every framework, and importing
    this module loaded it: there is nothing more to check."""
    del ext_name, ext_env_var, pkg_path, args


def extension_available(ext_base_name, verbose=False):
    """Whether horovodcpp has a front end for the framework
    ('tensorflow', 'torch'; not 'mxnet')."""
    del verbose
    return ext_base_name in _FRONT_ENDS


def gpu_available(ext_base_name, verbose=False):
    """Whether the framework's front end can run collectives of GPU tensors:
    horovodcpp was built with CUDA (NCCL or staged through host memory)."""
    return extension_available(ext_base_name, verbose) and cuda_built()


# Horovod's build queries here take `verbose` (it loads each extension in a
# subprocess to ask); horovodcpp answers from its one core.
def mpi_built(verbose=False):
    return basics.mpi_built()


def gloo_built(verbose=False):
    return basics.gloo_built()


def nccl_built(verbose=False):
    return basics.nccl_built()


def ddl_built(verbose=False):
    return basics.ddl_built()


def ccl_built(verbose=False):
    return basics.ccl_built()


def check_installed_version(name, version, exception=None):
    """Horovod compares the framework version it was compiled against with
    the running one. horovodcpp compiles against no framework: any version
    that imports works, so there is never a mismatch to report."""
    del name, version, exception
