#!/usr/bin/env bash
# ctime (issue #13 compile time). For a later session's GPU round (none ran in session 6):
# 1. run time of Specialization.independent_slots (default off) at 4 and 8 against the
#    default, and of the allocation compares dropped for contiguous views ("before" variant),
#    results checked against torch (bench/slots_ab.py);
# 2. compile time beside Triton on the H200 host, default and with independent_slots = 4;
# 3. GPU correctness of the contiguous fact (accesses check the extents only).
set -u
mkdir -p "$RESULTS"
echo "== slots A/B"
timeout 16 python3 bench/slots_ab.py --reps 40 --only vector_add:vector_add,saxpy:saxpy,activation_enum:bias_act,philox_dropout:dropout,reverse_copy_negative_stride:flip_rows --out "$RESULTS/slots_ab.json" 2>&1 | tail -n 8
PAIRS=vector_add:vector_add,row_softmax:row_softmax,row_sum:row_sum_f16,cumsum:row_cumsum,layernorm:layernorm,philox_dropout:dropout
echo "== compile (default)"
timeout 11 python3 bench/compile.py --reps 2 --no-dynamic --no-samples --pairs $PAIRS --out "$RESULTS/compile.json" 2>&1 | tail -n 9
echo "== compile (independent_slots 4)"
timeout 8 python3 bench/compile.py --reps 2 --no-dynamic --no-samples --independent-slots 4 \
  --pairs vector_add:vector_add,philox_dropout:dropout --out "$RESULTS/compile-k4.json" 2>&1 | tail -n 4
echo "== tests"
timeout 11 python3 -m pytest -q -x -n 4 -p no:cacheprovider tests/gpu/test_contiguous_fact_cuda.py \
  "tests/gpu/test_cta_mapping.py::test_saxpy_every_extent" 2>&1 | tail -n 6
