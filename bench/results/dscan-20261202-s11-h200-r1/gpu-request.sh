#!/usr/bin/env bash
# dscan (session 11), round 1: prefix_logsumexp's run time. ab/<name>.ptx: a tree's PTX for the
# sample, compiled on the host (s9 = 7984b4c, main = b9adfdf, <commit> = session 10's commits
# that changed it; unrolled-warps: main with its block scan's warp scans unrolled; onewarp-min4: this
# tree's PTX with .minnctapersm 4 (32 registers, no spills)), timed in one process beside this tree's default (its rolled totals
# scan in the first warp alone), A B ... B A, outputs checked against torch; "dynamic 256
# threads 8 positions": this tree with the dynamic form's CTA of 256 threads, 8 scan positions
# a thread. Then the GPU tests of generic scans.
set -u
R=${RESULTS:-/tmp}
P=prefix_logsumexp_region_scan:prefix_logsumexp
#r1# timeout 26 python3 bench/cta_pipeline_ab.py --budget-s 0.12 --out "$R/r1-fix.json" \
#r1#   --only "$P=default,ptx:ab/s9.ptx,ptx:ab/main.ptx,ptx:ab/unrolled-warps.ptx,dynamic 256 threads 8 positions,ptx:ab/onewarp-min4.ptx" 2>&1 | cut -c1-330
#r1# timeout 15 python3 bench/cta_pipeline_ab.py --budget-s 0.1 --out "$R/r1-bisect.json" \
#r1#   --only "$P=ptx:ab/main.ptx,ptx:ab/1566c6e.ptx,ptx:ab/fe38092.ptx,ptx:ab/652d2e4.ptx,ptx:ab/1eca257.ptx" 2>&1 | cut -c1-330
#r1# timeout 14 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_cta_reductions.py \
#r1#   -k "region_scan_prefix_logsumexp or generic_scan_keeps_source_order" 2>&1 | tail -5

# ---- round 2 (round 1's commands above are kept, commented out) -------------------------------------
# This tree: a generic scan's dynamic form in CTAs of 256 threads, 8 positions a thread,
# .minnctapersm 6, no LSR, the rolled totals scan in the first warp alone, f32 libdevice as PTX
# templates in the CTA mapping. Choices beside it (A B ... B A): session 9's and main's PTX (run
# at 512 x 4), with Loop Strength Reduction, 256 x 8 without the residency ask, libdevice
# inlined; vector add's time to PTX for the ratio. Then the GPU tests of what changed.
summary() {
python3 - "$1" <<'PY'
import collections, json, sys
rows = json.load(open(sys.argv[1]))
by = collections.defaultdict(list)
for r in rows:
    by[(r["id"].split(":")[1], r["choice"])].append(r)
for (kernel, choice), rs in by.items():
    ms = "/".join(str(r.get("intentc", {}).get("ms", r.get("error", "?")[:60])) for r in rs)
    ptx = "/".join(str(r.get("to_ptx_ms")) for r in rs)
    ok = "correct" if all(r.get("correct") for r in rs) else "NOT CORRECT"
    print(f"{kernel} | {choice} | ms {ms} | to_ptx {ptx} | {ok} | same_bits {[r.get('same_bits_as_default') for r in rs]}")
PY
}
P=prefix_logsumexp_region_scan:prefix_logsumexp
timeout 27 python3 bench/cta_pipeline_ab.py --budget-s 0.1 --out "$R/r2-choices.json" \
  --only "vector_add:vector_add=default;$P=default,scans 512 x 4+ptx:ab/s9.ptx,scans 512 x 4+ptx:ab/main.ptx,scans with LSR,scans 256 x 8,libdevice inlined" \
  > "$R/r2-choices.log" 2>&1; echo "bench exit $?"
summary "$R/r2-choices.json"
timeout 14 python3 -m pytest -q -n 8 -p no:cacheprovider tests/gpu/test_cta_reductions.py tests/gpu/test_cuda_samples.py \
  tests/gpu/test_cuda_math.py -k "generic_scan or region_scan or welford or prefix or softmax or gelu or bias_act or exp or log" 2>&1 | tail -4
