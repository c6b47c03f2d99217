#!/bin/bash
# sparse (#14): verifies the default-off mma.sp path (the GPU path sparse-mma) on the H200.
# Most important first: the layout probe (one m16n8k32 block, exact) and the 4096^3 timing of
# both paths beside torch, then the 2:4 / 1:2 GPU tests (both paths), then the samples table.
mkdir -p "$RESULTS"
timeout 16 python3 bench/gpu_sparse.py --probe --stages 4,6 --out "$RESULTS/sparse-20261201-s6-h200.json" 2>&1 | tail -6
timeout 16 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_structured_contraction.py -k sparse 2>&1 | tail -20
timeout 20 python3 bench/gpu_samples.py --only sparse_2of4_matmul:sparse24_matmul,sparse_1of2_matmul:sparse12_matmul --out "$RESULTS/samples.json" --time-limit-s 18 2>&1 | tail -4
