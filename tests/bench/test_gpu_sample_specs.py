"""The per-sample GPU table (bench/gpu_samples.py) covers every ir_samples/ kernel once, and
each spec names only extents, constexprs and views its kernel has; runs without torch or a GPU."""
from __future__ import annotations

import functools

import pytest

from bench.gpu_sample_specs import SPECS
from bench.gpu_samples import add_ratios, probe_sizes
from intentc.ir.nodes import Kernel
from intentc.ir.types import ConstexprType, ViewType
from intentc.parse import parse
from sample_files import SAMPLES


@functools.cache
def sample_kernels() -> dict[str, Kernel]:
    return {f"{path.stem}:{item.name}": item for path in SAMPLES
            for item in parse(path.read_text(), str(path)).items if isinstance(item, Kernel)}


def test_every_sample_kernel_has_exactly_one_spec():
    ids = [spec.id for spec in SPECS]
    assert len(ids) == len(set(ids))
    assert sorted(ids) == sorted(sample_kernels())


@pytest.mark.parametrize("spec", SPECS, ids=[spec.id for spec in SPECS])
def test_spec_names_what_its_kernel_has(spec):
    kernel = sample_kernels()[spec.id]
    views = [p.name for p in kernel.params if isinstance(p.type, ViewType)]
    extents = {e for p in kernel.params if isinstance(p.type, ViewType) for e in p.type.shape if isinstance(e, str)}
    constexprs = {p.name for p in kernel.params if isinstance(p.type, ConstexprType)}
    assert set(spec.static) <= extents and spec.scaled in spec.dims and set(spec.static) <= set(spec.dims)
    assert set(spec.constexprs) == constexprs
    assert set(spec.strided) <= set(views)
    specialization = spec.specialization(views, spec.dims)
    assert specialization["extents"] == {name: spec.dims[name] for name in spec.static}
    assert set(specialization["unit_stride"]) == set(views) - set(spec.strided)
    assert spec.specialization(views, spec.dims, dynamic=True)["extents"] == {}


def test_probe_sizes_grow_by_eight_from_one_512th():
    assert probe_sizes(1 << 24, 1000) == [1 << 15, 1 << 18, 1 << 21, 1 << 24]
    assert probe_sizes(8, 1) == [1, 8]


def test_ratios_are_throughputs_against_each_baseline_and_the_fastest():
    row = {"intentc": {"ms": 2.0}, "triton": {"ms": 1.0}, "torch": {"ms": 4.0}, "torch_matmul": {"error": "x"}}
    add_ratios(row)
    assert (row["ratio_triton"], row["ratio_torch"], row["best_baseline"], row["ratio"]) == (0.5, 2.0, "triton", 0.5)
    assert "ratio_torch_matmul" not in row


def test_the_bars_ratio_skips_a_baseline_computing_a_different_function():
    row = {"intentc": {"ms": 2.0}, "triton": {"ms": 2.5}, "torch_rne": {"ms": 1.0},
           "differs": {"torch_rne": "round to nearest even"}}
    add_ratios(row)
    assert (row["ratio_torch_rne"], row["best_baseline"], row["ratio"]) == (0.5, "triton", 1.25)


def test_ema_and_stochastic_rounding_name_their_same_function_baselines():
    pytest.importorskip("torch")
    specs = {spec.id: spec for spec in SPECS}
    ema = specs["ema_row_buffer:ema_rows"].build({"M": 5, "T": 7}, "cpu")
    assert set(ema.baselines) == {"triton_seq", "triton_scan"} and set(ema.differs) == {"triton_scan"}
    assert set(ema.same_bits) == {"triton_seq"}
    rounding = specs["stochastic_rounding_bf16:stochastic_round_bf16"].build({"N": 64}, "cpu")
    assert set(rounding.differs) == {"torch_rne"} and "triton" in rounding.baselines
