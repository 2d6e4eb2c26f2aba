"""A stand-in for Megatron-LM's pretrain_gpt.py, so that this example is a complete job.

It only parses the arguments that the launch script passes; it trains nothing. (The real
script lives in NVIDIA/Megatron-LM.)
"""

import argparse


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="GPT pretraining (stand-in)")
    for flag in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--num-layers",
                 "--hidden-size", "--num-attention-heads", "--seq-length", "--max-position-embeddings",
                 "--micro-batch-size", "--global-batch-size", "--train-iters"):
        p.add_argument(flag, type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--sequence-parallel", action="store_true")
    p.add_argument("--use-distributed-optimizer", action="store_true")
    p.add_argument("--recompute-granularity", choices=["selective", "full"])
    p.add_argument("--recompute-method", choices=["uniform", "block"])
    p.add_argument("--recompute-num-layers", type=int)
    p.add_argument("--data-path")
    p.add_argument("--save")
    return p.parse_known_args(argv)[0]


if __name__ == "__main__":
    print(parse_args())
