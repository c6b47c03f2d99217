#!/bin/bash
# attn (issue #14): verifies the default-off flash paths of branch attn on the GPU.
# - tests/gpu/test_flash_attention_mma.py: 16-bit flash attention on the tensor cores
#   (the GPU path flash-tensor-cores) against the interpreter;
# - tests/gpu/test_flash_attention.py: f32 flash, default plan and key groups (the GPU path flash-key-groups);
# - bench/gpu_attention.py: f16/bf16 (tensor cores on) beside torch's flash SDPA, f32 with key groups
#   beside torch f32. Runs from the root of the worktree copy; writes $RESULTS/attention.json.
mkdir -p "$RESULTS"
timeout 24 python3 -m pytest -q -n 8 -p no:cacheprovider --tb=line tests/gpu/test_flash_attention_mma.py tests/gpu/test_flash_attention.py 2>&1 | tail -30
timeout 24 python3 bench/gpu_attention.py --seq 4096 --dims 64,128 --dtypes f16,bf16,f32 --flash-key-groups --decode '' --out "$RESULTS/attention.json" 2>&1 | tail -8
