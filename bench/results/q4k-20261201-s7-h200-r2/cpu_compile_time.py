# CPU ms to PTX of q4k_q8k_matvec (process_time, best of N), as bench/compile.py specializes it
import sys, time
from intentc.driver.compile import compile_kernel
text = open("ir_samples/q4k_q8k_matvec.kir").read()
spec = {"extents": {"NB": 16}, "unit_stride": ("w", "x", "y"), "contiguous": ("w", "x", "y")}
best = 1e9
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    t = time.process_time()
    compile_kernel(text, "q4k_q8k_matvec", "ptx", "sm_90", specialization=spec)
    best = min(best, time.process_time() - t)
print(f"{best*1e3:.0f} ms")
