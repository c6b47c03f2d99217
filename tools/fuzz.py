"""Fuzz the front end: no input may crash intentc, and everything that parses round-trips.

Each input is a mutation of a sample (ir_samples/) or a random derivation of the grammar
(grammar/kir.lark, its tokens drawn from the samples' tokens and from edge values). Each goes
through parse (what the hand-written parser accepts, Lark must accept as the same nodes) →
verify → print → re-parse (equal nodes, stable text) → JSON and back → compile to LLVM IR
for every kernel when it verifies. A diagnostic is a correct answer; any
other exception, or a round trip that changes the module, is an internal error and its
input is saved under --out.

    python tools/fuzz.py --inputs 100000 --seconds 3600 --out /tmp/fuzz

prints a line of counts every --report seconds and exits 1 when an internal error was found.
An input that takes more than CPU_SECONDS_PER_INPUT of CPU time is an internal error too.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import signal
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from intentc import DiagnosticError, from_json, parse, print_module, to_json  # noqa: E402
from intentc.cli.common import kernel_names  # noqa: E402
from intentc.ir.optable import all_ops  # noqa: E402
from intentc.parse.parser import parse_with_lark  # noqa: E402
from intentc.ir.types import DTYPES  # noqa: E402
from intentc.verify import verify  # noqa: E402

# Values that sit on some edge: of a dtype's range, of Python's int conversion, of f64.
EDGE_NUMBERS = ("0", "-0", "-1", "1", "007", "0x0", "0xFFFFFFFFFFFFFFFF", "127", "-128", "255", "65504",
                "448", "57344", "2147483648", "9223372036854775807", "-9223372036854775808",
                "18446744073709551616", "1e38", "3.4028235e38", "1e39", "1.7976931348623157e308",
                "1e308", "1e309", "1e400", "-1e400", "1e-400", "0.0", "-0.0", "1" + "0" * 309,
                "9" * 5000, "0x" + "f" * 300, "nan", "inf", "-inf")
NASTY_PIECES = ("%", "{", "}", "(", ")", ",", ":", "=", "<", ">", "[", "]", "^", "@", '"', "//", "\n",
                "-> (", "tensor<", "record<a: f32>", "tuple<", "enum<@E>", "constexpr<", "\\", "\x00", "é",
                "\u2028", "\ud800", "{" * 70, "[" * 70, "yield", "// -----\n")
HUGE_EXTENTS = ("0", "1", "-1", "4294967296", "9223372036854775807", "9223372036854775808", "1" + "0" * 30,
                "%fresh", "%N", "%M")
BAD_ATTRIBUTE_VALUES = ("99", "-99", "[0, 0]", "[5]", "[]", "i4", "fp4", "tensor<f32, [2]>", "bogus", "sum",
                        "1e400", "nan", "-inf", "true", '"text"', "@nowhere", "[1, [2]]", "0x7fffffffffffffffff")
# CPU time (not wall time: the machine may be shared) after which an input counts as a hang.
CPU_SECONDS_PER_INPUT = 20
_NUMBER = re.compile(r"(?<![\w%@^.])-?(?:0x[0-9a-fA-F]+|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)(?![\w.])")
_WORD = re.compile(r"(?<![%@^\w])[A-Za-z_][A-Za-z0-9_]*")
_VALUE = re.compile(r"%[A-Za-z0-9_.$]+")
_SHAPE = re.compile(r"(?<=, )\[((?:\d+|%\w+)(?:, (?:\d+|%\w+))*)\]")
_ATTRIBUTE_VALUE = re.compile(r"(?<=[a-z_] = )(?:\[[^\]]*\]|[^,}\s]+)(?=\s*[,}])")
_OPERANDS = re.compile(r"(= [a-z_]+ |^\s+(?:write|unique_store|scatter_reduce|atomic_store) )(%\w+(?:, %\w+)*)",
                       re.MULTILINE)


@dataclass
class Tally:
    inputs: int = 0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[Path] = field(default_factory=list)

    def line(self, started: float) -> str:
        parts = " ".join(f"{name}={count}" for name, count in sorted(self.outcomes.items()))
        return f"{self.inputs} inputs in {time.monotonic() - started:.0f}s: {parts}"


# ---- the check ---------------------------------------------------------------------------
class Checker:
    """Runs one input through every stage; compiles each distinct canonical module once."""

    def __init__(self, compile_llvm: bool = True, opt_level: int = 0):
        self.compile_llvm, self.opt_level = compile_llvm, opt_level
        self.compiled: set[str] = set()

    def check(self, text: str) -> str:
        """The outcome: `diagnostics`, `rejected`, `verified` (already compiled), `compiled` or
        `compile_diagnostics` (a kernel the compiler refuses with a diagnostic); raises on a bug."""
        try:
            module = parse(text, "fuzz.kir")
        except DiagnosticError as error:
            _check_diagnostics(error.diagnostics, text)
            error.render()
            return "diagnostics"
        _check_fast_parse(text, module)
        printed = print_module(module)
        again = parse(printed, "printed.kir")
        if again != module or print_module(again) != printed:
            raise AssertionError("printing and re-parsing changed the module")
        document = to_json(module)
        json.loads(document, parse_constant=_no_bare_constant)
        if from_json(document) != module:
            raise AssertionError("JSON round trip changed the module")
        problems = verify(module, "fuzz.kir")
        if problems:
            _check_diagnostics(problems, text)
            for problem in problems:
                problem.render(text)
            return "rejected"
        return self._compile(printed, module) if self.compile_llvm else "verified"

    def _compile(self, printed: str, module) -> str:
        from intentc.driver import compile_kernel
        from intentc.options import CompileOptions
        digest = hashlib.sha256(printed.encode("utf-8", "surrogatepass")).hexdigest()
        if digest in self.compiled:
            return "verified"
        self.compiled.add(digest)
        outcome = "compiled"
        for name in kernel_names(module):
            try:
                compile_kernel(printed, name, "llvm", None, CompileOptions(opt_level=self.opt_level), file="fuzz.kir")
            except DiagnosticError as error:    # a verified module the compiler still refuses, with reason
                _check_diagnostics(error.diagnostics, printed)
                outcome = "compile_diagnostics"
        return outcome


def _check_fast_parse(text: str, module) -> None:
    """What the hand-written parser accepted, Lark accepts as the same nodes, trivia included."""
    try:
        expected = parse_with_lark(text, "fuzz.kir")
    except DiagnosticError:
        raise AssertionError("the fast parser accepted text that Lark rejects") from None
    if repr(expected.model_dump()) != repr(module.model_dump()):
        raise AssertionError("the fast parser and Lark built different nodes")


def _check_diagnostics(diagnostics, text: str) -> None:
    if not diagnostics:
        raise AssertionError("a DiagnosticError without diagnostics")
    for diagnostic in diagnostics:
        if not re.fullmatch(r"[ER]\d{3,4}", diagnostic.code) or diagnostic.line < 1 or diagnostic.col < 1:
            raise AssertionError(f"malformed diagnostic {diagnostic}")


def _no_bare_constant(word: str):
    raise AssertionError(f"to_json wrote a bare {word}, which is not JSON")


# ---- inputs ------------------------------------------------------------------------------
class Mutator:
    """Small edits of sample text: pieces inserted, spans deleted, lines moved, numbers,
    dtypes, values and op names swapped for others (often edge values)."""

    def __init__(self, samples: list[str], rng: random.Random):
        self.samples, self.rng = samples, rng
        self.edits = (self._insert, self._delete, self._duplicate_line, self._drop_line, self._swap_lines,
                      self._number, self._dtype, self._value, self._op_name, self._extent, self._attribute,
                      self._arity, self._unicode_name)

    def input(self) -> str:
        text = self.rng.choice(self.samples)
        for _ in range(self.rng.randint(1, 4)):
            text = self.rng.choice(self.edits)(text)
        return text

    def _at(self, text: str) -> int:
        return self.rng.randint(0, len(text))

    def _insert(self, text: str) -> str:
        at = self._at(text)
        return text[:at] + self.rng.choice(NASTY_PIECES + EDGE_NUMBERS) + text[at:]

    def _delete(self, text: str) -> str:
        at = self._at(text)
        return text[:at] + text[at + self.rng.randint(1, 12):]

    def _lines(self, text: str) -> list[str]:
        return text.split("\n")

    def _duplicate_line(self, text: str) -> str:
        lines = self._lines(text)
        at = self.rng.randrange(len(lines))
        return "\n".join(lines[:at + 1] + lines[at:])

    def _drop_line(self, text: str) -> str:
        lines = self._lines(text)
        del lines[self.rng.randrange(len(lines))]
        return "\n".join(lines)

    def _swap_lines(self, text: str) -> str:
        lines = self._lines(text)
        a, b = self.rng.randrange(len(lines)), self.rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        return "\n".join(lines)

    def _replace(self, text: str, pattern: re.Pattern, choices) -> str:
        found = list(pattern.finditer(text))
        if not found:
            return text
        match = self.rng.choice(found)
        return text[:match.start()] + self.rng.choice(choices) + text[match.end():]

    def _number(self, text: str) -> str:
        return self._replace(text, _NUMBER, EDGE_NUMBERS)

    def _dtype(self, text: str) -> str:
        return self._replace(text, re.compile(r"\b(?:" + "|".join(DTYPES) + r")\b"), (*DTYPES, "i4", "index"))

    def _value(self, text: str) -> str:
        return self._replace(text, _VALUE, _VALUE.findall(text) or ["%x"])

    def _op_name(self, text: str) -> str:
        return self._replace(text, _WORD, sorted(all_ops()))

    def _extent(self, text: str) -> str:
        """An extent of a shape made huge, zero, negative or a fresh name."""
        def edit(extents: list[str]) -> None:
            extents[self.rng.randrange(len(extents))] = self.rng.choice(HUGE_EXTENTS)
        return self._edit_list(text, _SHAPE, 1, edit)

    def _attribute(self, text: str) -> str:
        """An attribute's value swapped for a wrong one (out-of-range axis, repeated axes, a
        type that is no dtype, an unknown keyword, a literal that fits nothing)."""
        return self._replace(text, _ATTRIBUTE_VALUE, BAD_ATTRIBUTE_VALUES)

    def _arity(self, text: str) -> str:
        """An operand dropped from, or added to, an op's operand list."""
        def edit(operands: list[str]) -> None:
            if len(operands) > 1 and self.rng.random() < 0.5:
                del operands[self.rng.randrange(len(operands))]
            else:
                operands.insert(self.rng.randrange(len(operands) + 1), self.rng.choice(operands))
        return self._edit_list(text, _OPERANDS, 2, edit)

    def _edit_list(self, text: str, pattern: re.Pattern, group: int, edit) -> str:
        """`text` with one match of `pattern`, chosen at random, having its comma-separated
        `group` changed in place by `edit(items)`."""
        found = list(pattern.finditer(text))
        if not found:
            return text
        match = self.rng.choice(found)
        items = match.group(group).split(", ")
        edit(items)
        return text[:match.start(group)] + ", ".join(items) + text[match.end(group):]

    def _unicode_name(self, text: str) -> str:
        """A value or symbol name with non-ASCII letters, a zero-width or bidi character."""
        return self._replace(text, re.compile(r"[%@][A-Za-z_][A-Za-z0-9_]*"),
                             ["%é", "%x\u200b", "@kernel\u202e", "%\uff58", "%日本", "@é", "%x\ufeff"])


