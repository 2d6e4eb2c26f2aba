#!/bin/bash
# A job written for PyTorch 1.x: `parallint check --diff examples/autofix` shows the fixes,
# `--fix` makes the safe ones and `--unsafe-fixes` the others.
export NCCL_DEBUG=WARN
export NCCL_IB_DISABEL=0
python -m torch.distributed.launch --nproc_per_node=4 --use_env \
    train.py --deepspeed_config ds_config.json
