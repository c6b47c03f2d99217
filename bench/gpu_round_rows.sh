#!/bin/bash
# A GPU round for issue 13's rows work (docs/gpu.md), at most 45 s on the H200, from the
# repository root, results under $RESULTS: the lane-rows differential tests against the
# interpreter (lane-rows is now ema_rows' default mapping), then bench/rows_ab.py: ema_rows'
# tensor write chunks beside triton_seq (round 1, one element at a time: 0.633 ms, 0.42 of
# triton_seq), and the row cumsum's variants beside Triton (the default, `.minnctapersm` 6
# and 8, grids of the CTAs an SM fits, aligned16 + contiguous facts).
RESULTS=${RESULTS:-bench/results/round-rows}
mkdir -p "$RESULTS"
left_until() { echo $(( $1 - SECONDS )); }     # the seconds left until $1 s into the round
timeout 15 python3 -m pytest -q -n 8 -p no:cacheprovider -rfE --junitxml="$RESULTS/tests.xml" \
    tests/gpu/test_lane_rows.py tests/gpu/test_cta_buffers.py -k "not 1000 and not 20000" 2>&1 | tail -14
timeout "$(left_until 28)" python3 bench/rows_ab.py ema --out "$RESULTS/ema_ab.json" 2>&1 | tail -9
timeout "$(left_until 43)" python3 bench/rows_ab.py cumsum --out "$RESULTS/cumsum_ab.json" 2>&1 | tail -15
