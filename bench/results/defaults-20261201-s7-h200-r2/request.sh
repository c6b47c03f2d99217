#!/bin/bash
# flip (#14, #16): the paths round 1 verified are now the defaults (sparse-mma, flash-tensor-cores,
# flash-key-groups; the launch paths native, fit_grid, tma_templates). Everything here runs WITHOUT
# any env or options. 1) the sparse, flash, runtime (fitted grids, native launches) and dynamic-path
# GPU tests against the interpreter (-v into a file: a timeout keeps what finished); 2) launch overhead.
mkdir -p "$RESULTS"
unset INTENTC_LAUNCH INTENTC_LAUNCH_OFF
python3 -c "from intentc.runtime import native, launch_paths as p; print('launch paths on:', [x for x in p.PATHS if p.enabled(x)], 'native:', native.unavailable() or 'built')"
timeout 29 python3 -m pytest -v -n 16 -p no:cacheprovider --tb=line \
  tests/gpu/test_structured_contraction.py tests/gpu/test_flash_attention_mma.py tests/gpu/test_flash_attention.py \
  tests/gpu/test_load_cuda.py tests/gpu/test_cuda_runtime.py tests/gpu/test_dynamic_paths.py \
  tests/gpu/test_cta_mapping.py::test_saxpy_every_extent tests/gpu/test_cta_mapping.py::test_softmax_every_row_extent \
  tests/gpu/test_cta_mapping.py::test_row_sum_and_layernorm_every_row_extent \
  tests/gpu/test_cta_mapping.py::test_shared_memory_histogram_counts_exactly > "$RESULTS/tests.log" 2>&1
echo "tests rc=$?"; grep -cE " PASSED" "$RESULTS/tests.log"; grep -E "FAILED|ERROR|passed|failed" "$RESULTS/tests.log" | cut -c1-300 | tail -30
timeout 14 python3 bench/launch.py --repeats 3 --calls 500 --out "$RESULTS/launch.json" 2>&1 | tail -17
