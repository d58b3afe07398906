"""horovodcpp as a torch.distributed backend:

    import horovodcpp.torch.distributed  # registers "horovodcpp"
    torch.distributed.init_process_group("horovodcpp")

DDP, FSDP2, DTensor, torch.distributed.checkpoint and the object
collectives then run their collectives on horovodcpp's core (negotiated,
fused, on shared memory, MPI, Gloo, or NCCL for CUDA tensors). Launch with
hvdrun, srun or torchrun. docs/torch-distributed.md says what is covered
and what differs from gloo and nccl."""
from horovodcpp.torch.distributed import launch_environment
from horovodcpp.torch.distributed.backend import MINIMUM_TORCH, NAME, register  # noqa: F401

launch_environment.fill_in()
register()
