#!/bin/bash
# dtiles r2: the tile generators' straight-line PTX as inline asm blocks (nvptx/asm_block.py), and
# staging without the unaligned paths where the specialization proves alignment.
# 1) run time of mxfp4 / sparse 2:4 / sparse 1:2 under this tree's default and its LLVM choices
#    (bench/gpu_codegen_ab.py: each choice compiled apart, outputs compared bit for bit, checked);
# 2) main's tree (scratch/main_tree: git archive of main, with grammar/) default, same device;
# 3) the MMA and structured contraction GPU tests with what time is left.
mkdir -p "$RESULTS"
T0=$(date +%s)
ONLY=mxfp4_scaled_matmul:mxfp4_matmul,sparse_2of4_matmul:sparse24_matmul,sparse_1of2_matmul:sparse12_matmul
timeout 24 python3 bench/gpu_codegen_ab.py --only $ONLY --budget-s 0.1 --out "$RESULTS/ab.json" \
  --choices "default,codegen -O0,codegen -O0 no InstCombine" 2>&1 | grep -v Warning | cut -c1-420
echo "ab done at +$(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD/scratch/main_tree timeout 10 python3 scratch/main_tree/bench/gpu_codegen_ab.py \
  --only $ONLY --budget-s 0.1 --out "$RESULTS/main.json" --choices default 2>&1 | grep -v Warning | cut -c1-420
echo "main done at +$(( $(date +%s) - T0 )) s"
timeout $(( 53 - ($(date +%s) - T0) )) python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_mma_contraction.py \
  tests/gpu/test_structured_contraction.py 2>&1 | tail -3
echo "tests done at +$(( $(date +%s) - T0 )) s"
