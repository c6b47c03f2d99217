"""2:4 sparse f16/bf16 on mma.sp (`nvptx/sparse_mma.py`, docs/gpu.md "Structured
contractions"): the metadata re-encoding's PTX run on this CPU (`ptx_eval`) against the PTX
ISA's format, and the kernel's PTX (no GPU needed)."""
from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
import subprocess

import numpy as np
import pytest
from llvmlite import ir

import intentc
import ptx_eval
from intentc.codegen.nvptx.asm_block import AsmBlock
from intentc.codegen.nvptx.sparse_mma import encode_groups, plan_sparse_mma
from intentc.codegen.nvptx.tile_sparse import plan_sparse
from intentc.codegen.nvptx.structured_contraction import match_sparse_contraction
from intentc.driver import compile_kernel
from sample_paths import sample_text

PAIRS = [(first, second) for first in range(4) for second in range(first + 1, 4)]


def _encoder(fields: tuple):
    """encode_groups' PTX run on the host (`ptx_eval`): word -> bits | invalid << 16."""
    function = ir.Function(ir.Module(), ir.FunctionType(ir.VoidType(), []), "f")
    block = AsmBlock(ir.IRBuilder(function.append_basic_block()))
    bits, invalid = encode_groups(block, "%word", fields)

    def encode(word: int) -> int:
        values = ptx_eval.run(block.lines, {"%word": word})
        return values[bits] | (values[invalid] != 0) << 16
    return encode


def _expected(word: int, fields: tuple) -> tuple:
    """(mma.sp's 16 bits, invalid) from the PTX ISA's description: a group's nibble is
    first | second << 2, group j at bits 4j; valid iff 0 <= first < second < 4."""
    bits, invalid = 0, False
    for group in range(4):
        byte = (word >> 8 * group) & 0xFF
        first, second = ((byte >> shift) & (0xFF if mask is None else mask) for shift, mask in fields)
        invalid |= not 0 <= first < second < 4
        bits |= ((first & 3) | (second & 3) << 2) << 4 * group
    return bits, invalid


@pytest.mark.parametrize("fields", [((0, 3), (2, 3)), ((4, 3), (6, 3)), ((0, 7), (4, None)), ((1, 3), (5, 7))])
def test_metadata_re_encoding_is_the_instructions_format(fields):
    encode = _encoder(fields)
    rng = np.random.default_rng(sum(shift for shift, _ in fields))
    words = [int(w) for w in rng.integers(0, 2 ** 32, 4000, dtype=np.uint64)]
    # every combination of valid groups in the sample's packing, plus random bytes
    if fields == ((0, 3), (2, 3)):
        words += [sum((p | q << 2) << 8 * g for g, (p, q) in enumerate(combo))
                  for combo in itertools.product(PAIRS, repeat=4)]
    for word in words:
        result = encode(word)
        assert (result & 0xFFFF, bool(result >> 16)) == _expected(word, fields), hex(word)


def test_valid_groups_are_the_ordered_metadata_values():
    """The six valid records are exactly the nibbles the PTX ISA lists as meaningful for
    mma.sp::ordered_metadata (0b0100, 0b1000, 0b1001, 0b1100, 0b1101, 0b1110)."""
    encode = _encoder(((0, 3), (2, 3)))
    valid = sorted(encode(nibble * 0x01010101) & 0xF for nibble in range(16) if not encode(nibble * 0x01010101) >> 16)
    assert valid == [0b0100, 0b1000, 0b1001, 0b1100, 0b1101, 0b1110]


