#!/bin/bash
# One node, 8 GPUs, torchtitan's own launcher line.
NGPU=8
torchrun --nproc_per_node=${NGPU} --nnodes 1 -m torchtitan.train --job.config_file ./llama3_8b.toml
