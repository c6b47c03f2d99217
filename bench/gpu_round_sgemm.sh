#!/bin/bash
# GPU round for the f32 tiled matmul (#14; at most 45 s): the plans of bench/gpu_sgemm.py beside
# cuBLAS SGEMM (TF32 off; each plan's result checked against f64 at edge shapes), then the f32
# GPU differential tests of both K steps against the interpreter. Results under $RESULTS.
set -u
RESULTS=${RESULTS:-bench/results/sgemm-round}
mkdir -p "$RESULTS"
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD   # (the round's own path first: its wheels)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > "$RESULTS/device.txt" 2>&1
timeout 23 python3 bench/gpu_sgemm.py --rounds 5 --out "$RESULTS/sgemm.json" 2>&1 | tail -30 | tee "$RESULTS/bench.log"
timeout 18 python3 -m pytest -q --maxfail=6 -n 8 -p no:cacheprovider tests/gpu/test_mma_contraction.py \
    -k "f32_operands" 2>&1 | tail -12 | tee "$RESULTS/tests.log"
