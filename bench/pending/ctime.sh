#!/usr/bin/env bash
# ctime r2 (issue #13 compile time). Default code changed on branch ctime:
#  (a) iterations of cheap independent coordinates take 4 register slots a thread (vector_add, saxpy,
#      flip_rows, pcg_hash, dequantize_e4m3_rowwise);
#  (b) masked accesses whose mask is `lt index, extent` check no bound along that axis (vector_add,
#      saxpy, gelu_fwd, histogram256, rank1_update (all its tile accesses), segment_sum, interleave,
#      count_above, atomic_max_f32).
# 1. GPU correctness against the interpreter; 2. run time default vs round 1's compiler (bench/slots_ab.py);
# 3. compile time beside Triton on the host, plus the changed samples.
set -u
mkdir -p "$RESULTS"
echo "== GPU correctness"
timeout 13 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_cuda_samples.py tests/gpu/test_dynamic_variants.py \
  tests/gpu/test_contiguous_fact_cuda.py tests/gpu/test_cta_mapping.py \
  -k "vector_add or saxpy or flip or pcg_hash or dequantize_e4m3 or gelu_fwd or histogram or rank1_update or segment_sum or interleave or count_above or atomic_max_f32 or reported" 2>&1 | tail -n 12
echo "== run time: default vs round 1's compiler"
timeout 14 python3 bench/slots_ab.py --reps 40 --variants default,r1 \
  --only vector_add:vector_add,saxpy:saxpy,reverse_copy_negative_stride:flip_rows,integer_hash_u32:pcg_hash,f8_rowwise_quant:dequantize_e4m3_rowwise,histogram_masked:histogram256,gelu_helper_call:gelu_fwd,rank1_update_outer:rank1_update,segment_sum_scatter_reduce:segment_sum \
  --out "$RESULTS/slots_ab.json" 2>&1 | tail -n 10
echo "== compile beside Triton (warm, reps 2)"
timeout 12 python3 bench/compile.py --reps 2 --no-dynamic --no-samples \
  --pairs vector_add:vector_add,row_softmax:row_softmax,row_sum:row_sum_f16,cumsum:row_cumsum,layernorm:layernorm,philox_dropout:dropout \
  --out "$RESULTS/compile.json" 2>&1 | tail -n 9
echo "== compile of the changed samples and the slowest of ctime's area (no pairs: --pairs none)"
timeout 6 python3 bench/compile.py --reps 2 --pairs none \
  --only vector_add:vector_add,rank1_update_outer:rank1_update,segment_sum_scatter_reduce:segment_sum,nan_max_vs_maximum_num:nan_max,special_math:special_math,saxpy:saxpy,reverse_copy_negative_stride:flip_rows,integer_hash_u32:pcg_hash,f8_rowwise_quant:dequantize_e4m3_rowwise,histogram_masked:histogram256,gelu_helper_call:gelu_fwd,row_argmax:row_argmax,f8_rowwise_quant:quantize_e4m3_rowwise \
  --out "$RESULTS/compile-samples.json" 2>&1 | grep '^{' | cut -c1-160
