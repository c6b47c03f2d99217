#!/bin/bash
# cglobal: H200 compile times of every sample to PTX (bench/compile.py --reps 3 --no-dynamic), one process
# per configuration, all five AT ONCE on separate cores so that they share the host's moment:
#   main  = main's tree at this branch's base (gpu_main/, fa092c8)
#   mine, mine2 = this branch (twice: the spread between identical configurations)
#   dcmu  = this branch + LLVM -dom-conditions-max-uses=0 (PTX of all 318 sample artifacts identical on the dev VM)
#   combo = dcmu + -earlycse-mssa-optimization-cap=0 -memssa-check-limit=0 (PTX identical too)
mkdir -p "$RESULTS"
ARGS="--reps 3 --no-dynamic --pairs none"
timeout 45 python3 gpu_main/bench/compile.py $ARGS --out "$RESULTS/main.json" > "$RESULTS/main.log" 2>&1 &
timeout 45 python3 bench/compile.py $ARGS --out "$RESULTS/mine.json" > "$RESULTS/mine.log" 2>&1 &
timeout 45 python3 bench/compile.py $ARGS --out "$RESULTS/mine2.json" > "$RESULTS/mine2.log" 2>&1 &
timeout 45 python3 gpu_exp/compile_opts.py "-dom-conditions-max-uses=0" -- $ARGS --out "$RESULTS/dcmu.json" > "$RESULTS/dcmu.log" 2>&1 &
timeout 45 python3 gpu_exp/compile_opts.py "-dom-conditions-max-uses=0;-earlycse-mssa-optimization-cap=0;-memssa-check-limit=0" -- $ARGS --out "$RESULTS/combo.json" > "$RESULTS/combo.log" 2>&1 &
wait
nproc; uptime
python3 - "$RESULTS" <<'PY'
import json, sys, statistics
from pathlib import Path
rows = {}
for who in ("main", "mine", "mine2", "dcmu", "combo"):
    p = Path(sys.argv[1]) / f"{who}.log"
    if p.exists():
        rows[who] = {r["id"]: r for r in map(json.loads, (l for l in p.read_text().splitlines() if l.startswith('{"id"')))
                     if "to_ptx_s" in r}
stages = ("parse", "verify", "passes", "lower-llvm", "llvm-opt", "ptx-emit")
for who, table in rows.items():
    if "vector_add:vector_add" not in table:
        print(who, "incomplete", len(table)); continue
    va = table["vector_add:vector_add"]["to_ptx_s"]
    t = [r["to_ptx_s"] for r in table.values()]
    st = {s: round(sum(r["stages_ms"][s] for r in table.values())) for s in stages}
    paired = [table[i]["to_ptx_s"] / rows["main"][i]["to_ptx_s"] for i in table if i in rows.get("main", {})]
    print(f"{who:6s} n={len(t)} sum_ms={sum(t) * 1e3:.0f} median_ms={statistics.median(t) * 1e3:.1f} va_ms={va * 1e3:.1f} "
          f"median_ratio_to_va={statistics.median(x / va for x in t):.2f} max_ratio={max(t) / va:.2f} "
          f"median_paired_vs_main={statistics.median(paired) if paired else 0:.3f} stage_sums_ms={st}")
PY
