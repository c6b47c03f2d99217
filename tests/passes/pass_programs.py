"""Random KIR programs rich in what the passes look for: duplicate and dead ops, identity
conversions, contract+add, mul+sum, multiply-add pairs and normalized summaries."""
from __future__ import annotations

import random

import numpy as np

HEADER = ("kernel @g(%x: view<f32, [%M, %N], in>, %v: view<f32, [%N, %D], in>, %bias: view<f32, [%D], in>, "
          "%y: view<f32, [%M, %D], out>, %z: view<f32, [%M], out>) {")
ROW, VEC = "tensor<f32, [%N]>", "tensor<f32, [%D]>"


class _Program:
    def __init__(self, rng: random.Random):
        self.rng, self.lines, self.count = rng, [], 0
        self.rows, self.vecs, self.scalars = ["row"], ["b"], []

    def name(self) -> str:
        self.count += 1
        return f"t{self.count}"

    def emit(self, text: str) -> None:
        self.lines.append("    " + text)

    def pick(self, pool: list[str]) -> str:
        return self.rng.choice(pool)

    def pointwise(self) -> None:
        r = self.name()
        if self.rng.random() < 0.5:
            op = self.rng.choice(["add", "sub", "mul", "maximum"])
            self.emit(f"%{r} = {op} %{self.pick(self.rows)}, %{self.pick(self.rows)} : {ROW}")
        else:
            op = self.rng.choice(["tanh", "neg", "cast"])
            self.emit(f"%{r} = {op} %{self.pick(self.rows)} : {ROW}")
        self.rows.append(r)

    def duplicate(self) -> None:
        source = self.pick(self.rows)
        for _ in range(2):
            r = self.name()
            self.emit(f"%{r} = tanh %{source} : {ROW}")
            self.rows.append(r)

    def contract_add(self) -> None:
        p, r = self.name(), self.name()
        self.emit(f"%{p} = vecmat %{self.pick(self.rows)}, %vals {{acc = f32}} : {VEC}")
        self.emit(f"%{r} = add %{p}, %{self.pick(self.vecs)} : {VEC}")
        self.vecs.append(r)

    def multiply_reduce(self) -> None:
        p, r = self.name(), self.name()
        self.emit(f"%{p} = mul %{self.pick(self.rows)}, %{self.pick(self.rows)} : {ROW}")
        self.emit(f"%{r} = reduce %{p} {{axes = [0], kind = sum}} : f32")
        self.scalars.append(r)

    def summary(self) -> None:
        m, mb, d, w, s, o = (self.name() for _ in range(6))
        scores = self.pick(self.rows)
        self.emit(f"%{m} = reduce %{scores} {{axes = [0], kind = max}} : f32")
        self.emit(f"%{mb} = broadcast %{m} : {ROW}")
        self.emit(f"%{d} = sub %{scores}, %{mb} : {ROW}")
        self.emit(f"%{w} = exp %{d} : {ROW}")
        self.emit(f"%{s} = reduce %{w} {{axes = [0], kind = sum}} : f32")
        self.emit(f"%{o} = vecmat %{w}, %vals {{acc = f32}} : {VEC}")
        q, qb = self.name(), self.name()
        self.emit(f"%{qb} = broadcast %{s} : {VEC}")
        self.emit(f"%{q} = div %{o}, %{qb} : {VEC}")
        self.vecs.append(q)
        self.scalars.append(m)

    def text(self) -> str:
        steps = [self.pointwise, self.pointwise, self.duplicate, self.contract_add, self.multiply_reduce, self.summary]
        for _ in range(self.rng.randint(4, 12)):
            self.rng.choice(steps)()
        self.emit(f"%dead = exp %{self.pick(self.rows)} : {ROW}")
        out_vec, out_scalar = self._total(self.vecs, VEC), self._total(self.scalars or ["zero"], "f32")
        body = [HEADER, "  %cols = iota : tensor<index, [%N]>", "  %dcols = iota : tensor<index, [%D]>",
                "  %nrows = iota {axis = 0} : tensor<index, [%N, 1]>",
                "  %vals = read %v index(%nrows, %dcols) : tensor<f32, [%N, %D]>",
                "  %b = read %bias index(%dcols) : tensor<f32, [%D]>", "  %zero = constant {value = 0.0} : f32",
                "  parallel %M {", "  ^row(%i: index):", "    %row = read %x index(%i, %cols) : tensor<f32, [%N]>"]
        return "\n".join(body + self.lines + [f"    write %y, %{out_vec} index(%i, %dcols)",
                                              f"    write %z, %{out_scalar} index(%i)", "  }", "}"]) + "\n"

    def _total(self, pool: list[str], type_: str) -> str:
        total = pool[0]
        for other in pool[1:]:
            r = self.name()
            self.emit(f"%{r} = add %{total}, %{other} : {type_}")
            total = r
        return total


def random_program(seed: int) -> str:
    return _Program(random.Random(seed)).text()


def random_inputs(seed: int, rows: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(0, 40)), int(rng.integers(1, 6))
    return {"x": rng.standard_normal((rows, n)).astype(np.float32),
            "v": rng.standard_normal((n, d)).astype(np.float32),
            "bias": rng.standard_normal(d).astype(np.float32)}
