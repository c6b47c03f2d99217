"""Affine index facts for the §10 injectivity proof of unique_store.

A fact is (constant, terms): terms map ("var", name) — a parallel iteration variable — or
("lane", p) — the lane coordinate along the p-th axis counted from the right, as numpy
broadcasting aligns axes — to an integer coefficient. Index arithmetic is 64-bit signed
(§2), so the exact integer model holds for in-range indices.
"""
from __future__ import annotations

Fact = tuple  # (int, dict)


def var(name: str) -> Fact:
    return (0, {("var", name): 1})


def lane(axis: int, rank: int) -> Fact:
    return (0, {("lane", rank - axis): 1})


def constant(value: object) -> Fact | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return (value, {})


def add(a: Fact | None, b: Fact | None, sign: int = 1) -> Fact | None:
    if a is None or b is None:
        return None
    terms = dict(a[1])
    for term, coef in b[1].items():
        terms[term] = terms.get(term, 0) + sign * coef
    return (a[0] + sign * b[0], {t: c for t, c in terms.items() if c})


def mul(a: Fact | None, b: Fact | None) -> Fact | None:
    if a is None or b is None:
        return None
    if not b[1]:
        a, b = b, a
    if a[1]:
        return None  # a product of two varying indices is not affine
    k = a[0]
    return (k * b[0], {t: k * c for t, c in b[1].items() if k * c})


def move_lanes(fact: Fact | None, mapping: dict) -> Fact | None:
    """Renumber lane positions (from the right) after a broadcast with dims or a reshape."""
    if fact is None:
        return None
    terms = {}
    for term, coef in fact[1].items():
        if term[0] == "lane":
            if term[1] not in mapping:
                return None
            term = ("lane", mapping[term[1]])
        terms[term] = coef
    return (fact[0], terms)


def determined(fact: Fact | None, ranges: dict) -> set:
    """The terms an index expression determines uniquely (mixed radix), or an empty set.

    Sorted by |coefficient|, each term's coefficient must exceed the largest spread of the
    smaller ones; every term but the largest needs a static range.
    """
    if fact is None:
        return set()
    live = sorted(((abs(c), t) for t, c in fact[1].items() if ranges.get(t, 2) != 1), key=lambda x: x[0])
    spread = 0
    for position, (coef, term) in enumerate(live):
        if coef <= spread:
            return set()
        size = ranges.get(term)
        if size is None and position != len(live) - 1:
            return set()
        spread += coef * ((size or 1) - 1)
    return {t for _, t in live}
