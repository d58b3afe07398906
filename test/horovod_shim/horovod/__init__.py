"""A `horovod` package that is horovodcpp, for running code written for
Horovod unchanged: `import horovod.torch as hvd` gives horovodcpp.torch
itself (the same module object, so classes and state are shared), for
every module horovodcpp has. Put this directory first on PYTHONPATH.
For tests only: users change their imports (README.md, "Coming from
Horovod")."""
import importlib
import importlib.abc
import importlib.util
import sys

_PREFIX = "horovod."


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self):
        self._specs = {}  # the real module's own spec, restored after the import

    def find_spec(self, name, path=None, target=None):
        if not name.startswith(_PREFIX):
            return None
        real = "horovodcpp." + name[len(_PREFIX):]
        try:
            if importlib.util.find_spec(real) is None:
                return None
        except ModuleNotFoundError:  # a parent horovodcpp lacks: this directory's stand-ins
            return None
        return importlib.util.spec_from_loader(name, self, origin=real)

    def create_module(self, spec):
        module = importlib.import_module(spec.origin)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the real module.
        module.__spec__ = self._specs.pop(module.__spec__.name)


sys.meta_path.insert(0, _AliasFinder())
__version__ = importlib.import_module("horovodcpp").__version__
