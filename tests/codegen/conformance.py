"""The spec rules of issue 15, each a check that runs one program on a named target
(`interp`, `cpu`, `cuda`) and asserts what the spec chapter requires there.

The CPU suite runs every check on `interp` and `cpu` (`test_conformance.py`), the GPU suite
on `cuda` (`tests/gpu/test_cuda_conformance.py`). A check names the rule it holds to.
"""
from __future__ import annotations

import numpy as np
import pytest

from intentc.api import run
from intentc.printer import print_module
from intentc.diagnostics import DiagnosticError
from intentc.interp.values import np_dtype

CHECKS = {}


def check(function):
    CHECKS[function.__name__] = function
    return function


def compiled(target: str, source: str, kernel: str, constexprs: dict | None = None, options=None):
    """The kernel compiled for `cpu` or `cuda` through the pipeline of `options`."""
    specialization = {"constexprs": dict(constexprs or {})}
    if target == "cpu":
        from intentc.runtime.cpu import compile_cpu
        return compile_cpu(source, kernel, specialization, options)
    from intentc.runtime.cuda import compile_cuda
    return compile_cuda(source, kernel, specialization, options)


def run_on(target: str, source: str, kernel: str, inputs: dict, constexprs: dict | None = None,
           options=None, seed: int = 0) -> dict:
    """Outputs of one launch on `target` (compiled targets through the default pipeline)."""
    if target == "interp":
        return run(source, kernel, inputs, constexprs, seed=seed)
    return compiled(target, source, kernel, constexprs, options)(inputs, constexprs)


def reported(target: str, code: str, source: str, kernel: str, inputs: dict, static: str | None = None,
             **kwargs) -> str:
    """The message of the illegal-input report `code` that one launch must give; every target
    verifies first (`intentc.run` too), so a provable violation may give the verifier's `static` code."""
    with pytest.raises(DiagnosticError) as info:
        run_on(target, source, kernel, inputs, **kwargs)
    codes = [d.code for d in info.value.diagnostics]
    expected = {code} if static is None else {code, static}
    assert expected & set(codes), (code, str(info.value))
    return str(info.value)


def not_finite(value) -> bool:
    return bool(np.all(~np.isfinite(np.asarray(value).astype(np.float64))))


# ---- item 1: the accumulator dtype is the accumulation dtype (§3, §5.3, §6) ---------------------
DOT = """kernel @k(%a: view<{dt}, [%K], in>, %b: view<{dt}, [%K], in>, %y: view<{acc}, [1], out>) {{
  %i = iota : tensor<index, [%K]>
  %u = read %a index(%i) : tensor<{dt}, [%K]>
  %v = read %b index(%i) : tensor<{dt}, [%K]>
  %d = dot %u, %v {{acc = {acc}}} : {acc}
  %z = constant {{value = 0}} : index
  write %y, %d index(%z)
}}"""


@check
def contraction_overflows_in_its_accumulator(target):
    """Products of ±1e40 overflow an f32 accumulator (and ±90000 an f16 one): the sum is
    ±inf or NaN (FMA may keep inf), never the finite 0 a wider accumulation gives."""
    for dt, big in (("f32", 1e20), ("f16", 300.0), ("bf16", 1e20)):
        dtype = np_dtype(dt)
        a = np.array([big, big, 1.0], dtype=dtype)
        b = np.array([big, -big, 1.0], dtype=dtype)
        out = run_on(target, DOT.format(dt=dt, acc=dt), "k", {"a": a, "b": b})["y"]
        assert not_finite(out), (dt, out)


@check
def contraction_keeps_ordinary_sums_exact(target):
    """Sums the accumulator represents exactly come out exactly (a control for the above)."""
    a = np.array([3.0, -2.0, 0.5, 8.0], dtype=np.float32)
    b = np.array([2.0, 4.0, 4.0, 0.25], dtype=np.float32)
    assert run_on(target, DOT.format(dt="f32", acc="f32"), "k", {"a": a, "b": b})["y"][0] == 2.0


# ---- item 2: fused multiply-reduce (§5.4) keeps the legal special values ----------------------
MULTIPLY_REDUCE = """kernel @k(%a: view<f32, [%K], in>, %b: view<f32, [%K], in>, %y: view<f32, [1], out>) {
  %i = iota : tensor<index, [%K]>
  %u = read %a index(%i) : tensor<f32, [%K]>
  %v = read %b index(%i) : tensor<f32, [%K]>
  %p = mul %u, %v : tensor<f32, [%K]>
  %s = reduce %p {axes = [0], kind = sum} : f32
  %z = constant {value = 0} : index
  write %y, %s index(%z)
}"""


@check
def multiply_reduce_overflow_is_not_zero(target):
    """§5.4: the fused form may give inf or NaN where the products overflow, never +0.0."""
    a = np.array([1e20, 1e20], dtype=np.float32)
    b = np.array([1e20, -1e20], dtype=np.float32)
    out = run_on(target, MULTIPLY_REDUCE, "k", {"a": a, "b": b})["y"]
    assert not_finite(out), out


# ---- item 6: sparse contract never multiplies an unselected position (§7) ----------------------
SPARSE = """kernel @k(%a: view<f32, [%M, %KH], in>, %meta: view<u8, [%M, %KH], in>, %b: view<f32, [%K, %N], in>, %c: view<f32, [%M, %N], out>) {
  %r = iota {axis = 0} : tensor<index, [%M, 1]>
  %h = iota : tensor<index, [%KH]>
  %kk = iota {axis = 0} : tensor<index, [%K, 1]>
  %n = iota : tensor<index, [%N]>
  %av = read %a index(%r, %h) : tensor<f32, [%M, %KH]>
  %mv = read %meta index(%r, %h) : tensor<u8, [%M, %KH]>
  %bv = read %b index(%kk, %n) : tensor<f32, [%K, %N]>
  %cv = sparse_contract %av, %mv, %bv {acc = f32, pattern = one_of_two} : tensor<f32, [%M, %N]>
  write %c, %cv index(%r, %n)
}"""


