#!/bin/bash
# A GPU round for the paths awaiting GPU verification that issue 13's rows work added (docs/gpu.md,
# "Paths awaiting GPU verification"), about 50 s on the H200, from the repository root, results
# under $RESULTS: their differential tests against the interpreter (paths on), then their
# timings beside Triton (compare with bench/results/gpu-20261201-s5-h200-final.json, paths off:
# ema_rows 1.0587 ms on `cta`; cumsum 32768x4096 0.88 of Triton).
RESULTS=${RESULTS:-bench/results/round-rows}
mkdir -p "$RESULTS"
timeout 18 python3 -m pytest -q -x -n 8 -p no:cacheprovider -rfE tests/gpu/test_lane_rows.py \
    tests/gpu/test_grouped_scans.py 2>&1 | tail -12
timeout 14 python3 bench/gpu_samples.py --only ema_row_buffer:ema_rows --gpu-path lane-rows \
    --out "$RESULTS/samples-lane-rows.json" --time-limit-s 13 --budget-s 0.1 2>&1 | tail -8
timeout 16 python3 bench/gpu.py --rows row_sum_cumsum --rounds 5 --no-samples --no-contractions \
    --gpu-path grouped-scans --gpu-path predicated-vectors --out "$RESULTS/rows-grouped-scans.json" 2>&1 | tail -6
