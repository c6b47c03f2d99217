set -u
W=$OUT
echo "== f32 tests $(date -u +%T)"
timeout 70 python3 -m pytest -q -n 14 -p no:cacheprovider -rfE tests/gpu/test_mma_contraction.py tests/gpu/test_cuda_samples.py -k "f32 or matmul_tiled or tiled_matmul" > $W/f32-tests.log 2>&1; echo "rc $?"; tail -4 $W/f32-tests.log
echo "== sgemm $(date -u +%T)"
timeout 60 python3 bench/gpu_sgemm.py --rounds 5 --only "vector bk=32 (default),scalar,vector bk=16" --out $W/sgemm.json > $W/sgemm.log 2>&1; echo "rc $?"; tail -6 $W/sgemm.log | cut -c1-400
for v in none fit_grid tma_templates native; do
  echo "== 4000x4100x3900 f16 INTENTC_LAUNCH_OFF=$v $(date -u +%T)"
  INTENTC_LAUNCH_OFF=$([ $v = none ] && echo "" || echo $v) timeout 25 python3 -c "
import sys, json; sys.path.insert(0, 'bench'); sys.path.insert(0, 'tests/gpu'); sys.path.insert(0, 'tests/codegen')
from gpu_matmul import row
r = row('f16', 4000, 4100, 3900); print('RESULT', json.dumps({k: r.get(k) for k in ('intentc', 'torch', 'intentc/torch', 'launch')})[:600])
" 2>&1 | grep RESULT | cut -c1-700
done
