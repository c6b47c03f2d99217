#!/bin/bash
# fp8 (issue #14, e4m3/e5m2 at >= 0.5x torch._scaled_mm), session 7 round 2. Round 1 showed the
# converters (not the MMA) limit the widening kernel; `loads_first` issues a converter trip's
# shared loads before its stores (ptxas kept them chunk by chunk). First the probe (<= 31 s):
# default e4m3 checked and timed at 4096^3/8192^3, then each loads_first plan checked on every
# shape against the f64 product and timed beside torch._scaled_mm and torch's f16 matmul of the
# widened operands, then ablations; then every 8-bit code through the loads_first plans against
# the interpreter (<= 12 s).
mkdir -p "$RESULTS"
timeout 31 python3 bench/wgmma_probe.py --fp8 --out "$RESULTS/probe.json" 2>&1 | tee "$RESULTS/probe.log" | cut -c1-400
timeout 12 python3 -m pytest -v -n 8 -p no:cacheprovider tests/gpu/test_f8_widening.py -k loads_first \
  > "$RESULTS/tests.log" 2>&1
echo "tests rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$RESULTS/tests.log" | cut -c1-300 | tail -30
