"""Inline PTX for the warp-specialized wgmma kernel (`wgmma_tma.py`): the tensor memory
accelerator's bulk tensor copies (`cp.async.bulk.tensor`), the shared-memory mbarriers
they complete on, and `setmaxnreg`. Shared-memory operands are 32-bit addresses in the
shared window; a tensor map is the 64-bit generic address of its 128 bytes in global
memory (the runtime writes them after the kernel's argument words)."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import I32
from .ptx_asm import VOID, asm


def mbarrier_init(b: ir.IRBuilder, barrier: ir.Value, count: int) -> None:
    asm(b, f"mbarrier.init.shared::cta.b64 [$0], {count};", "r,~{memory}", VOID, [barrier])


def fence_barrier_init(b: ir.IRBuilder) -> None:
    """Make initialized mbarriers visible to the async proxy (the copy engine completes on them)."""
    asm(b, "fence.mbarrier_init.release.cluster;", "~{memory}", VOID, [])


def mbarrier_expect_bytes(b: ir.IRBuilder, barrier: ir.Value, nbytes: int) -> None:
    """Arrive once on `barrier` and expect `nbytes` more from the copy engine in this phase."""
    asm(b, f"mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], {nbytes};", "r,~{memory}", VOID, [barrier])


def mbarrier_arrive(b: ir.IRBuilder, barrier: ir.Value) -> None:
    asm(b, "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}", VOID, [barrier])


def warp_sync(b: ir.IRBuilder) -> None:
    """`bar.warp.sync`: the warp's threads meet, their memory accesses before it ordered
    before every access after it."""
    asm(b, "bar.warp.sync -1;", "~{memory}", VOID, [])


def mbarrier_wait(em, barrier: ir.Value, parity: ir.Value) -> None:
    """Spin until the phase of `barrier` with parity `parity` (i32, 0 or 1) has completed
    (`try_wait` suspends the thread a while each try)."""
    b = em.b
    head, after = em.new_block("mbarrier.wait"), em.new_block("mbarrier.done")
    b.branch(head)
    b.position_at_end(head)
    done = asm(b, "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; selp.u32 $0, 1, 0, p; }",
               "=r,r,r,~{memory}", I32, [barrier, parity])
    b.cbranch(b.icmp_unsigned("!=", done, ir.Constant(I32, 0)), after, head)
    b.position_at_end(after)


def tma_load_2d(b: ir.IRBuilder, destination: ir.Value, tensor_map: ir.Value, inner: ir.Value, outer: ir.Value,
                barrier: ir.Value) -> None:
    """The box of `tensor_map` at element coordinates (inner, outer) (i32) into shared memory
    at `destination`, completing its bytes on `barrier`; elements outside the tensor are
    zero-filled (and still counted)."""
    asm(b, "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
        "r,l,r,r,r,~{memory}", VOID, [destination, tensor_map, inner, outer, barrier])


def setmaxnreg(b: ir.IRBuilder, registers: int, increase: bool) -> None:
    """Give this warpgroup `registers` registers a thread (every thread of it executes this)."""
    kind = "inc" if increase else "dec"
    asm(b, f"setmaxnreg.{kind}.sync.aligned.u32 {registers};", "~{memory}", VOID, [])


def load_shared_words(b: ir.IRBuilder, address: ir.Value, count: int) -> list:
    """`count` (2 or 4) 32-bit words from a shared address aligned to their size."""
    registers = ", ".join(f"${i}" for i in range(count))
    result = asm(b, f"ld.shared.v{count}.b32 {{{registers}}}, [${count}];", "=r," * count + "r,~{memory}",
                 ir.LiteralStructType([I32] * count), [address])
    return [b.extract_value(result, i) for i in range(count)]


def store_shared_quad(b: ir.IRBuilder, address: ir.Value, words: list) -> None:
    """Four 32-bit words to a 16-byte aligned shared address."""
    asm(b, "st.shared.v4.b32 [$0], {$1, $2, $3, $4};", "r,r,r,r,r,~{memory}", VOID, [address, *words])


F8_PAIRS = {"f8e4m3fn": "e4m3x2", "f8e5m2": "e5m2x2"}


def f16_pair_of_f8_pair(b: ir.IRBuilder, pair: ir.Value, dtype: str) -> ir.Value:
    """Two 8-bit floats (the low byte first) as two f16 in a b32 (the low half first): exact,
    every e4m3 and e5m2 value (NaN, e5m2's infinities) is an f16."""
    return asm(b, f"cvt.rn.f16x2.{F8_PAIRS[dtype]} $0, $1;", "=r,h", I32, [pair])


def load_shared_word(b: ir.IRBuilder, address: ir.Value) -> ir.Value:
    return asm(b, "ld.shared.b32 $0, [$1];", "=r,r,~{memory}", I32, [address])


def byte_permute(b: ir.IRBuilder, low: ir.Value, high: ir.Value, selector: int) -> ir.Value:
    """`prmt.b32`: byte i of the result is byte (selector >> 4i) & 7 of {high, low}."""
    return asm(b, f"prmt.b32 $0, $1, $2, {selector:#x};", "=r,r,r", I32, [low, high])

