"""Elastic training with horovodcpp.torch, as horovod.torch.elastic:

    state = hvd.elastic.TorchState(model, optimizer, batch=0, epoch=0)

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            ...
            state.commit()

    train(state)

Launch with hvdrun --min-np / --host-discovery-script (docs/elastic.md).
"""
from horovodcpp.common.basics import init, shutdown
from horovodcpp.common.elastic import (  # noqa: F401
    HostsUpdatedInterrupt, ObjectState, State, run_fn)
from horovodcpp.torch.elastic.sampler import ElasticSampler  # noqa: F401
from horovodcpp.torch.elastic.state import TorchState  # noqa: F401


def run(func):
    """Decorator for the training function func(state, ...): runs it, and
    after every membership change resets horovodcpp, synchronizes `state`
    from rank 0 and runs it again (see horovodcpp.common.elastic). No
    collective may run in func before its first state.sync(): new ranks
    synchronize first."""
    return run_fn(func, _reset)


def _reset():
    shutdown()
    init()


__all__ = ["ElasticSampler", "HostsUpdatedInterrupt", "ObjectState", "State", "TorchState", "run"]
