"""send, recv and recv_anysource of the horovodcpp process group. The core
has collectives only, so point-to-point goes over a torch Gloo group of the
same ranks, made on first use from the group's store with lazily connected
pairs (TORCH_GLOO_LAZY_INIT): only the two ranks that meet connect, and a
job that never sends pays nothing. CUDA tensors travel through host memory."""
import datetime
import os

import torch
import torch.distributed as dist

from horovodcpp.torch.distributed.work import Work


class PointToPoint:
    def __init__(self, store, rank, size, timeout):
        self._store = store
        self._rank = rank
        self._size = size
        self._timeout = timeout or datetime.timedelta(minutes=30)
        self._group = None

    def _gloo(self):
        if self._group is None:
            if self._store is None:
                raise RuntimeError("horovodcpp: this group has no store for point-to-point")
            saved = os.environ.get("TORCH_GLOO_LAZY_INIT")
            os.environ["TORCH_GLOO_LAZY_INIT"] = "1"
            try:
                self._group = dist.ProcessGroupGloo(dist.PrefixStore("horovodcpp-p2p/", self._store),
                                                    self._rank, self._size, self._timeout)
            finally:
                if saved is None:
                    del os.environ["TORCH_GLOO_LAZY_INIT"]
                else:
                    os.environ["TORCH_GLOO_LAZY_INIT"] = saved
        return self._group

    def _check(self, peer, what):
        if not 0 <= peer < self._size or peer == self._rank:
            raise ValueError("horovodcpp {}: {} is not another rank of this group of {}".format(
                what, peer, self._size))

    def send(self, tensors, dst, tag):
        self._check(dst, "send")
        if not any(t.is_cuda for t in tensors):
            return self._gloo().send(tensors, dst, tag)
        work = self._gloo().send([t.cpu() for t in tensors], dst, tag)
        return Work((), lambda: (work.wait(), tensors)[1], "send", None)

    def recv(self, tensors, src, tag):
        self._check(src, "recv")
        return self._receive(tensors, lambda host: self._gloo().recv(host, src, tag))

    def recv_anysource(self, tensors, tag):
        return self._receive(tensors, lambda host: self._gloo().recv_anysource(host, tag))

    def _receive(self, tensors, start):
        """Gloo's own Work for CPU tensors; CUDA ones are received in host
        memory and copied over when waited for."""
        if not any(t.is_cuda for t in tensors):
            return start(tensors)
        host = [torch.empty_like(t, device="cpu") for t in tensors]
        work = start(host)

        def finish():
            work.wait()
            for t, h in zip(tensors, host):
                t.copy_(h)
            return tensors
        return Work((), finish, "recv", None)