class GrammarGenerator:
    """Random derivations of the LALR grammar: each rule picked at random (the shortest one
    once the depth budget is spent), terminals drawn from the samples' tokens."""

    def __init__(self, samples: list[str], rng: random.Random):
        from intentc.parse.parser import _parser
        lark, _ = _parser()
        self.rng = rng
        self.rules: dict[str, list[list]] = {}
        for rule in lark.rules:
            self.rules.setdefault(rule.origin.name, []).append(rule.expansion)
        self.literals = {t.name: t.pattern.value for t in lark.terminals if t.pattern.type == "str"}
        self.pools = _token_pools(lark, samples)

    def input(self, max_depth: int = 14) -> str:
        out: list[str] = []
        self._expand("start", max_depth, out)
        return " ".join(out)

    def _expand(self, symbol: str, depth: int, out: list[str]) -> None:
        if symbol not in self.rules:
            out.append(self._terminal(symbol))
            return
        choices = self.rules[symbol]
        expansion = self.rng.choice(choices) if depth > 0 else min(choices, key=len)
        for part in expansion:
            self._expand(part.name, depth - 1, out)
        if symbol in ("op", "region", "kernel", "helper"):
            out.append("\n")

    def _terminal(self, name: str) -> str:
        if name in self.literals:
            return self.literals[name]
        pool = self.pools.get(name)
        if not pool or self.rng.random() < 0.05:
            return self.rng.choice(EDGE_NUMBERS) if name in ("INT", "FLOAT") else self.rng.choice(NASTY_PIECES)
        return self.rng.choice(pool)