def _compiled(text: str, arch: str = "sm_90") -> tuple[str, dict]:
    artifacts = compile_kernel(text, "sparse24_matmul", "ptx", arch).artifacts
    return artifacts["kernel.ptx"], json.loads(artifacts["launch.json"])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_two_of_four_takes_mma_sp_by_default_and_launch_json_says_so(arch):
    ptx, launch = _compiled(sample_text("sparse_2of4_matmul"), arch)
    assert "mma.sp.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32" in ptx
    plan = launch["mma"]
    assert launch["mapping"] == "mma" and launch["block"] == [256, 1, 1]
    assert plan["instruction"] == "mma.sp.m16n8k32" and plan["block"] == [128, 128, 64] and plan["stages"] == 4
    assert plan["structured"] == "sparse" and plan["pattern"] == "two_of_four" and "metadata" in plan
    assert plan["shared_bytes"] == 4 * (8192 + 16384 + 1024) == launch["shared_bytes"]


def test_other_sparse_contractions_keep_the_decoding_path():
    """mma.sp takes 2:4 f16/bf16 with 64-position IR steps only: 2:4 with 32-position steps
    and 1:2 (f16) are decoded onto mma.sync, 1:2 f32 onto the CUDA cores."""
    found = match_sparse_contraction(intentc.parse(sample_text("sparse_2of4_matmul"), "t.kir").find("sparse24_matmul"))
    assert plan_sparse(dataclasses.replace(found, step_groups=8)).instruction == "mma.sync.m16n8k16"
    one_of_two = match_sparse_contraction(intentc.parse(sample_text("sparse_1of2_matmul"), "t.kir")
                                          .find("sparse12_matmul"))
    assert plan_sparse(one_of_two).instruction == "fma.f32"
    assert plan_sparse(dataclasses.replace(one_of_two, operand_dtype="f16")).instruction == "mma.sync.m16n8k16"


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_two_of_four_runs_on_the_sparse_tensor_cores(dtype):
    text = sample_text("sparse_2of4_matmul").replace("f16", dtype)
    ptx, _ = _compiled(text)
    assert f"mma.sp.sync.aligned.m16n8k32.row.col.f32.{dtype}.{dtype}.f32" in ptx
    assert "mma.sync" not in ptx and "bar.red.or" not in ptx     # no dense decoding, no exact path
    # emitted once: a K step's 32 MMAs a warp (4 x 4 fragments x 2 k32 halves), its A and B
    # fragment loads, and the six copies a thread (whole and clamped forms)
    assert ptx.count("mma.sp.sync") == 32 and ptx.count("cp.async.cg.shared.global") == 12
    assert ptx.count("ldmatrix.sync.aligned.m8n8.x4.trans") == 8 and ptx.count("ldmatrix.sync.aligned.m8n8.x4.shared") == 8
    assert "tf32" not in ptx and ".ftz" not in ptx and "malloc" not in ptx


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="no ptxas on PATH")
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_90a"])
def test_ptxas_accepts_mma_sp(dtype, arch, tmp_path):
    ptx, _ = _compiled(sample_text("sparse_2of4_matmul").replace("f16", dtype), arch)
    source = tmp_path / "k.ptx"
    source.write_text(ptx)
    done = subprocess.run(["ptxas", f"-arch={arch}", str(source), "-o", str(tmp_path / "k.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_mma_sp_plans_only_two_of_four_f16_bf16_with_64_position_steps():
    found = match_sparse_contraction(intentc.parse(sample_text("sparse_2of4_matmul"), "t.kir").find("sparse24_matmul"))
    plan = plan_sparse_mma(found)
    assert plan is not None and plan.instruction == "mma.sp.m16n8k32" and plan.stage_bytes == 8192 + 16384 + 1024
    assert plan_sparse_mma(dataclasses.replace(found, operand_dtype="bf16")) is not None
    for other in ({"step_groups": 8}, {"operand_dtype": "f32"}, {"pattern": "one_of_two"}):
        assert plan_sparse_mma(dataclasses.replace(found, **other)) is None, other


def test_the_cli_compiles_two_of_four_to_mma_sp(capsys):
    from intentc.cli.main import main
    from sample_paths import SAMPLES
    command = ["compile", str(SAMPLES / "sparse_2of4_matmul.kir"), "--kernel", "sparse24_matmul", "--target", "ptx"]
    assert main(command) == 0
    assert "mma.sp.sync.aligned.m16n8k32" in capsys.readouterr().out
