"""horovod.common.exceptions: the errors user code catches by this path.
HorovodInternalError is the base of every error a collective raises."""
from horovodcpp._core import HorovodInternalError  # noqa: F401


class HostsUpdatedInterrupt(RuntimeError):
    """The job's membership changed (hvdrun added or removed ranks): in
    hvd.elastic.run every rank resets and synchronizes its state, without
    restoring the last commit. skip_sync is kept as Horovod has it; here the
    state is always synchronized after a reset, so that new ranks get it."""

    def __init__(self, skip_sync):
        super().__init__("the job's hosts were updated")
        self.skip_sync = skip_sync


def get_version_mismatch_message(name, version, installed_version):
    return ("Framework %s installed with version %s but found version %s; horovodcpp is built "
            "against no framework, so this never happens here" % (name, installed_version, version))


class HorovodVersionMismatchError(ImportError):
    """Horovod raises it when a framework's version differs from the one it
    was compiled against. horovodcpp compiles against no framework and never
    raises it; defined for code that catches it."""

    def __init__(self, name, version, installed_version):
        super().__init__(get_version_mismatch_message(name, version, installed_version))
        self.name = name
        self.version = version
        self.installed_version = installed_version