def _token_pools(lark, samples: list[str]) -> dict[str, list[str]]:
    pools: dict[str, set[str]] = {}
    for terminal in lark.terminals:
        if terminal.pattern.type != "re" or terminal.name.startswith("__") or terminal.name == "COMMENT":
            continue
        pattern = re.compile(terminal.pattern.to_regexp())
        for sample in samples:
            pools.setdefault(terminal.name, set()).update(m.group() for m in pattern.finditer(sample))
    return {name: sorted(values) for name, values in pools.items()}


# ---- the run -----------------------------------------------------------------------------
def fuzz(count: int, seconds: float, seed: int, out: Path | None, report: float, grammar_share: float,
         compile_llvm: bool = True, opt_level: int = 0, log=sys.stderr) -> Tally:
    samples = [p.read_text() for p in sorted((ROOT / "ir_samples").glob("*.kir"))]
    rng = random.Random(seed)
    mutator, generator, checker = Mutator(samples, rng), GrammarGenerator(samples, rng), Checker(compile_llvm, opt_level)
    tally, started, last_report = Tally(), time.monotonic(), time.monotonic()
    signal.signal(signal.SIGPROF, _too_slow)
    while tally.inputs < count and time.monotonic() - started < seconds:
        source = "grammar" if rng.random() < grammar_share else "mutant"
        text = generator.input() if source == "grammar" else mutator.input()
        tally.inputs += 1
        signal.setitimer(signal.ITIMER_PROF, CPU_SECONDS_PER_INPUT)
        try:
            tally.outcomes[checker.check(text)] += 1
        except Exception:  # every other exception is what the fuzzer looks for, a hang included
            tally.outcomes["internal_error"] += 1
            tally.failures.append(_save(out, text, traceback.format_exc(), tally.inputs))
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        if time.monotonic() - last_report >= report:
            print(tally.line(started), file=log, flush=True)
            last_report = time.monotonic()
    print(tally.line(started), file=log, flush=True)
    return tally


