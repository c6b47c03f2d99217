#!/bin/bash
# crows, round 2 (45 s): the samples whose mapping changed and lane-rows against the
# interpreter; then run time of the new plans against session 7's (same process, same data):
# ema (lane-rows chunk 8 / refill 8 rows vs 16 / 32), row_argmax (dynamic form), segment_sum and
# histogram (16 slots), special_math and fast_silu_gelu (2 coordinates a thread vs 4).
mkdir -p "$RESULTS"
timeout 15 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_cuda_samples.py tests/gpu/test_lane_rows.py \
  -k "(22- and (argmax or segment or histogram or special_math or ema or f8_rowwise or nan_max or fast_silu)) or ema_rows_a_lane or backward or crossing or three_windows" \
  2>&1 | tail -6
timeout 13 python3 bench/rows_ab.py ema --rounds 3 --reps 10 --out "$RESULTS/ema_ab.json" 2>&1 | tail -6
timeout 8 python3 bench/slot_cap_ab.py --reps 20 --variants default,s7 --out "$RESULTS/slot_cap_ab.json" \
  --only row_argmax:row_argmax,segment_sum_scatter_reduce:segment_sum,histogram_masked:histogram256 2>&1 | tail -4
timeout 8 python3 bench/grid_chunks_ab.py --reps 20 --variants chunks_k2,chunks_k4 \
  --only special_math:special_math,fast_activations_approx:fast_silu_gelu --out "$RESULTS/grid_ab.json" 2>&1 | tail -3
