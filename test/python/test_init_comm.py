"""init(comm=...) as Horovod takes it: a list of MPI_COMM_WORLD ranks or an
mpi4py communicator, of every rank or of part of them (a job of their own,
in MPI mode), and ProcessSet(comm), a Split's halves registered as the sets
they are."""
import os

import pytest
import torch

import horovodcpp.torch as hvd

MPI_MODE = "OMPI_COMM_WORLD_SIZE" in os.environ
mpi_mode_only = pytest.mark.skipif(not MPI_MODE, reason="a job on part of the ranks, and "
                                   "mpi4py communicators, need MPI mode (hvdrun --mpi)")


@pytest.fixture
def restart():
    """Each test inits as it needs; the suite's job is back afterwards."""
    hvd.shutdown()
    yield
    hvd.shutdown()
    hvd.init()


def launched():
    """(this process's MPI_COMM_WORLD rank, the number of ranks launched)."""
    if MPI_MODE:
        return int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    return int(os.environ["HOROVODCPP_RANK"]), int(os.environ["HOROVODCPP_SIZE"])


def world_rank_sum_and_order():
    """The sum of the job's world ranks and the world ranks in job order."""
    me, _ = launched()
    summed = hvd.allreduce(torch.tensor([float(me)]), op=hvd.Sum).item()
    order = hvd.allgather(torch.tensor([me])).tolist()
    return summed, order


@mpi_mode_only
@pytest.mark.parametrize("reverse_second", [False, True])
def test_two_jobs_on_lists_of_ranks(restart, reverse_second):
    me, n = launched()
    if n < 2:
        pytest.skip("needs two ranks")
    first, second = list(range(n // 2)), list(range(n // 2, n))
    if reverse_second:
        second.reverse()  # the order given is the job's rank order
    mine = first if me in first else second
    hvd.init(comm=mine)
    assert (hvd.size(), hvd.rank()) == (len(mine), mine.index(me))
    assert world_rank_sum_and_order() == (sum(mine), mine)


@mpi_mode_only
def test_every_rank_in_another_order(restart):
    me, n = launched()
    order = list(reversed(range(n)))
    hvd.init(comm=order)
    assert (hvd.size(), hvd.rank()) == (n, n - 1 - me)
    assert world_rank_sum_and_order() == (sum(order), order)


@mpi_mode_only
def test_bad_lists_fail_at_once_on_every_rank(restart):
    me, n = launched()
    others = [r for r in range(n) if r != me]
    if others:
        with pytest.raises(hvd.InvalidArgumentError, match="MPI_COMM_WORLD rank {}, which is "
                           "not one of them".format(me)):
            hvd.init(comm=others)
    with pytest.raises(hvd.InvalidArgumentError, match="appear once"):
        hvd.init(comm=[me, me])
    with pytest.raises(hvd.InvalidArgumentError, match="appear once"):
        hvd.init(comm=[me, n])
    assert not hvd.is_initialized()
    with pytest.raises(TypeError, match="comm"):
        hvd.init(comm="everyone")


@pytest.mark.skipif(MPI_MODE, reason="Gloo mode's refusal")
def test_gloo_mode_runs_on_every_rank_only(restart):
    me, n = launched()
    hvd.init(comm=list(range(n)))  # every rank, in order: the job as launched
    assert hvd.size() == n
    hvd.shutdown()
    if n > 1:
        with pytest.raises(hvd.InvalidArgumentError, match="needs MPI mode"):
            hvd.init(comm=list(range(n))[::-1])
    assert not hvd.is_initialized()


@pytest.mark.skipif(MPI_MODE, reason="Gloo mode's refusal")
def test_gloo_mode_refuses_before_connecting(restart):
    """A rank alone gets the refusal at once: it connects to nobody (after a
    rendezvous, a peer that refused first could close its connections while
    another still completed its own, which then failed with a lost peer)."""
    me, n = launched()
    if n > 1 and me == 0:
        with pytest.raises(hvd.InvalidArgumentError, match="needs MPI mode"):
            hvd.init(comm=list(range(n))[::-1])
    assert not hvd.is_initialized()


@pytest.fixture
def MPI():
    mpi = pytest.importorskip("mpi4py.MPI")
    hvd.shutdown()
    yield mpi
    hvd.shutdown()
    hvd.init()


@mpi_mode_only
def test_init_with_a_communicator_of_every_rank(MPI):
    world = MPI.COMM_WORLD
    hvd.init(comm=world)
    assert hvd.size() == world.size and hvd.rank() == world.rank
    assert hvd.global_process_set.mpi_comm is world
    hvd.shutdown()
    clone = world.Dup()
    hvd.init(comm=clone)
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [world.size] * 2

@mpi_mode_only
def test_init_with_a_communicator_of_part_of_the_ranks(MPI):
    world = MPI.COMM_WORLD
    half = world.Split(color=world.rank % 2, key=-world.rank)  # in reverse order
    members = half.allgather(world.rank)
    hvd.init(comm=half)
    assert (hvd.size(), hvd.rank()) == (half.size, half.rank)
    assert hvd.global_process_set.mpi_comm is half
    assert world_rank_sum_and_order() == (sum(members), members)


@mpi_mode_only
def test_process_sets_of_a_split_inside_a_job_of_part_of_the_ranks(MPI):
    world = MPI.COMM_WORLD
    half = world.Split(color=world.rank % 2, key=world.rank)
    if half.size < 2:
        pytest.skip("this half is one rank: its sets would be the job itself")
    quarter = half.Split(color=half.rank % 2, key=half.rank)
    mine = hvd.ProcessSet(quarter)
    hvd.init(comm=half, process_sets=[mine])
    # Named by rank in the job (the half), not in MPI_COMM_WORLD.
    assert mine.ranks == list(range(half.rank % 2, half.size, 2))
    assert mine.size() == quarter.size and mine.rank() == quarter.rank
    summed = hvd.allreduce(torch.tensor([float(world.rank)]), op=hvd.Sum, process_set=mine)
    assert summed.item() == sum(quarter.allgather(world.rank))


@mpi_mode_only
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
