import argparse
import os

import deepspeed
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    deepspeed.init_distributed()

    model = torch.nn.Linear(128, 10)
    if os.path.exists("init.pt"):
        model.load_state_dict(torch.load("init.pt"))
    data = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler,
                        shuffle=True,  # each epoch in a new order
                        num_workers=2)
    engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    for epoch in range(3):
        sampler.set_epoch(epoch)
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(engine(x.cuda()), y.cuda())
            engine.backward(loss)
            engine.step()


if __name__ == "__main__":
    main()
