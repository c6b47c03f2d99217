"""Digest every artifact of every sample kernel, to prove a refactor changes no output.

`python tools/artifacts.py --write FILE` records a sha256 per (sample, kernel, target, arch,
artifact); `--check FILE` recompiles and lists every artifact whose bytes differ. Targets:
llvm, ptx for sm_80 and sm_90 (with launch.json), and the canonical KIR after the passes.
The cpu object file is left out: it embeds nothing the llvm text does not already fix.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = (("kir", None), ("llvm", None), ("ptx", "sm_80"), ("ptx", "sm_90"))


def digests() -> dict[str, str]:
    from intentc import parse
    from intentc.cli.common import kernel_names
    from intentc.diagnostics import DiagnosticError
    from intentc.driver import compile_kernel
    table: dict[str, str] = {}
    for path in sorted((ROOT / "ir_samples").glob("*.kir")):
        text = path.read_text()
        for kernel in kernel_names(parse(text, path.name)):
            for target, arch in TARGETS:
                label = f"{path.stem}/{kernel}/{target}/{arch or '-'}"
                try:
                    artifacts = compile_kernel(text, kernel, target, arch, file=path.name).artifacts
                except DiagnosticError as error:
                    table[f"{label}/error"] = hashlib.sha256(str(error).encode()).hexdigest()
                    continue
                for name, data in sorted(artifacts.items()):
                    raw = data if isinstance(data, bytes) else data.encode()
                    table[f"{label}/{name}"] = hashlib.sha256(raw).hexdigest()
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="FILE")
    mode.add_argument("--check", metavar="FILE")
    args = parser.parse_args()
    current = digests()
    if args.write:
        Path(args.write).write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
        print(f"{len(current)} artifacts recorded in {args.write}")
        return 0
    recorded = json.loads(Path(args.check).read_text())
    changed = sorted(k for k in recorded.keys() | current.keys() if recorded.get(k) != current.get(k))
    for key in changed:
        print(f"differs: {key}")
    print(f"{len(current)} artifacts, {len(changed)} differ")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
