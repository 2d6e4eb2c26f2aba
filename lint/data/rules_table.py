"""The rules in parallint.rules, generated: do not edit (regenerate: PARALLINT_UPDATE_SNAPSHOTS=1
python -m pytest tests/test_startup.py)."""

MODULES: dict[str, dict] = {
    'bat.bat001_deepspeed_batch_identity': {'source': '7056:d4001da1', 'rules': [
        {'class': 'DeepspeedBatchIdentity', 'code': 'BAT001', 'name': 'deepspeed-batch-identity', 'severity': 'error', 'summary': 'DeepSpeed train_batch_size != micro batch × gradient accumulation × data-parallel size', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'bat.bat002_global_batch_not_divisible': {'source': '9375:9460aa9b', 'rules': [
        {'class': 'GlobalBatchNotDivisible', 'code': 'BAT002', 'name': 'global-batch-not-divisible', 'severity': 'error', 'summary': 'The global batch is not divisible by micro batch × data-parallel size', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'bat.bat003_deepspeed_trainer_mismatch': {'source': '11028:f5e9a8aa', 'rules': [
        {'class': 'DeepspeedTrainerMismatch', 'code': 'BAT003', 'name': 'deepspeed-trainer-mismatch', 'severity': 'error', 'summary': 'A DeepSpeed config value contradicts the HF TrainingArguments / accelerate value', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'bat.bat004_rampup_batch_not_divisible': {'source': '5902:fada256a', 'rules': [
        {'class': 'RampupBatchNotDivisible', 'code': 'BAT004', 'name': 'rampup-batch-not-divisible', 'severity': 'error', 'summary': "A global batch size along Megatron's --rampup-batch-size ramp is not divisible by micro batch × DP", 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'bat.bat005_verl_mini_batch': {'source': '5901:22baa7cd', 'rules': [
        {'class': 'VerlMiniBatch', 'code': 'BAT005', 'name': 'verl-mini-batch', 'severity': 'error', 'summary': "verl's PPO mini batch does not fit the train batch or the FSDP actor's GPUs", 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'cfg.cfg001_unknown_config_key': {'source': '2647:befe8c11', 'rules': [
        {'class': 'UnknownConfigKey', 'code': 'CFG001', 'name': 'unknown-config-key', 'severity': 'warning', 'summary': 'A config key the framework does not know (ignored or rejected), with a did-you-mean', 'kinds': ['accelerate', 'deepspeed', 'kube', 'torchtitan'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg002_invalid_config_value': {'source': '1681:3b8d3c3c', 'rules': [
        {'class': 'InvalidConfigValue', 'code': 'CFG002', 'name': 'invalid-config-value', 'severity': 'error', 'summary': 'A config value of the wrong type or outside its allowed values', 'kinds': ['accelerate', 'deepspeed', 'kube', 'torchtitan'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg003_fp16_and_bf16': {'source': '2923:9f2f57ab', 'rules': [
        {'class': 'Fp16AndBf16', 'code': 'CFG003', 'name': 'fp16-and-bf16', 'severity': 'error', 'summary': 'fp16 and bf16 are both enabled', 'kinds': ['deepspeed', 'hftrainargs', 'megatron_yaml', 'neox'], 'calls': [], 'file': True, 'job': True},
    ]},
    'cfg.cfg004_offload_param_ignored': {'source': '3233:5bcc04f8', 'rules': [
        {'class': 'OffloadParamIgnored', 'code': 'CFG004', 'name': 'offload-param-ignored', 'severity': 'warning', 'summary': 'DeepSpeed offload_param with ZeRO stage < 3 is silently ignored', 'kinds': ['deepspeed', 'neox'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg005_duplicate_key': {'source': '4982:563cc6b6', 'rules': [
        {'class': 'DuplicateKey', 'code': 'CFG005', 'name': 'duplicate-key', 'severity': 'error', 'summary': 'A key repeated in one JSON/YAML mapping', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'megatron_yaml', 'nanotron', 'nemo', 'neox'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg006_unknown_megatron_argument': {'source': '9325:a0f3e6f5', 'rules': [
        {'class': 'UnknownMegatronArgument', 'code': 'CFG006', 'name': 'unknown-megatron-argument', 'severity': 'error', 'summary': "A flag on a Megatron command line that Megatron's argument parser does not accept.", 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'cfg.cfg007_conflicting_deepspeed_settings': {'source': '6905:d43a706c', 'rules': [
        {'class': 'ConflictingDeepSpeedSettings', 'code': 'CFG007', 'name': 'conflicting-deepspeed-settings', 'severity': 'error', 'summary': 'DeepSpeed settings that DeepSpeed or accelerate refuse together at start-up', 'kinds': ['accelerate', 'deepspeed', 'neox'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg008_overlap_param_gather_requirements': {'source': '5079:b2fced21', 'rules': [
        {'class': 'OverlapParamGatherRequirements', 'code': 'CFG008', 'name': 'overlap-param-gather-requirements', 'severity': 'error', 'summary': '--overlap-param-gather without the distributed optimizer or without --overlap-grad-reduce.', 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'cfg.cfg009_unrecognized_script_argument': {'source': '6666:3ab8d9e4', 'rules': [
        {'class': 'UnrecognizedScriptArgument', 'code': 'CFG009', 'name': 'unrecognized-script-argument', 'severity': 'error', 'summary': "A launch line passes a flag that the script's own argparse parser rejects.", 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'cfg.cfg010_renamed_training_argument': {'source': '6140:03201de6', 'rules': [
        {'class': 'RenamedTrainingArgument', 'code': 'CFG010', 'name': 'renamed-training-argument', 'severity': 'error', 'summary': "a TrainingArguments keyword that the job's transformers version does not accept (evaluation_strategy / eval_strategy)", 'kinds': [], 'calls': ['training_args'], 'file': False, 'job': True},
    ]},
    'cfg.cfg011_deepspeed_key_not_in_version': {'source': '8554:caa72147', 'rules': [
        {'class': 'DeepspeedKeyNotInVersion', 'code': 'CFG011', 'name': 'deepspeed-key-not-in-version', 'severity': 'error', 'summary': "A DeepSpeed config key that the job's DeepSpeed release does not have (not yet, or no longer).", 'kinds': ['deepspeed'], 'calls': [], 'file': True, 'job': False},
    ]},
    'cfg.cfg012_lightning_deepspeed_accumulation': {'source': '5388:341b8fa2', 'rules': [
        {'class': 'LightningDeepspeedAccumulation', 'code': 'CFG012', 'name': 'lightning-deepspeed-accumulation', 'severity': 'error', 'summary': "A DeepSpeed config given to Lightning's DeepSpeedStrategy sets gradient_accumulation_steps, which Lightning refuses.", 'kinds': ['python'], 'calls': [], 'file': True, 'job': True},
    ]},
    'ckp.ckp001_unguarded_checkpoint_save': {'source': '14115:23372d25', 'rules': [
        {'class': 'UnguardedCheckpointSave', 'code': 'CKP001', 'name': 'unguarded-checkpoint-save', 'severity': 'warning', 'summary': 'torch.save in a distributed script not guarded by a rank-0 condition', 'kinds': ['python'], 'calls': ['accelerator', 'ddp', 'ds_init_distributed', 'fabric', 'fsdp', 'fully_shard', 'hf_trainer', 'hvd_init', 'hvd_optimizer', 'init_device_mesh', 'init_process_group', 'pl_trainer', 'save', 'training_args'], 'file': True, 'job': False},
    ]},
    'ckp.ckp002_load_without_map_location': {'source': '9587:47da3a1e', 'rules': [
        {'class': 'LoadWithoutMapLocation', 'code': 'CKP002', 'name': 'load-without-map-location', 'severity': 'warning', 'summary': 'torch.load without map_location in a distributed script', 'kinds': ['python'], 'calls': ['ddp', 'ds_init_distributed', 'fsdp', 'fully_shard', 'hf_trainer', 'init_process_group', 'load', 'pl_trainer', 'training_args'], 'file': True, 'job': False},
    ]},
    'dat.dat001_missing_distributed_sampler': {'source': '8416:cfb2dcc2', 'rules': [
        {'class': 'MissingDistributedSampler', 'code': 'DAT001', 'name': 'missing-distributed-sampler', 'severity': 'warning', 'summary': 'a DDP/FSDP script iterates a training DataLoader with no DistributedSampler', 'kinds': ['python'], 'calls': ['dataloader', 'ddp', 'fsdp', 'fully_shard', 'hvd_optimizer'], 'file': True, 'job': False},
    ]},
    'dat.dat002_sampler_set_epoch_missing': {'source': '11134:2fda9349', 'rules': [
        {'class': 'SamplerSetEpochMissing', 'code': 'DAT002', 'name': 'sampler-set-epoch-missing', 'severity': 'warning', 'summary': 'a shuffling DistributedSampler is iterated across epochs without set_epoch(epoch)', 'kinds': ['python'], 'calls': ['accelerator', 'dataloader', 'distributed_sampler'], 'file': True, 'job': False},
    ]},
    'dat.dat003_sampler_with_shuffle': {'source': '3361:c9d7832f', 'rules': [
        {'class': 'SamplerWithShuffle', 'code': 'DAT003', 'name': 'sampler-with-shuffle', 'severity': 'error', 'summary': 'DataLoader(sampler=..., shuffle=True) raises at construction', 'kinds': ['python'], 'calls': ['dataloader'], 'file': True, 'job': False},
    ]},
    'dat.dat004_double_sharding': {'source': '6489:61e5871b', 'rules': [
        {'class': 'DoubleSharding', 'code': 'DAT004', 'name': 'double-sharding', 'severity': 'warning', 'summary': 'a DataLoader with a DistributedSampler is passed through accelerator.prepare (sharded twice)', 'kinds': ['python'], 'calls': ['accelerator', 'dataloader', 'distributed_sampler'], 'file': True, 'job': False},
    ]},
    'dat.dat005_sampler_seed_per_rank': {'source': '5437:73d2b864', 'rules': [
        {'class': 'SamplerSeedPerRank', 'code': 'DAT005', 'name': 'sampler-seed-per-rank', 'severity': 'warning', 'summary': "a shuffling DistributedSampler seeded with the rank, so the ranks' shards overlap", 'kinds': ['python'], 'calls': ['distributed_sampler'], 'file': True, 'job': False},
    ]},
    'ddp.ddp001_find_unused_parameters': {'source': '27986:e6728420', 'rules': [
        {'class': 'FindUnusedParameters', 'code': 'DDP001', 'name': 'find-unused-parameters', 'severity': 'warning', 'summary': 'find_unused_parameters=True on a model whose forward provably uses every parameter (warning), or with nothing that shows it is needed (an info hint)', 'kinds': ['hftrainargs', 'jobspec', 'lightning_cli', 'nemo', 'python'], 'calls': ['ddp'], 'file': True, 'job': True},
    ]},
    'ddp.ddp002_global_rank_as_device': {'source': '13700:b72f8793', 'rules': [
        {'class': 'GlobalRankAsDevice', 'code': 'DDP002', 'name': 'global-rank-as-device', 'severity': 'error', 'summary': 'the global rank selects the CUDA device in a job that spans several nodes (use the local rank)', 'kinds': [], 'calls': ['ddp', 'set_device', 'spawn'], 'file': False, 'job': True},
    ]},
    'ddp.ddp003_reentrant_checkpoint_under_ddp': {'source': '3961:3c1dbc8d', 'rules': [
        {'class': 'ReentrantCheckpointUnderDDP', 'code': 'DDP003', 'name': 'reentrant-checkpoint-under-ddp', 'severity': 'warning', 'summary': 'torch.utils.checkpoint.checkpoint without use_reentrant=False in a DDP-trained script', 'kinds': ['python'], 'calls': ['checkpoint', 'ddp'], 'file': True, 'job': False},
    ]},
    'ddp.ddp004_multiple_device_ids': {'source': '2508:f0dd6adb', 'rules': [
        {'class': 'MultipleDeviceIds', 'code': 'DDP004', 'name': 'multiple-device-ids', 'severity': 'error', 'summary': 'DistributedDataParallel device_ids with more than one element', 'kinds': ['python'], 'calls': ['ddp'], 'file': True, 'job': False},
    ]},
    'ddp.ddp005_horovod_parameters_not_broadcast': {'source': '7709:4a7789b3', 'rules': [
        {'class': 'HorovodParametersNotBroadcast', 'code': 'DDP005', 'name': 'horovod-parameters-not-broadcast', 'severity': 'warning', 'summary': "Horovod training whose workers never receive rank 0's initial weights", 'kinds': ['python'], 'calls': ['horovod.keras.DistributedGradientTape', 'horovod.keras.DistributedOptimizer', 'horovod.keras.DistributedTrainer', 'horovod.mxnet.DistributedGradientTape', 'horovod.mxnet.DistributedOptimizer', 'horovod.mxnet.DistributedTrainer', 'horovod.tensorflow.DistributedGradientTape', 'horovod.tensorflow.DistributedOptimizer', 'horovod.tensorflow.DistributedTrainer', 'horovod.tensorflow.keras.DistributedGradientTape', 'horovod.tensorflow.keras.DistributedOptimizer', 'horovod.tensorflow.keras.DistributedTrainer', 'horovod.torch.DistributedGradientTape', 'horovod.torch.DistributedOptimizer', 'horovod.torch.DistributedTrainer'], 'file': True, 'job': False},
    ]},
    'ddp.ddp006_horovod_accumulation_exceeds_backward_passes': {'source': '7865:ffbda1c0', 'rules': [
        {'class': 'HorovodAccumulationExceedsBackwardPasses', 'code': 'DDP006', 'name': 'horovod-accumulation-exceeds-backward-passes', 'severity': 'error', 'summary': "a loop accumulates more backward passes per step than hvd.DistributedOptimizer's backward_passes_per_step", 'kinds': ['python'], 'calls': ['hvd_optimizer'], 'file': True, 'job': False},
    ]},
    'ddp.ddp007_horovod_optimizer_wrapped_twice': {'source': '6482:c301559e', 'rules': [
        {'class': 'HorovodOptimizerWrappedTwice', 'code': 'DDP007', 'name': 'horovod-optimizer-wrapped-twice', 'severity': 'error', 'summary': 'gradients averaged twice: hvd.DistributedOptimizer over itself, or over a DistributedDataParallel model', 'kinds': ['python'], 'calls': ['ddp', 'horovod.keras.DistributedOptimizer', 'horovod.tensorflow.DistributedOptimizer', 'horovod.tensorflow.keras.DistributedOptimizer', 'horovod.torch.DistributedOptimizer'], 'file': True, 'job': False},
    ]},
    'ddp.ddp008_horovod_lr_scaled_twice': {'source': '5908:1e8126ec', 'rules': [
        {'class': 'HorovodLrScaledTwice', 'code': 'DDP008', 'name': 'horovod-lr-scaled-twice', 'severity': 'warning', 'summary': "an optimizer's learning rate multiplied by hvd.size() twice on its way in", 'kinds': ['python'], 'calls': ['horovod.keras.size', 'horovod.mxnet.size', 'horovod.tensorflow.keras.size', 'horovod.tensorflow.size', 'horovod.torch.size'], 'file': True, 'job': False},
    ]},
    'env.env001_nccl_transport_disabled': {'source': '6260:5dbff217', 'rules': [
        {'class': 'NcclTransportDisabled', 'code': 'ENV001', 'name': 'nccl-transport-disabled', 'severity': 'warning', 'summary': 'NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or (multi-node) NCCL_IB_DISABLE set for a training launch.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'env.env002_visible_devices_fewer_than_procs': {'source': '5403:6e09881c', 'rules': [
        {'class': 'VisibleDevicesFewerThanProcs', 'code': 'ENV002', 'name': 'visible-devices-fewer-than-procs', 'severity': 'error', 'summary': 'CUDA_VISIBLE_DEVICES lists fewer devices than the processes started per node.', 'kinds': ['accelerate', 'kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'env.env003_nccl_socket_loopback': {'source': '3018:ff33ff91', 'rules': [
        {'class': 'NcclSocketLoopback', 'code': 'ENV003', 'name': 'nccl-socket-loopback', 'severity': 'error', 'summary': 'NCCL_SOCKET_IFNAME selects only the loopback interface for a multi-node launch.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'env.env004_cuda_device_max_connections': {'source': '7822:c2eaa4ee', 'rules': [
        {'class': 'CudaDeviceMaxConnections', 'code': 'ENV004', 'name': 'cuda-device-max-connections', 'severity': 'warning', 'summary': 'Megatron with TP > 1 or CP > 1 launched without CUDA_DEVICE_MAX_CONNECTIONS=1.', 'kinds': ['kube', 'shell'], 'calls': [], 'file': True, 'job': False},
    ]},
    'env.env005_unknown_nccl_variable': {'source': '24715:ac7149f9', 'rules': [
        {'class': 'UnknownNcclVariable', 'code': 'ENV005', 'name': 'unknown-nccl-variable', 'severity': 'warning', 'summary': 'An NCCL_*/TORCH_NCCL_* variable that NCCL and PyTorch do not know (a typo), with a did-you-mean.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'env.env006_cuda_too_old_for_gpu': {'source': '6369:21a30b3d', 'rules': [
        {'class': 'CudaTooOldForGpu', 'code': 'ENV006', 'name': 'cuda-too-old-for-gpu', 'severity': 'error', 'summary': "torch's CUDA build predates the job's GPU architecture, so its kernels cannot run there.", 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': False, 'job': True},
    ]},
    'env.env007_bf16_unsupported_gpu': {'source': '3856:d4eebc01', 'rules': [
        {'class': 'Bf16UnsupportedGpu', 'code': 'ENV007', 'name': 'bf16-unsupported-gpu', 'severity': 'warning', 'summary': 'bf16 training on a GPU without bf16 tensor cores (V100, T4, P100).', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': False, 'job': True},
    ]},
    'env.env008_fp8_unsupported_gpu': {'source': '3947:0f804244', 'rules': [
        {'class': 'Fp8UnsupportedGpu', 'code': 'ENV008', 'name': 'fp8-unsupported-gpu', 'severity': 'error', 'summary': 'FP8 training (Megatron --fp8-format) on a GPU before Ada/Hopper.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': False, 'job': True},
    ]},
    'env.env009_flash_attention_unsupported_gpu': {'source': '5086:75b428f9', 'rules': [
        {'class': 'FlashAttentionUnsupportedGpu', 'code': 'ENV009', 'name': 'flash-attention-unsupported-gpu', 'severity': 'error', 'summary': 'FlashAttention requested on a GPU its version does not support.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': False, 'job': True},
    ]},
    'env.env010_torch_api_newer_than_pin': {'source': '5279:7d13c1d5', 'rules': [
        {'class': 'TorchApiNewerThanPin', 'code': 'ENV010', 'name': 'torch-api-newer-than-pin', 'severity': 'error', 'summary': 'A script calls a torch API that the torch the job pins does not have.', 'kinds': ['python'], 'calls': ['torch.compile', 'torch.distributed.device_mesh.init_device_mesh', 'torch.func.functional_call', 'torch.func.grad', 'torch.func.vmap', 'torch.nn.functional.scaled_dot_product_attention'], 'file': True, 'job': False},
    ]},
    'lay.lay001_parallel_product_mismatch': {'source': '22148:d89b6cfb', 'rules': [
        {'class': 'ParallelProductMismatch', 'code': 'LAY001', 'name': 'parallel-product-mismatch', 'severity': 'error', 'summary': 'The product of the parallel degrees does not fit the world size', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay002_tensor_parallel_across_nodes': {'source': '2137:2a13daa0', 'rules': [
        {'class': 'TensorParallelAcrossNodes', 'code': 'LAY002', 'name': 'tensor-parallel-across-nodes', 'severity': 'warning', 'summary': 'Tensor parallelism spans more GPUs than one node has', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay003_heads_not_divisible_by_tp': {'source': '4243:215c7246', 'rules': [
        {'class': 'HeadsNotDivisibleByTp', 'code': 'LAY003', 'name': 'heads-not-divisible-by-tp', 'severity': 'error', 'summary': 'The number of attention heads is not divisible by the tensor-parallel degree', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay004_layers_not_divisible_by_pp': {'source': '5100:3d67cb78', 'rules': [
        {'class': 'LayersNotDivisibleByPp', 'code': 'LAY004', 'name': 'layers-not-divisible-by-pp', 'severity': 'error', 'summary': 'The layers do not split evenly over the pipeline (× virtual) stages', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay005_sequence_parallel_without_tp': {'source': '2391:8004a270', 'rules': [
        {'class': 'SequenceParallelWithoutTp', 'code': 'LAY005', 'name': 'sequence-parallel-without-tp', 'severity': 'warning', 'summary': 'Sequence parallelism is enabled with tensor-parallel degree 1', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay006_zero_with_pipeline': {'source': '7744:dbb24895', 'rules': [
        {'class': 'ZeroWithPipeline', 'code': 'LAY006', 'name': 'zero-with-pipeline', 'severity': 'error', 'summary': 'DeepSpeed ZeRO stage 2 or 3 combined with pipeline parallelism', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay007_device_mesh_size_mismatch': {'source': '6702:6ca1819c', 'rules': [
        {'class': 'DeviceMeshSizeMismatch', 'code': 'LAY007', 'name': 'device-mesh-size-mismatch', 'severity': 'error', 'summary': 'the product of an init_device_mesh/DeviceMesh shape differs from the world size', 'kinds': ['python'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay008_experts_not_divisible': {'source': '3750:3505dbb1', 'rules': [
        {'class': 'ExpertsNotDivisible', 'code': 'LAY008', 'name': 'experts-not-divisible', 'severity': 'error', 'summary': 'Experts do not divide over expert parallelism, or the expert grid does not fit the world', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay009_context_parallel_seq_len': {'source': '2103:1c053a44', 'rules': [
        {'class': 'ContextParallelSeqLen', 'code': 'LAY009', 'name': 'context-parallel-seq-len', 'severity': 'error', 'summary': 'The sequence length is not divisible by 2 × the context-parallel degree', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay010_kv_groups_vs_tp': {'source': '2120:824cbbb0', 'rules': [
        {'class': 'KvGroupsVsTp', 'code': 'LAY010', 'name': 'kv-groups-vs-tp', 'severity': 'error', 'summary': 'GQA query groups are neither a multiple nor a divisor of TP', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay011_virtual_pipeline_without_pp': {'source': '1901:c4ea3224', 'rules': [
        {'class': 'VirtualPipelineWithoutPp', 'code': 'LAY011', 'name': 'virtual-pipeline-without-pp', 'severity': 'error', 'summary': 'A virtual (interleaved) pipeline is requested with PP 1', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay012_hidden_not_divisible_by_heads': {'source': '2145:353416cb', 'rules': [
        {'class': 'HiddenNotDivisibleByHeads', 'code': 'LAY012', 'name': 'hidden-not-divisible-by-heads', 'severity': 'error', 'summary': 'hidden_size is not divisible by num_attention_heads and no head dimension is given', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay013_tp_comm_overlap_without_sequence_parallel': {'source': '6779:3c7233d2', 'rules': [
        {'class': 'TpCommOverlapWithoutSequenceParallel', 'code': 'LAY013', 'name': 'tp-comm-overlap-without-sequence-parallel', 'severity': 'error', 'summary': 'Tensor-parallel communication overlap without sequence parallelism (or with TP 1)', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lay.lay014_rollout_tp_not_dividing_world': {'source': '2953:c4673129', 'rules': [
        {'class': 'RolloutTpNotDividingWorld', 'code': 'LAY014', 'name': 'rollout-tp-not-dividing-world', 'severity': 'error', 'summary': "The rollout engine's tensor-parallel degree does not divide the GPUs of an RL job.", 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch001_launcher_world_size_mismatch': {'source': '12232:b4d474f4', 'rules': [
        {'class': 'LauncherWorldSizeMismatch', 'code': 'LCH001', 'name': 'launcher-world-size-mismatch', 'severity': 'error', 'summary': 'Two launch layers disagree on the number of nodes or processes per node.', 'kinds': ['accelerate', 'kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch002_more_processes_than_gpus': {'source': '5214:bc52265e', 'rules': [
        {'class': 'MoreProcessesThanGpus', 'code': 'LCH002', 'name': 'more-processes-than-gpus', 'severity': 'error', 'summary': 'More processes per node than GPUs requested per node.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch003_double_launch': {'source': '3587:2a938339', 'rules': [
        {'class': 'DoubleLaunch', 'code': 'LCH003', 'name': 'double-launch', 'severity': 'error', 'summary': 'srun/mpirun starts several tasks per node and each task is a launcher that forks workers.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch004_deprecated_launcher': {'source': '9171:a0f75677', 'rules': [
        {'class': 'DeprecatedLauncher', 'code': 'LCH004', 'name': 'deprecated-launcher', 'severity': 'warning', 'summary': 'python -m torch.distributed.launch is deprecated; use torchrun.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch005_pytorchjob_master_replicas': {'source': '2746:0ac67d6e', 'rules': [
        {'class': 'PyTorchJobMasterReplicas', 'code': 'LCH005', 'name': 'pytorchjob-master-replicas', 'severity': 'error', 'summary': 'Kubeflow PyTorchJob Master.replicas must be 1.', 'kinds': ['kube'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch006_multi_node_rendezvous': {'source': '9163:dfa54ea6', 'rules': [
        {'class': 'MultiNodeRendezvous', 'code': 'LCH006', 'name': 'multi-node-rendezvous', 'severity': 'error', 'summary': 'A multi-node launch with a loopback master address or one hard-coded node rank for every node.', 'kinds': ['kube', 'makefile', 'python', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch007_accelerate_processes_per_machine': {'source': '5310:5a6ba68e', 'rules': [
        {'class': 'AccelerateProcessesPerMachine', 'code': 'LCH007', 'name': 'accelerate-processes-per-machine', 'severity': 'error', 'summary': 'accelerate num_processes is the total over all machines: it must be a multiple of num_machines.', 'kinds': ['accelerate', 'kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch008_gpu_limits_requests_mismatch': {'source': '4674:2609b71f', 'rules': [
        {'class': 'GpuLimitsRequestsMismatch', 'code': 'LCH008', 'name': 'gpu-limits-requests-mismatch', 'severity': 'error', 'summary': 'Kubernetes GPU requests differ from the limits, or are given without limits.', 'kinds': ['kube'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch009_sbatch_too_few_tasks': {'source': '2792:795832f7', 'rules': [
        {'class': 'SbatchTooFewTasks', 'code': 'LCH009', 'name': 'sbatch-too-few-tasks', 'severity': 'warning', 'summary': '#SBATCH --ntasks is smaller than --nodes × --ntasks-per-node.', 'kinds': ['shell'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch010_node_rank_out_of_range': {'source': '3126:5db3ad1a', 'rules': [
        {'class': 'NodeRankOutOfRange', 'code': 'LCH010', 'name': 'node-rank-out-of-range', 'severity': 'error', 'summary': '--node_rank is not smaller than --nnodes.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch011_master_port_out_of_range': {'source': '3150:3a1f3c07', 'rules': [
        {'class': 'MasterPortOutOfRange', 'code': 'LCH011', 'name': 'master-port-out-of-range', 'severity': 'error', 'summary': 'The master/rendezvous port is above 65535.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch012_master_addr_differs': {'source': '4363:97c7813e', 'rules': [
        {'class': 'MasterAddrDiffers', 'code': 'LCH012', 'name': 'master-addr-differs', 'severity': 'error', 'summary': 'The per-node commands of one job name different master addresses.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch013_multi_node_default_master': {'source': '5217:d1a88220', 'rules': [
        {'class': 'MultiNodeDefaultMaster', 'code': 'LCH013', 'name': 'multi-node-default-master', 'severity': 'error', 'summary': "A torchrun on several Slurm or SkyPilot nodes with no master address: torchrun's default is 127.0.0.1.", 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch014_ray_workers_exceed_cluster': {'source': '4548:ca538970', 'rules': [
        {'class': 'RayWorkersExceedCluster', 'code': 'LCH014', 'name': 'ray-workers-exceed-cluster', 'severity': 'error', 'summary': "Ray Train workers need more GPUs than the RayJob's own cluster can ever offer.", 'kinds': ['kube'], 'calls': [], 'file': False, 'job': True},
    ]},
    'lch.lch016_sbatch_directive_ignored': {'source': '2524:0478dddd', 'rules': [
        {'class': 'SbatchDirectiveIgnored', 'code': 'LCH016', 'name': 'sbatch-directive-ignored', 'severity': 'warning', 'summary': 'An #SBATCH line after the first command, which sbatch ignores.', 'kinds': ['shell'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch017_sbatch_launch_without_srun': {'source': '7266:bfdf01d4', 'rules': [
        {'class': 'SbatchLaunchWithoutSrun', 'code': 'LCH017', 'name': 'sbatch-launch-without-srun', 'severity': 'error', 'summary': 'A multi-node batch script starts training without srun, so only the first node runs it.', 'kinds': ['shell'], 'calls': ['ddp', 'ds_init_distributed', 'fsdp', 'fully_shard', 'init_device_mesh', 'init_process_group'], 'file': True, 'job': True},
    ]},
    'lch.lch018_deepspeed_resource_filter': {'source': '9488:ff3fb20b', 'rules': [
        {'class': 'DeepspeedResourceFilter', 'code': 'LCH018', 'name': 'deepspeed-resource-filter', 'severity': 'error', 'summary': 'A deepspeed command whose --include/--exclude, --num_gpus/--num_nodes or hostfile the launcher refuses.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch019_launched_config_missing': {'source': '8906:0dc4f454', 'rules': [
        {'class': 'LaunchedConfigMissing', 'code': 'LCH019', 'name': 'launched-config-missing', 'severity': 'warning', 'summary': 'A launch line names a config file (--deepspeed, --config_file ...) that is not in the repository.', 'kinds': ['makefile', 'shell'], 'calls': [], 'file': True, 'job': True},
    ]},
    'lch.lch020_launcher_newer_than_torch': {'source': '3861:a3264795', 'rules': [
        {'class': 'LauncherNewerThanTorch', 'code': 'LCH020', 'name': 'launcher-newer-than-torch', 'severity': 'error', 'summary': 'torchrun or torch.distributed.run with a torch release that does not have it yet.', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'lch.lch021_processes_exceed_slots': {'source': '7505:e2690abf', 'rules': [
        {'class': 'ProcessesExceedSlots', 'code': 'LCH021', 'name': 'processes-exceed-slots', 'severity': 'error', 'summary': 'horovodrun or mpirun asks for more processes (-np) than the hosts, the hostfile or the MPIJob offer slots', 'kinds': ['kube', 'makefile', 'shell', 'skypilot'], 'calls': [], 'file': True, 'job': False},
    ]},
    'mem.mem001_pure_data_parallel_oversized': {'source': '11854:a2cd9640', 'rules': [
        {'class': 'PureDataParallelOversized', 'code': 'MEM001', 'name': 'pure-data-parallel-oversized', 'severity': 'error', 'summary': 'Pure data parallelism (no TP/PP, no parameter sharding) for a model whose weights, gradients and optimizer states alone exceed one GPU.', 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'mem.mem002_predicted_oom': {'source': '6534:cf28d783', 'rules': [
        {'class': 'PredictedOom', 'code': 'MEM002', 'name': 'predicted-oom', 'severity': 'error', 'summary': "The estimated peak memory of the most loaded rank exceeds the GPU's memory.", 'kinds': [], 'calls': [], 'file': False, 'job': True},
    ]},
    'pg.pg001_nccl_without_set_device': {'source': '9803:51418c1e', 'rules': [
        {'class': 'NcclWithoutSetDevice', 'code': 'PG001', 'name': 'nccl-without-set-device', 'severity': 'warning', 'summary': 'NCCL process group with no torch.cuda.set_device(...), in a script that uses the current device', 'kinds': ['python'], 'calls': ['accelerator', 'collective', 'dataloader', 'init_process_group', 'set_device'], 'file': True, 'job': False},
    ]},
    'pg.pg002_backend_device_mismatch': {'source': '5524:46f388fa', 'rules': [
        {'class': 'BackendDeviceMismatch', 'code': 'PG002', 'name': 'backend-device-mismatch', 'severity': 'warning', 'summary': 'gloo for CUDA training (slow), or nccl in a script that never uses CUDA (error)', 'kinds': ['python'], 'calls': ['ddp', 'init_process_group', 'set_device'], 'file': True, 'job': False},
    ]},
    'pg.pg003_world_size_conflict': {'source': '3984:805991aa', 'rules': [
        {'class': 'WorldSizeConflict', 'code': 'PG003', 'name': 'world-size-conflict', 'severity': 'error', 'summary': 'world_size=/rank= given to init_process_group disagree with the launcher', 'kinds': ['python'], 'calls': ['init_process_group'], 'file': False, 'job': True},
    ]},
    'pg.pg004_env_rendezvous_without_launcher': {'source': '4599:5b40f3ef', 'rules': [
        {'class': 'EnvRendezvousWithoutLauncher', 'code': 'PG004', 'name': 'env-rendezvous-without-launcher', 'severity': 'error', 'summary': 'env:// rendezvous in a script started by plain python with no MASTER_ADDR/PORT/RANK/WORLD_SIZE', 'kinds': ['python'], 'calls': ['init_process_group', 'spawn'], 'file': False, 'job': True},
    ]},
    'pg.pg005_collective_in_rank_branch': {'source': '22628:fde8844d', 'rules': [
        {'class': 'CollectiveInRankBranch', 'code': 'PG005', 'name': 'collective-in-rank-branch', 'severity': 'error', 'summary': 'a collective only some ranks reach (e.g. under `if rank == 0:`): the others wait forever', 'kinds': ['python'], 'calls': ['collective', 'dcp_save', 'fsdp', 'hvd_collective', 'spawn'], 'file': True, 'job': False},
    ]},
    'pg.pg006_rpc_world_size_conflict': {'source': '5119:d1b88bf3', 'rules': [
        {'class': 'RpcWorldSizeConflict', 'code': 'PG006', 'name': 'rpc-world-size-conflict', 'severity': 'error', 'summary': 'world_size=/rank= given to rpc.init_rpc disagree with the launcher', 'kinds': ['python'], 'calls': ['init_rpc'], 'file': False, 'job': True},
    ]},
    'pg.pg007_rpc_and_process_group_world_sizes': {'source': '5650:6c202e92', 'rules': [
        {'class': 'RpcAndProcessGroupWorldSizes', 'code': 'PG007', 'name': 'rpc-and-process-group-world-sizes', 'severity': 'error', 'summary': 'rpc.init_rpc and init_process_group on one env:// rendezvous with different world sizes', 'kinds': ['python'], 'calls': ['init_process_group', 'init_rpc'], 'file': True, 'job': False},
    ]},
    'pip.pip001_partition_gap_or_overlap': {'source': '4162:2a5492b2', 'rules': [
        {'class': 'PartitionGapOrOverlap', 'code': 'PIP001', 'name': 'partition-gap-or-overlap', 'severity': 'error', 'summary': 'layer slices handed to pipeline ranks overlap, leave a gap, or miss the first/last layer', 'kinds': ['python', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': False},
    ]},
    'pip.pip002_partition_count_mismatch': {'source': '8314:ca2e2d76', 'rules': [
        {'class': 'PartitionCountMismatch', 'code': 'PIP002', 'name': 'partition-count-mismatch', 'severity': 'error', 'summary': 'the number of partitions differs from the PP degree or from the ranks that select them', 'kinds': ['python', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'pip.pip003_partition_imbalance': {'source': '2874:97ec8280', 'rules': [
        {'class': 'PartitionImbalance', 'code': 'PIP003', 'name': 'partition-imbalance', 'severity': 'info', 'summary': 'pipeline stage sizes differ by more than one layer', 'kinds': ['python'], 'calls': [], 'file': True, 'job': False},
    ]},
    'pip.pip004_fewer_microbatches_than_stages': {'source': '4837:dc3a7dd9', 'rules': [
        {'class': 'FewerMicrobatchesThanStages', 'code': 'PIP004', 'name': 'fewer-microbatches-than-stages', 'severity': 'warning', 'summary': 'Fewer microbatches per step than pipeline stages: most of the step is bubble', 'kinds': ['accelerate', 'deepspeed', 'foundry', 'hf_model', 'hftrainargs', 'jobspec', 'megatron_yaml', 'nanotron', 'nemo', 'neox', 'torchtitan', 'torchtitan_py'], 'calls': [], 'file': True, 'job': True},
    ]},
    'syn.syn001_parse_error': {'source': '2047:a59edccf', 'rules': [
        {'class': 'ParseError', 'code': 'SYN001', 'name': 'parse-error', 'severity': 'error', 'summary': 'A script, launch file or config that parallint reads cannot be parsed.', 'kinds': [], 'calls': [], 'file': False, 'job': False},
    ]},
    'syn.syn002_not_analysed': {'source': '2561:07e1a232', 'rules': [
        {'class': 'NotAnalysed', 'code': 'SYN002', 'name': 'not-analysed', 'severity': 'warning', 'summary': 'A file parallint would check was not analysed (too large, too complex, timed out, unreadable ...).', 'kinds': [], 'calls': [], 'file': False, 'job': False},
    ]},
    'syn.syn003_unused_noqa': {'source': '1911:af7e2e1d', 'rules': [
        {'class': 'UnusedNoqa', 'code': 'SYN003', 'name': 'unused-noqa', 'severity': 'warning', 'summary': 'A `# noqa` code that suppresses no finding, or names no parallint rule.', 'kinds': [], 'calls': [], 'file': False, 'job': False},
    ]},
    'tfd.tfd001_variables_outside_strategy_scope': {'source': '11113:7b8cf093', 'rules': [
        {'class': 'VariablesOutsideStrategyScope', 'code': 'TFD001', 'name': 'variables-outside-strategy-scope', 'severity': 'warning', 'summary': "a Keras model or optimizer built outside the tf.distribute strategy's scope", 'kinds': ['python'], 'calls': ['tf_strategy'], 'file': True, 'job': False},
    ]},
    'tfd.tfd002_per_replica_mean_loss': {'source': '9862:71d327f6', 'rules': [
        {'class': 'PerReplicaMeanLoss', 'code': 'TFD002', 'name': 'per-replica-mean-loss', 'severity': 'warning', 'summary': 'a custom training loop under a tf.distribute strategy averages its loss with reduce_mean per replica', 'kinds': ['python'], 'calls': ['tf_strategy'], 'file': True, 'job': False},
    ]},
    'tfd.tfd003_single_machine_strategy_in_multi_worker_job': {'source': '3509:6557c8ed', 'rules': [
        {'class': 'SingleMachineStrategyInMultiWorkerJob', 'code': 'TFD003', 'name': 'single-machine-strategy-in-multi-worker-job', 'severity': 'error', 'summary': 'a MirroredStrategy script run by a TFJob of several workers, where each pod trains alone', 'kinds': ['python'], 'calls': ['tf_strategy'], 'file': False, 'job': True},
    ]},
    'tfd.tfd004_mirrored_devices_exceed_gpus': {'source': '5765:60d4902a', 'rules': [
        {'class': 'MirroredDevicesExceedGpus', 'code': 'TFD004', 'name': 'mirrored-devices-exceed-gpus', 'severity': 'error', 'summary': "MirroredStrategy(devices=[...]) names GPUs the job's pod or node does not have", 'kinds': ['python'], 'calls': ['tf_strategy'], 'file': False, 'job': True},
    ]},
    'tfd.tfd005_tf_config_cluster_invalid': {'source': '8473:5a341ebf', 'rules': [
        {'class': 'TfConfigClusterInvalid', 'code': 'TFD005', 'name': 'tf-config-cluster-invalid', 'severity': 'error', 'summary': 'a literal TF_CONFIG TensorFlow refuses, or whose cluster is not the job that runs it', 'kinds': ['kube', 'makefile', 'python', 'shell', 'skypilot'], 'calls': ['tf_strategy'], 'file': True, 'job': True},
    ]},
    'tfd.tfd006_per_replica_batch_as_global': {'source': '13113:4c5af689', 'rules': [
        {'class': 'PerReplicaBatchAsGlobal', 'code': 'TFD006', 'name': 'per-replica-batch-as-global', 'severity': 'warning', 'summary': 'a batch named per replica where tf.distribute expects the global batch (or the reverse)', 'kinds': ['python'], 'calls': ['tf_strategy'], 'file': True, 'job': False},
    ]},
}
