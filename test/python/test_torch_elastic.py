"""The elastic state API in an ordinary (fixed) job: ObjectState and
TorchState save, restore and synchronize; ElasticSampler shares the
unprocessed samples; the hvd.elastic.run loop restores and resets on a
failure, resets without restoring on a host update, and lets a caller's
mistake through. (Ranks dying and joining: test/elastic/elastic_tests.sh.)"""
import pytest
import torch

import horovodcpp.torch as hvd
from horovodcpp.common.elastic import run_fn


def test_object_state_sync_restore():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, epoch=hvd.rank(), batch=7)
    state.sync()
    assert (state.epoch, state.batch) == (0, 7)  # rank 0's
    state.epoch = 5
    state.restore()
    assert state.epoch == 0
    state.epoch = 6
    state.commit()  # a fixed job: no host updates, no collective
    state.epoch = 9
    state.restore()
    assert state.epoch == 6


def test_torch_state_handlers():
    torch.manual_seed(hvd.rank())  # different models on purpose
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    state = hvd.elastic.TorchState(model, optimizer, scheduler=scheduler, step=hvd.rank())
    state.sync()
    gathered = hvd.allgather(model.weight.detach().unsqueeze(0), name="elastic.weight")
    assert all(torch.equal(w, model.weight.detach()) for w in gathered)
    assert state.step == 0
    saved = model.weight.detach().clone()
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    scheduler.step()
    state.step = 1
    assert not torch.equal(model.weight.detach(), saved)
    state.restore()
    assert torch.equal(model.weight.detach(), saved)  # the synchronized weights
    assert optimizer.state_dict()["state"] == {}  # no momentum before the commit
    assert scheduler.last_epoch == 0
    assert state.step == 0


def test_elastic_sampler_shares_what_is_left():
    sampler = hvd.elastic.ElasticSampler(list(range(10)), shuffle=False)
    mine = list(sampler)
    everyone = hvd.allgather_object(mine, name="elastic.sampler")
    assert len(sampler) == -(-10 // hvd.size())
    assert sorted(set(i for part in everyone for i in part)) == list(range(10))
    sampler.record_batch(0, 2)  # every rank did 2
    sampler.load_state_dict(sampler.state_dict())  # what a reset does
    rest = hvd.allgather_object(list(sampler), name="elastic.sampler.rest")
    assert sorted(set(i for part in rest for i in part)) == list(range(2 * hvd.size(), 10))
    sampler.set_epoch(1)
    assert sampler.processed_num == 0


class Recorder(hvd.elastic.ObjectState):
    def __init__(self):
        super().__init__(hvd.broadcast_object, hvd.rank, value=0)
        self.calls = []

    def restore(self):
        self.calls.append("restore")
        super().restore()

    def sync(self):
        self.calls.append("sync")
        super().sync()


def run_with(failures):
    """run_fn over a function that raises `failures` in turn, then returns."""
    state, resets = Recorder(), []
    state.register_reset_callbacks([lambda: state.calls.append("callback")])
    pending = list(failures)

    def train(state):
        state.calls.append("train")
        if pending:
            raise pending.pop(0)
        return "done"

    result = run_fn(train, lambda: resets.append(1) or state.calls.append("reset"))(state)
    return result, state.calls


def test_run_restores_and_resets_after_a_failure():
    result, calls = run_with([hvd.RankFailureError("a peer died")])
    assert result == "done"
    assert calls == ["sync", "train", "restore", "reset", "callback", "sync", "train"]


def test_run_resets_without_restoring_after_a_host_update():
    result, calls = run_with([hvd.elastic.HostsUpdatedInterrupt(skip_sync=True)])
    assert result == "done"
    assert calls == ["sync", "train", "reset", "callback", "sync", "train"]


def test_run_lets_the_callers_mistakes_through():
    with pytest.raises(hvd.InvalidArgumentError):
        run_with([hvd.InvalidArgumentError("bad shape")])
    with pytest.raises(hvd.MismatchError):
        run_with([hvd.MismatchError("ranks disagree")])


def test_run_reinitializes():
    """hvd.elastic.run's own reset: shutdown and init, then the state again."""
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank, epoch=0)
    attempts = []

    @hvd.elastic.run
    def train(state):
        attempts.append(state.epoch)
        state.epoch = 1
        if len(attempts) == 1:
            raise hvd.RankFailureError("a peer died")
        return hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum, name="elastic.after").item()

    assert train(state) == hvd.size()
    assert attempts == [0, 0]  # the second attempt starts from the committed epoch
