"""A hand-written two-stage pipeline: each rank runs half of the blocks and passes activations on.

    torchrun --nnodes 1 --nproc_per_node 2 examples/pipeline_split/train.py

The split `[model.layers[:4], model.layers[4:8]]` covers all 8 blocks exactly once, one stage per
rank: parallint finds nothing here. train_gap.py is the same script with a broken split.
"""

import os

import torch
import torch.distributed as dist
import torch.nn as nn

N_LAYERS = 8
HIDDEN = 512
MICRO_BATCH = 16


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block(HIDDEN) for _ in range(N_LAYERS)])


def main():
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()

    model = Model()
    stages = [model.layers[:4], model.layers[4:8]]
    stage = nn.Sequential(*stages[rank]).cuda()
    optimizer = torch.optim.AdamW(stage.parameters(), lr=1e-4)

    for step in range(100):
        if rank == 0:
            x = torch.randn(MICRO_BATCH, HIDDEN, device="cuda")
            out = stage(x)
            dist.send(out.detach(), dst=1)
            grad = torch.empty_like(out)
            dist.recv(grad, src=1)
            out.backward(grad)
        else:
            x = torch.empty(MICRO_BATCH, HIDDEN, device="cuda", requires_grad=True)
            dist.recv(x, src=0)
            loss = stage(x).pow(2).mean()
            loss.backward()
            dist.send(x.grad, dst=0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    torch.save(stage.state_dict(), f"stage{rank}.pt")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
