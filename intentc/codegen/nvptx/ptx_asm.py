"""Inline PTX for the tensor-core mapping: the instructions LLVM has no intrinsic for in
llvmlite's NVPTX (cp.async with a source size, ldmatrix, mma.sync, wgmma, fences). Each
helper emits one `asm volatile` at the emitter's insertion point; shared-memory operands
are 32-bit addresses in the shared window (`shared_address`)."""
from __future__ import annotations

from llvmlite import ir

from ..llvm.types import F32, I32, I64

VOID = ir.VoidType()


def asm(b: ir.IRBuilder, text: str, constraints: str, result: ir.Type, args: list) -> ir.Value:
    return b.asm(ir.FunctionType(result, [a.type for a in args]), text, constraints, args, side_effect=True)


def outputs(b: ir.IRBuilder, value: ir.Value, count: int) -> list:
    return [b.extract_value(value, i) for i in range(count)] if count > 1 else [value]


def shared_address(b: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    """The 32-bit shared-window address of an addrspace(3) pointer."""
    return b.ptrtoint(pointer, I32)


def global_pointer(b: ir.IRBuilder, pointer: ir.Value) -> ir.Value:
    """A view's element pointer in the global address space (views are device memory), so
    that `ld.global`/`st.global` take the address the kernel computed: a generic access
    needed each address converted (`cvta.global`, an instruction an access). A pointer
    already there is returned as it is."""
    if pointer.type.addrspace == 1:
        return pointer
    return b.addrspacecast(pointer, pointer.type.pointee.as_pointer(1))


def opaque(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """`value`, computed where it stands: LLVM cannot hoist what derives from it out of the
    enclosing loop (a volatile `mov`)."""
    return asm(b, "mov.b64 $0, $1;", "=l,l", I64, [value])


def cp_async(b: ir.IRBuilder, destination: ir.Value, source: ir.Value, source_bytes: ir.Value,
             size: int = 16) -> None:
    """`size` (4, 8 or 16) bytes global -> shared; bytes past `source_bytes` are zero-filled.
    16-byte copies bypass L1 (`.cg`, the only kind for 16) and have L2 fetch whole 128-byte
    lines: the neighbouring copies of a tile row want them."""
    kind = "cg" if size == 16 else "ca"
    asm(b, f"cp.async.{kind}.shared.global.L2::128B [$0], [$1], {size}, $2;", "r,l,r,~{memory}", VOID,
        [destination, source, source_bytes])


def cp_async_commit(b: ir.IRBuilder) -> None:
    asm(b, "cp.async.commit_group;", "~{memory}", VOID, [])


def cp_async_wait(b: ir.IRBuilder, pending: int) -> None:
    """Wait until at most `pending` of this thread's committed groups are in flight."""
    asm(b, f"cp.async.wait_group {pending};", "~{memory}", VOID, [])


def store_shared(b: ir.IRBuilder, address: ir.Value, value: ir.Value) -> None:
    """A 16- or 32-bit integer to a shared address."""
    bits, constraint = (16, "h") if value.type.width == 16 else (32, "r")
    asm(b, f"st.shared.b{bits} [$0], $1;", f"r,{constraint},~{{memory}}", VOID, [address, value])


def ldmatrix_x4(b: ir.IRBuilder, address: ir.Value, transpose: bool, offset: int = 0) -> list:
    """Four 8x8 b16 matrices; lanes 8j..8j+7 give matrix j's row addresses (`offset` bytes
    past `address`, an immediate of the instruction)."""
    suffix = ".trans" if transpose else ""
    at = f"$4+{offset}" if offset else "$4"
    result = asm(b, f"ldmatrix.sync.aligned.m8n8.x4{suffix}.shared.b16 {{$0, $1, $2, $3}}, [{at}];",
                 "=r,=r,=r,=r,r,~{memory}", ir.LiteralStructType([I32] * 4), [address])
    return outputs(b, result, 4)


def mma_m16n8k16(b: ir.IRBuilder, operand: str, acc: str, a: list, b_frag: list, c: list) -> list:
    """D = A·B + C on one warp: A 16x16 (4 b32), B 16x8 (2 b32); C/D 4 f32, or 2 f16x2 words."""
    words = 4 if acc == "f32" else 2
    kind, constraint = ("f32", "f") if acc == "f32" else ("f16", "r")
    d = ", ".join(f"${i}" for i in range(words))
    a_regs = ", ".join(f"${words + i}" for i in range(4))
    b_regs = f"${words + 4}, ${words + 5}"
    c_regs = ", ".join(f"${words + 6 + i}" for i in range(words))
    text = (f"mma.sync.aligned.m16n8k16.row.col.{kind}.{operand}.{operand}.{kind} "
            f"{{{d}}}, {{{a_regs}}}, {{{b_regs}}}, {{{c_regs}}};")
    constraints = ",".join([f"={constraint}"] * words + ["r"] * 6 + [str(i) for i in range(words)])
    result = asm(b, text, constraints, ir.LiteralStructType([F32 if acc == "f32" else I32] * words),
                 [*a, *b_frag, *c])
    return outputs(b, result, words)


def mma_m16n8k16_text(operand: str, acc: str):
    """One mma.sync.m16n8k16 for `AsmBlock.chain` (operands: A's 4 b32, then B's 2)."""
    kind = "f32" if acc == "f32" else "f16"

    def text(d: str, operands: list, c: str) -> str:
        return (f"mma.sync.aligned.m16n8k16.row.col.{kind}.{operand}.{operand}.{kind} {{{d}}}, "
                f"{{{', '.join(operands[:4])}}}, {{{', '.join(operands[4:6])}}}, {{{c}}};")
    return text


def wgmma_fence(b: ir.IRBuilder) -> None:
    asm(b, "wgmma.fence.sync.aligned;", "~{memory}", VOID, [])


def wgmma_commit(b: ir.IRBuilder) -> None:
    asm(b, "wgmma.commit_group.sync.aligned;", "~{memory}", VOID, [])


def _register(value: ir.Value) -> str:
    """The inline-asm constraint of an accumulator register: f32, or two f16 in a b32."""
    return "f" if value.type == F32 else "r"


def wgmma_wait(b: ir.IRBuilder, pending: int, accumulators: list) -> list:
    """Wait for the warpgroup's MMAs; the accumulators pass through the asm so that no use
    of them is scheduled before the wait."""
    count = len(accumulators)
    constraints = ",".join([f"={_register(accumulators[0])}"] * count + [str(i) for i in range(count)] + ["~{memory}"])
    result = asm(b, f"wgmma.wait_group.sync.aligned {pending};", constraints,
                 ir.LiteralStructType([accumulators[0].type] * count), accumulators)
    return outputs(b, result, count)


def wgmma_m64(b: ir.IRBuilder, n: int, operand: str, acc: str, a_descriptor: ir.Value | list, b_descriptor: ir.Value,
              c: list, transpose_b: bool) -> list:
    """D = A·B + D for one warpgroup, m64nNk16; an f32 accumulator is N/2 registers a thread,
    an f16 one N/4 (two f16 a register); A and B from shared memory through their
    descriptors (B's MN-major when transposed), or A from four registers of f16 pairs (a
    list: the register form, which has no A transpose immediate)."""
    count = len(c)
    d = ", ".join(f"${i}" for i in range(count))
    # 8-bit integers: k32, s32 accumulators, both operands K-major (no scale or transpose immediates)
    integer = operand == "s8"
    shape, kind = (f"m64n{n}k32", "s32") if integer else (f"m64n{n}k16", acc)
    a_registers = a_descriptor if isinstance(a_descriptor, list) else [a_descriptor]
    a_text = f"${count}" if len(a_registers) == 1 else "{" + ", ".join(f"${count + i}" for i in range(4)) + "}"
    trans_a = "" if len(a_registers) > 1 else " 0,"
    immediates = "" if integer else f", 1, 1,{trans_a} {1 if transpose_b else 0}"
    text = ("{ .reg .pred p; setp.ne.b32 p, 1, 0; "
            f"wgmma.mma_async.sync.aligned.{shape}.{kind}.{operand}.{operand} "
            f"{{{d}}}, {a_text}, ${count + len(a_registers)}, p{immediates}; }}")
    a_constraint = "l" if len(a_registers) == 1 else "r"
    constraints = ",".join([f"={_register(c[0])}"] * count + [a_constraint] * len(a_registers) + ["l"]
                           + [str(i) for i in range(count)] + ["~{memory}"])
    result = asm(b, text, constraints, ir.LiteralStructType([c[0].type] * count), [*a_registers, b_descriptor, *c])
    return outputs(b, result, count)


def fence_proxy_async(b: ir.IRBuilder) -> None:
    """Make this thread's ordinary shared-memory stores visible to the async proxy (wgmma)."""
    asm(b, "fence.proxy.async.shared::cta;", "~{memory}", VOID, [])

