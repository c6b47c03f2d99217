#!/bin/bash
# crows, round 1 (45 s): every sample (one seed), the fp8 casts, nan_max's reductions and
# lane-rows against the interpreter (ld.global/st.global, max.f32 for maximum_num, fp8 casts,
# arg_reduce's compare, mask-bounded scatters, lane-rows' rolled miss path); then run-time A/Bs
# for compile time: slots a thread (32/16/8) of the reduction rows, ema's chunk and refill
# rows, special_math's coordinates a thread (4/2/1).
mkdir -p "$RESULTS"
timeout 22 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_f8_casts.py tests/gpu/test_cuda_samples.py \
  tests/gpu/test_lane_rows.py tests/gpu/test_cta_reductions.py \
  -k "(matches_interpreter and 21-) or f8_casts_round or ema_rows_a_lane or backward or crossing or (nan_max and bit_exact)" \
  2>&1 | tail -15
timeout 9 python3 bench/slot_cap_ab.py --reps 20 --out "$RESULTS/slot_cap_ab.json" \
  --only nan_max_vs_maximum_num:nan_max,row_argmax:row_argmax,segment_sum_scatter_reduce:segment_sum,f8_rowwise_quant:quantize_e5m2_rowwise,f8_rowwise_quant:quantize_e4m3_rowwise 2>&1 | tail -6
timeout 8 python3 bench/rows_ab.py ema --rounds 3 --reps 10 --out "$RESULTS/ema_ab.json" 2>&1 | tail -7
timeout 5 python3 bench/grid_chunks_ab.py --reps 20 --variants chunks_k4,chunks_k2,chunks_k1 \
  --only special_math:special_math --out "$RESULTS/special_math_ab.json" 2>&1 | tail -2
