#!/bin/bash
# launch (#16), written in session 6 (no GPU that session): verifies the launch paths that
# await the GPU (INTENTC_LAUNCH=native,fit_grid,tma_templates, docs/runtime.md "Paths awaiting
# the GPU") and times every call pattern beside Triton in the same run. Most important first.
mkdir -p "$RESULTS"
export INTENTC_LAUNCH=all
# 1. correctness on the real driver: the runtime's GPU tests and CTA-mapped kernels on fitted grids
timeout 14 python3 -m pytest -q -x -n 8 -p no:cacheprovider tests/gpu/test_load_cuda.py tests/gpu/test_cta_mapping.py -k "seen or memory or threads or stream or torch or every_extent or every_row_extent" 2>&1 | tail -8
python3 -c "from intentc.runtime import native; print('native fast path:', native.fast_call(), native.unavailable())"
# 2. µs per launch, every pattern, intentc (native; and its Python path) vs Triton, same run; full vs fitted grid
timeout 24 python3 bench/launch.py --repeats 5 --calls 1000 --out "$RESULTS/launch.json" 2>&1 | tail -24
