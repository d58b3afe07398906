"""A few DistributedOptimizer steps of a small regression model, each rank on
its own data: the parameters end identical on every rank only if the
gradients were averaged. Used by check_pip_install.sh with the hvdrun and the
horovodcpp that pip installed."""
import sys

import torch

import horovodcpp.torch as hvd

hvd.init()
torch.manual_seed(hvd.rank())  # different initial parameters: broadcast must fix them
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.05),
                                     named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)

data = torch.Generator().manual_seed(1000 + hvd.rank())
for step in range(5):
    x = torch.randn(32, 8, generator=data)
    loss = torch.nn.functional.mse_loss(model(x), x.sum(dim=1, keepdim=True))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
everyone = hvd.allgather(flat.unsqueeze(0))
identical = all(torch.equal(everyone[0], row) for row in everyone)
print(f"rank {hvd.rank()}: torch {torch.__version__}, horovodcpp from {hvd.__file__}, "
      f"loss {loss.item():.4f}, parameters "
      f"{'identical' if identical else 'DIFFER'} on all {hvd.size()} ranks", flush=True)
hvd.shutdown()
sys.exit(0 if identical else 1)
