"""mpi4py communicators, as Horovod takes them in MPI mode: init(comm=...)
and ProcessSet(comm), a Split's halves registered as the sets they are."""
import os

import pytest
import torch

import horovodcpp.torch as hvd

pytestmark = pytest.mark.skipif("OMPI_COMM_WORLD_SIZE" not in os.environ,
                                reason="mpi4py communicators need MPI mode (hvdrun --mpi)")


@pytest.fixture
def MPI():
    mpi = pytest.importorskip("mpi4py.MPI")
    hvd.shutdown()
    yield mpi
    hvd.shutdown()
    hvd.init()


def test_init_with_a_communicator_of_every_rank(MPI):
    world = MPI.COMM_WORLD
    hvd.init(comm=world)
    assert hvd.size() == world.size and hvd.rank() == world.rank
    assert hvd.global_process_set.mpi_comm is world
    hvd.shutdown()
    clone = world.Dup()
    hvd.init(comm=clone)
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [world.size] * 2
    hvd.shutdown()
    if world.size > 1:
        half = world.Split(color=world.rank % 2, key=world.rank)
        with pytest.raises(NotImplementedError, match="subset"):
            hvd.init(comm=half)
        assert not hvd.is_initialized()


def test_process_sets_of_a_split(MPI):
    world = MPI.COMM_WORLD
    half = world.Split(color=world.rank % 2, key=world.rank)
    mine = hvd.ProcessSet(half)
    assert mine.ranks == list(range(world.rank % 2, world.size, 2))
    hvd.init(process_sets=[mine])
    # Every distinct half is registered, the one of rank 0 first (Horovod's order).
    expected_id = 1 + world.rank % 2 if world.size > 1 else 1
    assert mine.process_set_id == expected_id
    assert mine.size() == half.size and mine.rank() == half.rank
    summed = hvd.allreduce(torch.tensor([float(world.rank)]), op=hvd.Sum, process_set=mine)
    assert summed.item() == sum(mine.ranks)
    with pytest.raises(ValueError, match="init"):
        hvd.add_process_set(hvd.ProcessSet(world.Dup()))
