#!/bin/bash
# cbig, session 7 (#13 compile time of the heavy generators): run times still to measure. r2 verified
# correctness on the H200 (tests/gpu/test_flash_attention*.py 42 passed; structured + mma.sync contractions
# 49 passed) but its timings ran out of time. Changed default codegen, run time NOT yet measured:
#   - the lean LLVM pipeline (SROA, InstCombine, SimplifyCFG, ADCE; nvptx/compile._tiled) instead of O1 for
#     the mma.sync/mma.sp tile kernels, the structured contractions and flash attention;
#   - flash on tensor cores: one rolled cp.async loop a staging site.
# The same commands as round 1 of session 7 (bench/results/pending-20261201-s7-h200-r1/{attn,sparse,cbig}):
# compare intentc's ms with them (attn f16 D128 0.0770, bf16 D128 0.0816, f32 D128 0.4906, f32 D64 0.2775;
# mxfp4 1.3637; sparse24 1.1445; sparse12 4.9464). A regression: `_tiled` -> False restores O1 everywhere;
# commit 592f8f0 alone rolled the tensor-core flash staging.
mkdir -p "$RESULTS"
timeout 22 python3 bench/gpu_attention.py --seq 4096 --dims 64,128 --dtypes f16,bf16,f32 --flash-key-groups --decode '' --out "$RESULTS/attention.json" 2>&1 | tail -8
timeout 20 python3 bench/gpu_samples.py --only mxfp4_scaled_matmul:mxfp4_matmul,sparse_2of4_matmul:sparse24_matmul,sparse_1of2_matmul:sparse12_matmul --out "$RESULTS/samples.json" --time-limit-s 18 2>&1 | tail -6
