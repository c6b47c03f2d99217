#!/bin/bash
# q4k (#14 Q4_K x Q8_K rows a lane group): correctness first, then the layouts' A/B, then the sample table.
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p "$RESULTS"
echo "== tests $(date -u +%T)"
timeout 16 python3 -m pytest -q -n 4 --tb=short -p no:cacheprovider -k q4k tests/gpu/test_quantized_rows.py \
  tests/gpu/test_cuda_samples.py > "$RESULTS/tests.log" 2>&1
tail -30 "$RESULTS/tests.log"
echo "== A/B $(date -u +%T)"
timeout 15 python3 bench/q4k_ab.py --reps 30 --out "$RESULTS/q4k_ab.json" 2>&1 | tail -c 6000
echo "== samples $(date -u +%T)"
timeout 11 python3 bench/gpu_samples.py --only q4k_q8k_matvec:q4k_q8k_matvec,quantize_q8_k:dequantize_q4_k,quantize_q8_k:quantize_q8_k \
  --time-limit-s 8 --out "$RESULTS/samples.json" 2>&1 | tail -25
echo "== done $(date -u +%T)"
