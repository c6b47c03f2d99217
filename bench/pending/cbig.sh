#!/bin/bash
# cbig (#13 compile time of the heavy generators; session 6 had no GPU, so this verifies it later).
# Changed GPU paths (all default, semantics argued unchanged, run time NOT yet measured):
#   MMA epilogue (inside/edge stores), MMA staging (K loop from -lookahead, rolled narrow copies),
#   register-staged K loop from step -1 (mxfp4, sparse), quantized rows pipelined loops, i0 helper
#   (outside loops), Q4_K f16 scales without NaN bits, rolled warp steps of region combines.
# 1) GPU differential tests of those paths, 2) run times of the changed samples (compare the ratios
#    with bench/results/gpu-20261201-s5-h200-final.json), 3) compile times to PTX.
mkdir -p "$RESULTS"
K='mma_contraction or structured_contraction or quantized_rows or (test_cuda_math and i0) or (test_sample_on_gpu and (matmul or q4_k or q4k or kaiser or logsumexp or welford or nan_max)) or welford_generic or nan_max_builtin or region_scan_prefix or tuple_reductions or generic_scans_are'
timeout 24 python3 -m pytest -q -n 8 -p no:cacheprovider --durations=6 tests/gpu/test_mma_contraction.py tests/gpu/test_structured_contraction.py tests/gpu/test_cuda_samples.py tests/gpu/test_cuda_math.py tests/gpu/test_quantized_rows.py tests/gpu/test_cta_reductions.py -k "$K" 2>&1 | tail -22
timeout 14 python3 bench/gpu_samples.py --only tiled_matmul:matmul_tiled,q4k_q8k_matvec:q4k_q8k_matvec,kaiser_window_i0:kaiser_frames,mxfp4_scaled_matmul:mxfp4_matmul,prefix_logsumexp_region_scan:prefix_logsumexp --out "$RESULTS/samples.json" --time-limit-s 12 2>&1 | tail -8
timeout 10 python3 -c '
import json, sys, os
sys.path.insert(0, ".")
from bench.compile import sample_rows
from bench.gpu_sample_specs import SPECS
ids = sys.argv[1].split(",")
rows = sample_rows([s for s in SPECS if s.id in ids], 1)
json.dump({"host": os.uname().nodename, "reps": 1, "samples": rows}, open(os.environ["RESULTS"] + "/compile.json", "w"), indent=1)
' tiled_matmul:matmul_tiled,sparse_2of4_matmul:sparse24_matmul,mxfp4_scaled_matmul:mxfp4_matmul,quantize_q8_k:dequantize_q4_k,q4k_q8k_matvec:q4k_q8k_matvec,kaiser_window_i0:kaiser_frames,prefix_logsumexp_region_scan:prefix_logsumexp 2>&1 | tail -8
