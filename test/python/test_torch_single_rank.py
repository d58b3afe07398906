"""DistributedOptimizer at one rank behaves as Horovod's: no hooks (there is
nothing to overlap with), every gradient reduced at step(), submitted
together and so fused; with HOROVOD_ELASTIC=1 (hvdrun's elastic workers)
the hooks are there as at several ranks. Runs at one rank
(python_single_rank_tests); skipped at several."""
import pytest
import torch

import horovodcpp.torch as hvd
from reference import batch, make_model


@pytest.fixture(autouse=True)
def one_rank():
    if hvd.size() != 1:
        pytest.skip("a one-rank job's behaviour")


def train(steps=3, backward_checks=None):
    model, reference = make_model(), make_model()
    optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                                         named_parameters=model.named_parameters())
    local = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.MSELoss()
    for step in range(steps):
        optimizer.zero_grad()
        local.zero_grad()
        x, y = batch(step, 0)
        loss_fn(model(x), y).backward()
        loss_fn(reference(x), y).backward()
        backward_checks(optimizer)
        optimizer.step()
        local.step()
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), msg=name)


def test_no_hooks_at_one_rank_and_step_reduces_every_gradient():
    def nothing_submitted_during_backward(optimizer):
        assert not optimizer._handles
    train(backward_checks=nothing_submitted_during_backward)


def test_elastic_workers_keep_the_hooks(monkeypatch):
    monkeypatch.setenv("HOROVOD_ELASTIC", "1")

    def every_gradient_submitted_by_its_hook(optimizer):
        assert len(optimizer._handles) == len(optimizer._units)
    train(backward_checks=every_gradient_submitted_by_its_hook)
