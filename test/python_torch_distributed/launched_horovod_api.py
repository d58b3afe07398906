"""A Horovod-API script, as launch_tests.sh starts it under torchrun: prints
its place in the job and the sum of every rank's rank + 1."""
import torch

import horovodcpp.torch as hvd

hvd.init()
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum, name="sum")
print("horovod api rank {} of {} local {} of {} sum {:g} transport {}".format(
    hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size(), total.item(),
    hvd.mpi_ops.mpi_lib.transport()), flush=True)
hvd.shutdown()
