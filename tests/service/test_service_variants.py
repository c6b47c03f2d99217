"""Register-form variants through the compile service (docs/gpu.md, "Variants for dynamic
extents"): a dynamic row's compile holds the kernel's own entry and the rule, a client asks
for each bucket variant on first use (its own key, cached), bad variant requests get a 422
with a diagnostic, and a runtime kernel compiled through the service (`ServiceCompiler`,
here on the fake CUDA driver) asks the service for the variant of each new bucket."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest

from intentc.client import Client, CompileFailed
from intentc.codegen.nvptx.variants import VariantRule

sys.path.insert(0, str(Path(__file__).parents[1] / "runtime"))
from fake_cuda import FakeTensor, install_driver


def _entries(ptx: str) -> list[str]:
    return re.findall(r"\.entry (\w+)", ptx)


def _compile(service, sample_source: str, **specialization):
    with Client(service.url) as client:
        return client.compile(sample_source, "row_softmax", "ptx", "sm_90", specialization=specialization)


def test_a_dynamic_row_compiles_its_own_entry_and_the_rule_then_each_bucket_alone(service, sample_source):
    lazy = _compile(service, sample_source)
    launch = json.loads(lazy.artifacts["launch.json"])
    assert launch["variants"] == [] and _entries(lazy.artifacts["kernel.ptx"]) == ["intentc_kernel_row_softmax"]
    rule = VariantRule(**launch["variant_rule"])
    buckets = [rule.bucket(n) for n in (1000, 1024, 1536)]
    assert buckets == [(961, 1023), (1024, 1024), (1536, 1536)]
    replies = [_compile(service, sample_source, variant=bucket) for bucket in buckets]
    for bucket, reply in zip(buckets, replies):
        variant = json.loads(reply.artifacts["launch.json"])
        assert variant["mapping"] == "cta" and variant["variants"] == [] and variant["variant_rule"] == {}
        assert (variant["serves"]["extent"], variant["serves"]["min"], variant["serves"]["max"]) == ("N", *bucket)
        assert variant["slots"] == -(-bucket[1] // variant["block"][0])    # the T and K of its rows
        assert _entries(reply.artifacts["kernel.ptx"]) == ["intentc_kernel_row_softmax"]
    keys = {lazy.key, *(reply.key for reply in replies)}
    assert len(keys) == 1 + len(buckets)
    again = _compile(service, sample_source, variant=buckets[0], lazy_variants=False)     # one spelling, one key
    assert (again.key, again.status) == (replies[0].key, "hit")
    respelt = _compile(service, sample_source, variant=[str(bound) for bound in buckets[0]])   # the validated value
    assert (respelt.key, respelt.status) == (replies[0].key, "hit")


def test_the_eager_module_is_asked_for_by_name_and_keyed_apart(service, sample_source):
    eager = _compile(service, sample_source, lazy_variants=False)
    assert len(_entries(eager.artifacts["kernel.ptx"])) == 6
    assert [v["max"] for v in json.loads(eager.artifacts["launch.json"])["variants"]] == [1024, 2048, 4096, 8192,
                                                                                          16384]
    assert eager.key != _compile(service, sample_source).key


@pytest.mark.parametrize("specialization,target,expected", [
    ({"variant": [1, 1000]}, "ptx", "is not a register-form variant of kernel @row_softmax"),     # not a bucket
    ({"variant": [961, 1023], "extents": {"N": 1000}}, "ptx", "is not a register-form variant"),   # no rule
    ({"variant": [40000, 40000]}, "cubin", "is not a register-form variant"),                      # past `largest`
    ({"variant": [-1, 0]}, "ptx", "is not a register-form variant"),
    ({"variant": [961, 1023]}, "kir", "target `kir` has no register-form variants"),
])
def test_a_bad_variant_request_is_a_422_with_a_diagnostic_at_the_kernel(service, sample_source, specialization,
                                                                         target, expected):
    body = {"source": sample_source, "kernel": "row_softmax", "target": target,
            "arch": None if target == "kir" else "sm_90", "specialization": specialization}
    response = httpx.post(f"{service.url}/v1/compile", json=body, timeout=60)
    assert response.status_code == 422
    (diagnostic,) = response.json()["diagnostics"]
    assert diagnostic["code"] == "E0066" and expected in diagnostic["message"]
    assert (diagnostic["line"], diagnostic["col"]) == (1, 8)   # the kernel's name in the canonical text compiled


@pytest.mark.parametrize("variant", [[1, 2, 3], [1.5, 2], "961-1023"])
def test_a_malformed_variant_is_refused_by_the_schema(service, sample_source, variant):
    body = {"source": sample_source, "kernel": "row_softmax", "target": "ptx", "specialization": {"variant": variant}}
    response = httpx.post(f"{service.url}/v1/compile", json=body, timeout=60)
    assert response.status_code == 422 and response.json()["error"] == "invalid"


class RecordingClient:
    """The real client, remembering the specialization of each compile it sent."""

    def __init__(self, url: str):
        self.client, self.sent = Client(url), []

    def compile(self, *arguments, **keywords):
        self.sent.append(arguments[5])
        return self.client.compile(*arguments, **keywords)


def test_a_runtime_kernel_compiled_by_the_service_asks_it_for_each_new_bucket(service, sample_source, monkeypatch):
    from intentc.runtime.compilers import ServiceCompiler
    from intentc.runtime.cuda import compile_cuda
    fake = install_driver(monkeypatch)
    client = RecordingClient(service.url)
    kernel = compile_cuda(sample_source, "row_softmax", compiler=ServiceCompiler(client))
    assert client.sent == []                # only the mapping planned: nothing compiled yet
    for cols in (1000, 1000, 990, 1024, 3000, 0):
        kernel.launch_in_place({"x": FakeTensor(np.zeros((4, cols), np.float32)),
                                "y": FakeTensor(np.zeros((4, cols), np.float32)), "t": np.float32(0.5)})
    # one compile a new bucket, through the service; the empty rows need the kernel's own entry
    rule = kernel.rule
    assert rule.bucket(990) == rule.bucket(1000) == (961, 1023)
    assert [s.variant for s in client.sent] == [(961, 1023), (1024, 1024), rule.bucket(3000), ()]
    assert all(s.lazy_variants for s in client.sent)
    assert rule.to_json() == kernel.launch_config.variant_rule     # the own entry's launch.json says the same
    blocks = [launch[1][0] for launch in fake.launches]
    assert blocks == [64, 64, 64, 64, 128, kernel.block[0]] and kernel.block[0] == 512
    with pytest.raises(CompileFailed) as error:       # the service's diagnostics reach the runtime's caller
        ServiceCompiler(client).artifacts(_request(sample_source, (1, 1000)))
    assert error.value.diagnostics[0].code == "E0066"


def _request(source: str, variant: tuple[int, int]):
    from intentc.driver import front_end
    return front_end(source, "row_softmax", "cubin", "sm_90", specialization={"variant": variant})


def test_remote_compile_variant_for_asks_the_service_for_the_rows_bucket(service, tmp_path, capsys):
    from intentc.cli.main import main
    sample = Path(__file__).parents[2] / "ir_samples" / "row_softmax.kir"
    arguments = ["remote", "compile", str(sample), "--kernel", "row_softmax", "--target", "ptx", "--arch", "sm_90",
                 "--server", service.url]
    assert main([*arguments, "--variant-for", "N=1000", "-o", str(tmp_path / "variant")]) == 0
    launch = json.loads((tmp_path / "variant" / "launch.json").read_text())
    assert (launch["serves"]["min"], launch["serves"]["max"]) == (961, 1023)
    assert main([*arguments, "--eager-variants", "-o", str(tmp_path / "eager")]) == 0
    assert len(json.loads((tmp_path / "eager" / "launch.json").read_text())["variants"]) == 5
    capsys.readouterr()
    assert main([*arguments, "--variant-for", "N=40000", "-o", str(tmp_path / "none")]) == 2
    assert "no register-form variant of @row_softmax serves it" in capsys.readouterr().err
