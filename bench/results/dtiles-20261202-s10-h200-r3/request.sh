#!/bin/bash
# dtiles r3: (1) this tree, each choice compiled apart (bench/gpu_codegen_ab.py): mxfp4 without InstCombine
# and/or CodeGenPrepare (their compile time is a quarter of mxfp4's now); sparse 2:4 and 1:2 default (and
# repeats: those choices are already their plans'); decode_scores without Loop Strength Reduction;
# (2) main's tree before the session's merges (scratch/main_tree) default for the sparse kernels, same
# device; (3) the structured and MMA contraction GPU tests with what time is left.
mkdir -p "$RESULTS"
T0=$(date +%s)
timeout 23 python3 bench/gpu_codegen_ab.py --only mxfp4_scaled_matmul:mxfp4_matmul,decode_attention_scores_contract:decode_scores,sparse_2of4_matmul:sparse24_matmul,sparse_1of2_matmul:sparse12_matmul \
  --budget-s 0.1 --out "$RESULTS/ab.json" \
  --choices "default,no InstCombine,no InstCombine no CodeGenPrepare,lane-dots no LSR" 2>&1 | grep -v Warning | cut -c1-160
echo "ab done at +$(( $(date +%s) - T0 )) s"
PYTHONPATH=$PWD/scratch/main_tree:$PYTHONPATH timeout 12 python3 scratch/main_tree/bench/gpu_codegen_ab.py \
  --only sparse_2of4_matmul:sparse24_matmul,sparse_1of2_matmul:sparse12_matmul --budget-s 0.1 --out "$RESULTS/main.json" \
  --choices default 2>&1 | grep -v Warning | cut -c1-160
echo "main done at +$(( $(date +%s) - T0 )) s"
timeout $(( 53 - ($(date +%s) - T0) )) python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_structured_contraction.py \
  tests/gpu/test_mma_contraction.py 2>&1 | tail -3
echo "tests done at +$(( $(date +%s) - T0 )) s"
