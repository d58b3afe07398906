"""ElasticSampler, as horovod.torch.elastic.ElasticSampler."""
import math
import random

import torch.utils.data

from horovodcpp.common.basics import rank, size


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions a dataset across the ranks, and again after every reset:
    the samples of the epoch not yet processed are shared by the new set of
    ranks.

    Keep it in the TorchState, call record_batch(batch_idx, batch_size)
    after each batch and set_epoch(epoch) at the end of each epoch (not the
    beginning, so that a partly done epoch is not processed again).

    dataset: of constant size. shuffle: shuffle the indices each epoch, with
    `seed` + epoch (the same seed on every rank).
    """

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices = []
        self.num_samples = 0
        self.total_size = 0
        self.reset()

    def set_epoch(self, epoch):
        """Starts `epoch`: nothing of it processed yet."""
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """batch_size samples processed by every rank."""
        self.processed_num += batch_size * self.num_replicas

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def state_dict(self):
        return dict(epoch=self.epoch, processed_num=self.processed_num)

    def reset(self):
        """Shares the epoch's remaining samples among the current ranks."""
        self.num_replicas = size()
        self.rank = rank()
        indices = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(indices)
        self.remaining_indices = indices[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        indices = self.remaining_indices[:]
        # Padded with the first ones, so that every rank gets as many.
        indices += indices[:self.total_size - len(indices)]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples
