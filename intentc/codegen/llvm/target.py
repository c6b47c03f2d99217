"""What a target supplies to the shared lowering: the physical mapping of `parallel`, math
functions, atomics and heap temporaries. The host CPU backend implements it in
`intentc.codegen.cpu`; an NVPTX backend maps `parallel` to the grid, math to libdevice and
atomics to scoped instructions, and reuses everything else."""
from __future__ import annotations

from llvmlite import ir

from .pointwise import float_extreme
from .types import is_float, is_signed

INT_RMW = {"exchange": "xchg", "add": "add", "and": "and", "or": "or", "xor": "xor"}


class TargetHooks:
    name = "abstract"
    triple = ""
    data_layout = ""

    # ---- the physical mapping ----------------------------------------------------------------
    def parallel(self, em, op, extents, iteration) -> None:
        """Run iteration(idx) for every coordinate of the domain `extents` (any order)."""
        raise NotImplementedError

    # ---- math ---------------------------------------------------------------------------------
    def math_f64(self, em, name: str, x: ir.Value) -> ir.Value:
        """`name` (exp, log, erfc, i0, ...) of an f64 value within the spec's bounds."""
        raise NotImplementedError

    # ---- memory ---------------------------------------------------------------------------------
    def heap_alloc(self, em, builder, nbytes: ir.Value) -> ir.Value:
        raise NotImplementedError

    def heap_free(self, em, builder, pointer: ir.Value) -> None:
        raise NotImplementedError

    # ---- atomics ---------------------------------------------------------------------------------
    def atomic_rmw(self, em, op, kind: str, pointer, value, dtype: str, order: str) -> ir.Value:
        """One indivisible read-modify-write; returns the old register value."""
        b = em.b
        if not is_float(dtype):
            if kind in INT_RMW:
                operation = INT_RMW[kind]
            else:
                operation = ("max" if kind == "max" else "min") if is_signed(dtype) else (
                    "umax" if kind == "max" else "umin")
            return b.atomic_rmw(operation, pointer, value, order)
        if kind == "add":
            return b.atomic_rmw("fadd", pointer, value, order)
        if kind == "exchange":
            return b.atomic_rmw("xchg", pointer, value, order)
        return self.cas_loop(em, pointer, value, order, lambda old: float_extreme(em, "maximum" if kind == "max"
                                                                                   else "minimum", old, value))

    def cas_loop(self, em, pointer, value, order, update) -> ir.Value:
        """old = *p; do new = update(old) while !cas(p, old, new); return old (bitwise compare)."""
        b = em.b
        int_type = ir.IntType(32 if str(value.type) == "float" else 64)
        int_pointer = b.bitcast(pointer, int_type.as_pointer())
        start = b.load_atomic(int_pointer, "monotonic", int_type.width // 8)
        entry = b.block
        retry, done = em.new_block("cas.retry"), em.new_block("cas.done")
        b.branch(retry)
        b.position_at_end(retry)
        seen = b.phi(int_type)
        seen.add_incoming(start, entry)
        new = b.bitcast(update(b.bitcast(seen, value.type)), int_type)
        failure = {"acq_rel": "acquire", "release": "monotonic"}.get(order, order)
        pair = b.cmpxchg(int_pointer, seen, new, order, failure)
        seen.add_incoming(b.extract_value(pair, 0), b.block)
        b.cbranch(b.extract_value(pair, 1), done, retry)
        b.position_at_end(done)
        return b.bitcast(seen, value.type)
