#!/bin/bash
# fp8 (issue #14, e4m3/e5m2 speed). Session 6 had no GPU: the 8-bit widening options (decoupled
# rings, integer widening, inline copies, A widened in registers, ...) are default-off plan
# fields; this script verifies them on the H200. First the probe (<= 28 s): f16 control,
# e4m3/e5m2 defaults beside torch._scaled_mm, timing ablations, then each option of PLANS_F8 in
# priority order (checked against the f64 product, TFLOP/s); then every 8-bit code through each
# option against the interpreter and the 8-bit/i8 contraction tests (<= 19 s).
mkdir -p "$RESULTS"
which ncu > "$RESULTS/which_ncu.txt" 2>&1
timeout 28 python3 bench/wgmma_probe.py --fp8 --out "$RESULTS/probe.json" 2>&1 | tee "$RESULTS/probe.log" | cut -c1-400
timeout 19 python3 -m pytest -v -n 8 -p no:cacheprovider tests/gpu/test_f8_widening.py \
  tests/gpu/test_mma_contraction.py -k "f8_widening or 8bit or i8" > "$RESULTS/tests.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$RESULTS/tests.log" | cut -c1-300 | tail -40
