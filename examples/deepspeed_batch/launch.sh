#!/bin/bash
# One node, 8 GPUs. DeepSpeed multiplies the micro batch by the accumulation steps and by the
# data-parallel size (8 here): 2 x 4 x 8 = 64, but ds_config.json asks for 32.
deepspeed --num_gpus 8 train.py --deepspeed_config ds_config.json