class TooSlow(Exception):
    """An input took more CPU time than any input should (a hang, or super-linear work)."""


def _too_slow(signum, frame):
    raise TooSlow(f"one input took more than {CPU_SECONDS_PER_INPUT} s of CPU time")


def fuzz_in_processes(jobs: int, count: int, seed: int, **settings) -> Tally:
    """`jobs` independent runs (seeds seed*1000 + i), their counts added up."""
    import multiprocessing
    shares = [count // jobs + (i < count % jobs) for i in range(jobs)]
    with multiprocessing.Pool(jobs) as pool:
        tallies = pool.starmap(_worker, [(share, seed * 1000 + i, settings) for i, share in enumerate(shares)])
    total = Tally()
    for tally in tallies:
        total.inputs += tally.inputs
        total.outcomes.update(tally.outcomes)
        total.failures += tally.failures
    return total


def _worker(count: int, seed: int, settings: dict) -> Tally:
    return fuzz(count=count, seed=seed, **settings)


def _save(out: Path | None, text: str, trace: str, number: int) -> Path | None:
    if out is None:
        return None
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"crash-{os.getpid()}-{number:07d}.kir"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    path.with_suffix(".txt").write_text(trace, encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="stop after this many inputs")
    parser.add_argument("--seconds", type=float, default=3600, help="stop after this long")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="save each crashing input and its traceback here")
    parser.add_argument("--report", type=float, default=60, help="seconds between progress lines")
    parser.add_argument("--grammar-share", type=float, default=0.3, help="share of grammar-generated inputs")
    parser.add_argument("--no-compile", action="store_true", help="stop after verify (faster)")
    parser.add_argument("--opt-level", type=int, default=0, choices=range(4),
                        help="LLVM optimization level of the compile step (default 0: the lowering is what is "
                             "fuzzed, and LLVM's own pipeline doubles the time)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (each its own seed)")
    args = parser.parse_args(argv)
    settings = {"seconds": args.seconds, "out": args.out, "report": args.report,
                "grammar_share": args.grammar_share, "compile_llvm": not args.no_compile, "opt_level": args.opt_level}
    if args.jobs > 1:
        tally = fuzz_in_processes(args.jobs, args.inputs, args.seed, **settings)
        print(f"all {args.jobs} workers: {tally.line(time.monotonic())}".replace(" in 0s", ""), flush=True)
    else:
        tally = fuzz(count=args.inputs, seed=args.seed, **settings)
    return 1 if tally.outcomes["internal_error"] else 0


if __name__ == "__main__":
    sys.exit(main())
