#!/usr/bin/env bash
source bench/device_env.sh
IDS=tuple_record_stats:row_stats,row_sum:row_sum_i8,atomic_counter:count_above,row_argmax:row_argmax,row_sum:row_sum_f16,welford_generic_reduce:welford_rows,q4k_q8k_matvec:q4k_q8k_matvec
for round in 1 2; do
  echo "== new $round"; INTENTC_CACHE_DIR=/tmp/cache-new timeout 60 python3 bench/gpu_samples.py --only $IDS --out $OUT/new-$round.json --time-limit-s 50 2>&1 | grep -E "^[a-z_0-9]+:" | cut -c1-160
  echo "== old $round"; (cd .wt/old && PYTHONPATH=/tmp/site:$PWD:$PWD/server INTENTC_CACHE_DIR=/tmp/cache-old timeout 60 python3 bench/gpu_samples.py --only $IDS --out $OUT/old-$round.json --time-limit-s 50 2>&1 | grep -E "^[a-z_0-9]+:" | cut -c1-160)
done
