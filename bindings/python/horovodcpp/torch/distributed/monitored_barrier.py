"""monitored_barrier of the horovodcpp process group, as Gloo's: the ranks
check in with rank 0 (through the group's store, not the collectives, so
that a rank stuck elsewhere is named rather than waited for), rank 0 waits
at most `timeout` and names the first rank missing (every one with
wait_all_ranks), and the others raise that same error."""
import datetime
import time

import torch.distributed as dist


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout) if timeout is not None else 1800.0


def monitored_barrier(store, rank, size, count, timeout, wait_all_ranks):
    if store is None:
        raise RuntimeError("horovodcpp monitored_barrier: this group has no store")
    seconds = _seconds(timeout)
    key = "horovodcpp-monitored-barrier/{}".format(count)
    if rank != 0:
        store.set("{}/arrived/{}".format(key, rank), "1")
        # Longer than rank 0 waits, so that its verdict arrives first.
        verdict = _wait(store, "{}/verdict".format(key), seconds + max(5.0, seconds / 10))
        if verdict is None:
            raise dist.DistBackendError(
                "horovodcpp monitored_barrier: rank 0 did not answer rank {} within {:g} s".format(
                    rank, seconds))
        if verdict != "ok":
            raise dist.DistBackendError(verdict)
        return
    deadline = time.monotonic() + seconds
    missing = []
    for peer in range(1, size):
        arrived = "{}/arrived/{}".format(key, peer)
        if _wait(store, arrived, max(0.0, deadline - time.monotonic())) is None:
            missing.append(peer)
            if not wait_all_ranks:
                break
    if not missing:
        store.set("{}/verdict".format(key), "ok")
        return
    if len(missing) == 1:
        what = "Rank {} failed".format(missing[0])
    else:
        what = "Ranks {} failed".format(", ".join(str(r) for r in missing))
    message = "horovodcpp monitored_barrier: {} to pass monitoredBarrier in {} ms".format(
        what, int(seconds * 1000))
    store.set("{}/verdict".format(key), message)
    raise dist.DistBackendError(message)


def _wait(store, key, seconds):
    """The key's value once set, or None after `seconds`."""
    try:
        store.wait([key], datetime.timedelta(seconds=max(seconds, 0.001)))
    except (RuntimeError, dist.DistStoreError):
        return None
    return store.get(key).decode()
