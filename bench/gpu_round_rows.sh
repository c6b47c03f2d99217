#!/bin/bash
# A GPU round for issue 13's rows work (docs/gpu.md), at most 45 s on the H200, from the
# repository root, results under $RESULTS: the lane-rows differential tests against the
# interpreter (now the default mapping of ema_rows), ema_rows' timing beside Triton (round 1,
# before the chunked writes: 0.633 ms, 0.42 of triton_seq), then the cumsum variants side by
# side (bench/cumsum_ab.py: the default, the grouped-scans and predicated-vectors paths,
# `.minnctapersm` 5 and 6).
RESULTS=${RESULTS:-bench/results/round-rows}
mkdir -p "$RESULTS"
timeout 19 python3 -m pytest -q -n 8 -p no:cacheprovider -rfE --junitxml="$RESULTS/tests.xml" \
    tests/gpu/test_lane_rows.py tests/gpu/test_cta_buffers.py -k "not 20000 and not 1000-dynamic" 2>&1 | tail -14
timeout 12 python3 bench/gpu_samples.py --only ema_row_buffer:ema_rows --out "$RESULTS/samples.json" \
    --time-limit-s 11 --budget-s 0.1 2>&1 | tail -8
timeout 12 python3 bench/cumsum_ab.py --out "$RESULTS/cumsum_ab.json" 2>&1 | tail -8
