"""horovod.common.exceptions: the errors user code catches by this path.
HorovodInternalError is the base of every error a collective raises."""
from horovodcpp._core import HorovodInternalError  # noqa: F401


class HostsUpdatedInterrupt(RuntimeError):
    """Horovod's elastic-mode interrupt; horovodcpp has no elastic mode, so
    nothing raises it (defined for scripts that catch it)."""

    def __init__(self, skip_sync):
        super().__init__()
        self.skip_sync = skip_sync
