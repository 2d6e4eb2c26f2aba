"""A correct single-script DDP training loop, launched with:

    torchrun --nnodes 1 --nproc_per_node 8 examples/clean/train.py --epochs 3

parallint finds nothing here.
"""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--resume", default="")
    return parser.parse_args()


def main():
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group(backend="nccl")
    rank = dist.get_rank()

    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).cuda(local_rank)
    if args.resume:
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])
    model = DDP(model, device_ids=[local_rank])

    data = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
    sampler = DistributedSampler(data, shuffle=True)
    train_loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, num_workers=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in train_loader:
            x, y = x.cuda(local_rank, non_blocking=True), y.cuda(local_rank, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "epoch": epoch}, "checkpoint.pt")
        dist.barrier()

    dist.destroy_process_group()


if __name__ == "__main__":
    main()
