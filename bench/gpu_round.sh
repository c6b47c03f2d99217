#!/usr/bin/env bash
# One whole round of GPU work in one call of the lent H200 (a cold start costs over a minute,
# so the round does everything at once): the GPU differential suite, then the benchmarks.
# From the repository root there, with the carried wheels:
#   source bench/device_env.sh && bash bench/gpu_round.sh TAG
# Everything lands in $OUT as <what>-TAG.*; copy it to bench/results/ afterwards.
set -u
tag=${1:?usage: gpu_round.sh TAG}
out=${OUT:?OUT must name the folder to write to}
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader | tee "$out/device-$tag.txt"
python3 -c 'import llvmlite, torch, triton; print("llvmlite", llvmlite.__version__, "torch", torch.__version__, "triton", triton.__version__)' | tee -a "$out/device-$tag.txt"
step() {  # step SECONDS NAME COMMAND...: run with a limit, log to $out/NAME-TAG.log, print its tail
  local limit=$1 name=$2; shift 2
  timeout "$limit" "$@" > "$out/$name-$tag.log" 2>&1
  echo "== $name (exit $?)"; tail -n 25 "$out/$name-$tag.log"
}
# Limits (seconds) can be lowered to fit what is left of the session's device time.
step "${TESTS_S:-200}" gpu-tests python3 -m pytest -q -n "${TEST_WORKERS:-8}" -p no:cacheprovider -rfE tests/gpu
step "${BENCH_S:-300}" gpu-bench python3 bench/gpu.py --out "$out/gpu-$tag.json" --time-limit-s "${SAMPLES_S:-200}"
step "${LAUNCH_S:-60}" launch python3 bench/launch.py --out "$out/launch-$tag.json"
step "${COMPILE_S:-70}" compile-gpu python3 bench/compile.py --reps "${COMPILE_REPS:-3}" --out "$out/compile-gpu-$tag.json"
