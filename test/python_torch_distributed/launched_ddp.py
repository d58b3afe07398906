"""A torch.distributed script on the horovodcpp backend, as launch_tests.sh
starts it (torchrun, a plain env:// launch, or an old PyTorch that must be
refused): a DDP step whose gradients are checked against every rank's."""
import torch
import torch.distributed as dist

import horovodcpp.torch.distributed  # noqa: F401

dist.init_process_group("horovodcpp")
rank, size = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Linear(4, 1, bias=False)
ddp = torch.nn.parallel.DistributedDataParallel(model)
x = torch.full((1, 4), float(rank + 1))
ddp(x).sum().backward()
# d(w . x)/dw = x, averaged over the ranks: (size + 1) / 2 in every entry.
expected = torch.full((1, 4), (size + 1) / 2.0)
ok = torch.allclose(model.weight.grad, expected)
print("ddp rank {} of {} gradient {}".format(rank, size, "ok" if ok else model.weight.grad),
      flush=True)
dist.destroy_process_group()