@check
def sparse_contract_ignores_unselected_positions(target):
    """inf and NaN in the rows of the dense operand that no metadata selects change nothing."""
    rng = np.random.default_rng(3)
    m, k, n = 3, 8, 5
    a = rng.standard_normal((m, k // 2)).astype(np.float32)
    meta = rng.integers(0, 2, (m, k // 2)).astype(np.uint8)
    b = rng.standard_normal((k, n)).astype(np.float32)
    selected = set((2 * np.arange(k // 2)[None, :] + meta).ravel().tolist())
    poisoned = b.copy()
    unselected = [row for row in range(k) if row not in selected]
    assert unselected, "the metadata must leave a row unselected"
    poisoned[unselected[0]] = np.inf
    poisoned[unselected[-1]] = np.nan
    clean = run_on(target, SPARSE, "k", {"a": a, "meta": meta, "b": b})["c"]
    dirty = run_on(target, SPARSE, "k", {"a": a, "meta": meta, "b": poisoned})["c"]
    assert np.isfinite(dirty).all() and np.array_equal(clean, dirty)


# ---- item 13: signed_min % -1 is legal and 0 (§4 lists only the quotient) ----------------------
MOD = """kernel @k(%a: view<{dt}, [%N], in>, %b: view<{dt}, [%N], in>, %y: view<{dt}, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %u = read %a index(%i) : tensor<{dt}, [%N]>
  %v = read %b index(%i) : tensor<{dt}, [%N]>
  %r = mod %u, %v : tensor<{dt}, [%N]>
  write %y, %r index(%i)
}}"""


@check
def signed_min_mod_minus_one_is_zero(target):
    for dt in ("i8", "i16", "i32", "i64"):
        dtype = np_dtype(dt)
        low = np.iinfo(dtype).min
        a = np.array([low, low, 7, -7], dtype=dtype)
        b = np.array([-1, 3, -1, -1], dtype=dtype)
        out = run_on(target, MOD.format(dt=dt), "k", {"a": a, "b": b})["y"]
        assert out.tolist() == [0, int(np.remainder(int(low), 3)), 0, 0], (dt, out)


# ---- item 7: an empty arg_reduce is an illegal input (docs/kir.md §6) ---------------------------
ARG_REDUCE = """kernel @k(%x: view<f32, [%R, %N], in>, %v: view<f32, [%R], out>, %p: view<index, [%R], out>) {
  %r = iota {axis = 0} : tensor<index, [%R, %N]>
  %c = iota {axis = 1} : tensor<index, [%R, %N]>
  %t = read %x index(%r, %c) : tensor<f32, [%R, %N]>
  %m, %at = arg_reduce %t {axis = 1, kind = max} : tensor<f32, [%R]>, tensor<index, [%R]>
  %o = iota : tensor<index, [%R]>
  write %v, %m index(%o)
  write %p, %at index(%o)
}"""


@check
def empty_arg_reduce_is_reported(target):
    reported(target, "R0405", ARG_REDUCE, "k", {"x": np.zeros((3, 0), np.float32)})
    out = run_on(target, ARG_REDUCE, "k", {"x": np.array([[1.0, 5.0, 5.0]], np.float32)})
    assert out["v"].tolist() == [5.0] and out["p"].tolist() == [1]


# ---- item 9: generic_scan never folds the identity into a prefix (§6) --------------------------
GENERIC_SCAN = """kernel @k(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<f32, [%N]>
  %id = constant {{value = {identity}}} : f32
  %s = generic_scan %v init(%id) {{axis = 0, exclusive = {exclusive}, reverse = {reverse}}} : tensor<f32, [%N]> {{
  ^combine(%a: f32, %b: f32):
    %c = add %a, %b : f32
    yield %c
  }}
  write %y, %s index(%i)
}}"""


@check
def generic_scan_prefixes_hold_their_members_only(target):
    """With -0.0 as the identity of add, a prefix of one -0.0 stays -0.0 only if the
    identity is not folded in; prefix k holds exactly members 0..k (or k+1.. reversed)."""
    x = np.array([-0.0, 1.0, 2.0, 4.0], np.float32)
    for exclusive, reverse, expected in ((False, False, [-0.0, 1.0, 3.0, 7.0]),
                                         (True, False, [-0.0, -0.0, 1.0, 3.0]),
                                         (False, True, [7.0, 7.0, 6.0, 4.0])):
        source = GENERIC_SCAN.format(identity="-0.0", exclusive=str(exclusive).lower(), reverse=str(reverse).lower())
        out = run_on(target, source, "k", {"x": x})["y"]
        assert out.tolist() == expected and np.signbit(out[0]) == np.signbit(expected[0]), (exclusive, reverse, out)
    source = GENERIC_SCAN.format(identity="0.0", exclusive="false", reverse="false")
    out = run_on(target, source, "k", {"x": x})["y"]
    assert np.signbit(out[0]), "the first prefix is -0.0 alone, not 0.0 + -0.0"
    assert run_on(target, source, "k", {"x": np.zeros(0, np.float32)})["y"].shape == (0,)


# ---- item 3: f8e4m3fn arithmetic overflow is an illegal input (§5.2, as the cast) ----------------
F8_ADD = """kernel @k(%a: view<f8e4m3fn, [%N], in>, %b: view<f8e4m3fn, [%N], in>, %y: view<f8e4m3fn, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %u = read %a index(%i) : tensor<f8e4m3fn, [%N]>
  %v = read %b index(%i) : tensor<f8e4m3fn, [%N]>
  %r = {op} %u, %v : tensor<f8e4m3fn, [%N]>
  write %y, %r index(%i)
}}"""


@check
def f8e4m3fn_arithmetic_overflow_is_reported(target):
    f8 = np_dtype("f8e4m3fn")
    a, b = np.array([1.0, 448.0], f8), np.array([2.0, 32.0], f8)
    reported(target, "R0205", F8_ADD.format(op="add"), "k", {"a": a, "b": b})
    reported(target, "R0205", F8_ADD.format(op="div"), "k", {"a": a, "b": np.array([1.0, 0.0], f8)})
    # 432 is a tie that rounds to even, onto 448: legal; NaN operands stay NaN
    ok = run_on(target, F8_ADD.format(op="add"), "k",
                {"a": np.array([416.0, np.nan], f8), "b": np.array([16.0, 1.0], f8)})["y"].astype(np.float64)
    assert ok[0] == 448.0 and np.isnan(ok[1])


# ---- item 5: intentc.View objects on one base alias (§8: base allocation identity) ------------
ALIASED = """kernel @k(%a: view<f32, [4], in>, %b: view<f32, [4], inout>, %c: view<f32, [4], out>) {
  %i = iota : tensor<index, [4]>
  %v = read %b index(%i) : tensor<f32, [4]>
  %w = add %v, %v : tensor<f32, [4]>
  write %b, %w index(%i)
  %r = read %a index(%i) : tensor<f32, [4]>
  write %c, %r index(%i)
}"""


@check
def views_on_one_base_alias(target):
    """A write through one View is seen through another View of the same base array."""
    from intentc.api import View
    base = np.arange(8, dtype=np.float32)
    a = View(base, 2, (1,), (4,))          # elements 2..5
    b = View(base, 0, (1,), (4,))          # elements 0..3, doubled before %a is read
    out = run_on(target, ALIASED, "k", {"a": a, "b": b})
    assert out["c"].tolist() == [4.0, 6.0, 4.0, 5.0], out["c"]
    assert out["b"].tolist() == [0.0, 2.0, 4.0, 6.0]
    assert base.tolist() == list(range(8)), "the caller's array is not written"


# ---- item 11: overlapping noalias views are an illegal launch (§8, Launch.check_noalias) --------
NOALIAS = """kernel @k(%x: view<f32, [4], in>, %y: view<f32, [4], inout, noalias>) {
  %i = iota : tensor<index, [4]>
  %v = read %x index(%i) : tensor<f32, [4]>
  %u = read %y index(%i) : tensor<f32, [4]>
  %w = add %v, %u : tensor<f32, [4]>
  write %y, %w index(%i)
}"""


@check
def overlapping_noalias_views_are_reported(target):
    base = np.arange(8, dtype=np.float32)
    message = reported(target, "R0109", NOALIAS, "k", {"x": base[0:4], "y": base[3:7]})
    assert "%y is noalias" in message
    # disjoint parts of one allocation: legal
    out = run_on(target, NOALIAS, "k", {"x": base[0:4], "y": base[4:8]})
    assert out["y"].tolist() == [4.0, 6.0, 8.0, 10.0]


# ---- item 4: 16-bit NaN payloads survive bitcast and copies (§5.2: bits kept, a copy converts nothing)
NAN_BITS = """kernel @k(%x: view<{ft}, [%N], in>, %w: view<{it}, [%N], in>, %bits: view<{it}, [%N], out>, %copy: view<{ft}, [%N], out>, %back: view<{ft}, [%N], out>) {{
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<{ft}, [%N]>
  %b = bitcast %v : tensor<{it}, [%N]>
  write %bits, %b index(%i)
  write %copy, %v index(%i)
  %u = read %w index(%i) : tensor<{it}, [%N]>
  %f = bitcast %u : tensor<{ft}, [%N]>
  write %back, %f index(%i)
}}"""
NAN_PATTERNS = {"f16": [0x7C01, 0x7E55, 0xFD00, 0x7FFF, 0xFE00, 0x3C00, 0x7C00],
                "bf16": [0x7F81, 0xFFC3, 0x7FBF, 0xFF80 | 0x11, 0x3F80, 0xFF80]}


@check
def sixteen_bit_nan_payloads_survive(target):
    for ft, patterns in NAN_PATTERNS.items():
        words = np.array(patterns, dtype=np.uint16)
        x = words.view(np_dtype(ft))
        out = run_on(target, NAN_BITS.format(ft=ft, it="u16"), "k", {"x": x, "w": words})
        assert out["bits"].tolist() == patterns, (ft, [hex(v) for v in out["bits"]])
        assert out["copy"].view(np.uint16).tolist() == patterns, (ft, [hex(v) for v in out["copy"].view(np.uint16)])
        assert out["back"].view(np.uint16).tolist() == patterns, (ft, [hex(v) for v in out["back"].view(np.uint16)])


# ---- item 8: region_scan with an i64 state compiles and runs (§6) ------------------------------
REGION_SCAN_I64 = """kernel @k(%x: view<i64, [%N], in>, %total: view<i64, [1], out>, %y: view<i64, [%N], out>) {
  %i = iota : tensor<index, [%N]>
  %v = read %x index(%i) : tensor<i64, [%N]>
  %z = constant {value = 0} : i64
  %final, %out = region_scan %v init(%z) {axis = 0} : i64, tensor<i64, [%N]> {
  ^summarize(%len: index, %pos: tensor<index, [%len]>, %slice: tensor<i64, [%len]>):
    %t = reduce %slice {axes = [0], kind = sum} : i64
    yield %t
  } {
  ^combine(%a: i64, %b: i64):
    %c = add %a, %b : i64
    yield %c
  } {
  ^emit(%len: index, %pos: tensor<index, [%len]>, %slice: tensor<i64, [%len]>, %state: i64):
    %c = scan %slice {axis = 0, kind = sum} : tensor<i64, [%len]>
    %sb = broadcast %state : tensor<i64, [%len]>
    %o = add %c, %sb : tensor<i64, [%len]>
    yield %o
  }
  %zero = constant {value = 0} : index
  write %total, %final index(%zero)
  write %y, %out index(%i)
}"""


@check
def region_scan_with_an_i64_state(target):
    x = np.array([5, -2, 2 ** 40, 7, -(2 ** 62), 1], dtype=np.int64)
    out = run_on(target, REGION_SCAN_I64, "k", {"x": x})
    assert out["y"].tolist() == np.cumsum(x).tolist() and out["total"].tolist() == [int(x.sum())]
    assert run_on(target, REGION_SCAN_I64, "k", {"x": np.zeros(0, np.int64)})["total"].tolist() == [0]


# ---- item 12: run-time collisions the verifier cannot prove (§8, §10, §11) ---------------------
PLAIN_LOAD_ATOMIC_STORE = """kernel @k(%flag: view<i32, [1], inout>, %y: view<i32, [%N], out>) {
  %z = constant {value = 0} : index
  parallel %N {
  ^b(%i: index):
    %zero = constant {value = 0} : index
    %v = read %flag index(%zero) : i32
    %t = cast %i : i32
    atomic_store %flag, %t index(%zero) {order = relaxed}
    write %y, %v index(%i)
  }
}"""

STRIDE_ZERO_OUT = """kernel @k(%x: view<f32, [%N], in>, %y: view<f32, [%N], out>) {
  parallel %N {
  ^b(%i: index):
    %v = read %x index(%i) : f32
    write %y, %v index(%i)
  }
}"""


@check
def plain_load_and_atomic_store_of_one_element_race(target):
    """§11: the plain read of %flag and the atomic store to it in other iterations conflict."""
    reported(target, "R0307", PLAIN_LOAD_ATOMIC_STORE, "k", {"flag": np.zeros(1, np.int32), "y": np.zeros(4, np.int32)},
             static="E733")
    if target == "interp":      # the interpreter itself, unverified: one iteration does not race itself
        from intentc.interp.launch import run_kernel
        from intentc.parse import parse
        out = run_kernel(parse(PLAIN_LOAD_ATOMIC_STORE), "k", {"flag": np.array([7], np.int32),
                                                               "y": np.zeros(1, np.int32)})
        assert out["y"].tolist() == [7] and out["flag"].tolist() == [0]


@check
def stride_zero_out_view_collision_is_reported(target):
    """Every iteration writes the one element a stride-0 `out` view has (§8: a writable view
    repeats addresses only where the write semantics allow it; plain writes do not)."""
    from intentc.api import View
    x = np.arange(4, dtype=np.float32)
    y = View(np.zeros(1, np.float32), 0, (0,), (4,))
    reported(target, "R0303", STRIDE_ZERO_OUT, "k", {"x": x, "y": y})
    # a stride-0 view that is only read is a legal broadcast
    out = run_on(target, STRIDE_ZERO_OUT, "k", {"x": View(np.full(1, 3.0, np.float32), 0, (0,), (4,))})
    assert out["y"].tolist() == [3.0] * 4


# ---- §5.6: numerics = relaxed_normalization, end to end ----------------------------------------
NORMALIZED = """kernel @k(%s: view<f32, [%H, %N], in>, %v: view<f32, [%N, %D], in>, %o: view<f32, [%H, %D], out>) {
  %cols = iota : tensor<index, [%N]>
  %dcols = iota : tensor<index, [%D]>
  %vrows = iota {axis = 0} : tensor<index, [%N, 1]>
  %vals = read %v index(%vrows, %dcols) : tensor<f32, [%N, %D]>
  parallel %H {
  ^row(%h: index):
    %scores = read %s index(%h, %cols) : tensor<f32, [%N]>
    %m = reduce %scores {axes = [0], kind = max} : f32
    %mb = broadcast %m : tensor<f32, [%N]>
    %d = sub %scores, %mb : tensor<f32, [%N]>
    %w = exp %d : tensor<f32, [%N]>
    %l = reduce %w {axes = [0], kind = sum} : f32
    %acc = vecmat %w, %vals {acc = f32} : tensor<f32, [%D]>
    %lb = broadcast %l : tensor<f32, [%D]>
    %out = div %acc, %lb : tensor<f32, [%D]>
    write %o, %out index(%h, %dcols)
  }
}"""
# docs/passes.md, "Numerics of the rewrites": 16 roundings of the output dtype relative to
# max(1, max |output|), on inputs meeting §5.6's precondition (finite scores and values).
RELAXED_ROUNDINGS = 16


@check
def relaxed_normalization_stays_within_the_documented_bound(target):
    """The online rewrite really happens, and the relaxed kernel stays within the bound of the
    source form (the interpreter on the unrewritten kernel), empty rows included."""
    from intentc import parse
    from intentc.options import CompileOptions
    from intentc.passes import optimize
    relaxed = CompileOptions(numerics="relaxed_normalization")
    rewritten = optimize(parse(NORMALIZED), relaxed)
    assert "online-reduction" in rewritten.changed and "region_fold" in print_module(rewritten.module)
    if target == "interp":
        launch = lambda inputs: run(rewritten.module, "k", inputs)
    else:
        kernel = compiled(target, NORMALIZED, "k", options=relaxed)
        # the compile ran the pipeline of these options, which rewrites this kernel (above)
        assert "pass:online-reduction" in kernel.timings
        launch = kernel
    rng = np.random.default_rng(56)
    for n in (1, 7, 300, 0):
        scores = (rng.standard_normal((5, n)) * 20).astype(np.float32)   # wide spread: rescaling matters
        values = rng.standard_normal((n, 16)).astype(np.float32)
        inputs = {"s": scores, "v": values}
        source_form = run(NORMALIZED, "k", inputs)["o"].astype(np.float64)
        got = launch(inputs)["o"].astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(source_form)), n       # empty rows: 0/0 in both
        finite = ~np.isnan(source_form)
        scale = max(1.0, float(np.abs(source_form[finite]).max(initial=0.0)))
        error = np.abs(got[finite] - source_form[finite]).max(initial=0.0)
        assert error <= RELAXED_ROUNDINGS * np.finfo(np.float32).eps * scale, (n, error)


# ---- a scan's prefixes hold only their members: signed zeros (§6, as item 9 for generic_scan) --
ZERO_SCAN = """kernel @k(%x: view<f32, [%M, {n}], in>, %y: view<f32, [%M, {n}], out>) {{
  parallel %M {{
  ^row(%i: index):
    %cols = iota : tensor<index, [{n}]>
    %row = read %x index(%i, %cols) : tensor<f32, [{n}]>
    %s = scan %row {{axis = 0, {attrs}kind = sum}} : tensor<f32, [{n}]>
    write %y, %s index(%i, %cols)
  }}
}}"""
ZERO_SCAN_FORMS = {"inclusive": "", "exclusive": "exclusive = true, ", "reverse": "reverse = true, "}


@check
def scans_keep_the_sign_of_zero_prefixes(target):
    """cumsum of -0.0s is -0.0 (the +0.0 identity is no member of a prefix); an exclusive
    scan starts with the identity +0.0. Static row lengths give the GPU's register form
    (block scans; odd lengths its padding), reverse scans the per-thread loop."""
    for n in (1, 5, 300, 1025):
        x = np.full((3, n), -0.0, dtype=np.float32)
        x[1, n // 2:] = 1.5                          # a later non-zero member
        x[2, ::2] = 0.0                              # mixed signs: +0.0 from the first +0.0 on
        for form, attrs in ZERO_SCAN_FORMS.items():
            source = ZERO_SCAN.format(n=n, attrs=attrs)
            got = run_on(target, source, "k", {"x": x})["y"].view(np.uint32)
            expected = run_on("interp", source, "k", {"x": x})["y"]
            assert np.array_equal(got, expected.view(np.uint32)), (form, n, np.argwhere(got != expected.view(np.uint32))[:4].tolist())
            if form == "inclusive":
                assert np.signbit(expected[0]).all()
            if form == "exclusive":
                assert not np.signbit(expected[0, 0]) and (n == 1 or np.signbit(expected[0, 1:]).all())
