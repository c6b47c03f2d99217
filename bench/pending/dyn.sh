#!/bin/bash
# dyn (#13 dynamic extents from every entry point; written 2026-12-01 s6, which had no GPU):
# 1. a dynamic row through the service (in-process stand-in), intentc.load, intentc run,
#    intentc compile --variant-for's files, and compile_cuda (DynamicRowKernel: compiled launch
#    by launch) at bucket boundaries vs the interpreter;
# 2. the lazy buckets and the eager module (--eager-variants) beside specialized;
# 3. compile times beside Triton (softmax's dynamic rows, printed as they finish: "first launch"
#    and "intentc compile").
mkdir -p "$RESULTS"
timeout 18 python3 -m pytest -q -n 8 -p no:cacheprovider --tb=line tests/gpu/test_dynamic_paths.py tests/gpu/test_dynamic_variants.py -k "not eager" 2>&1 | tail -15
timeout 12 python3 bench/gpu_dynamic.py --eager --budget-s 0.05 --only row_softmax:row_softmax --out "$RESULTS/dynamic.json" 2>&1 | cut -c1-700 | tail -6
timeout 15 python3 bench/compile.py --no-samples --pairs row_softmax:row_softmax --reps 2 --out "$RESULTS/compile.json" 2>&1 | tail -6
