"""Dispatch hot-path costs, each against its baseline measured in the same run.

    python benchmarks/dispatch.py

Targets (issue: foundation and dispatch): resolve on a 5-row family <= 0.5 µs and <= 12x a plain
Python call; op_backend enter+exit <= 1 µs and >= 10x cheaper than torch's sdpa_kernel;
context-from-tensors plus resolve <= 2.5 µs. Times are the best of several rounds (µs per call).
"""

from __future__ import annotations

import sys
import timeit

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import inspector.examples  # noqa: F401
from inspector.dispatch import op_backend, resolve, rows
from inspector.examples.attention import attention_context

ROUNDS = 7


def per_call_us(statement: str, namespace: dict, number: int) -> float:
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=ROUNDS)) / number * 1e6


def plain_call(family: str, ctx: object) -> object:
    return ctx


def measure() -> dict[str, float]:
    q = torch.randn(1, 2, 8, 16)
    ctx = attention_context(q, q, q)
    assert len(rows("attention")) == 5 and resolve("attention", ctx).name == "sdpa"  # the 4th row decides
    namespace = {
        "resolve": resolve, "ctx": ctx, "plain_call": plain_call, "op_backend": op_backend,
        "sdpa_kernel": sdpa_kernel, "SDPBackend": SDPBackend, "attention_context": attention_context, "q": q,
    }
    return {
        "plain": per_call_us("plain_call('attention', ctx)", namespace, 500_000),
        "resolve": per_call_us("resolve('attention', ctx)", namespace, 300_000),
        "op_backend": per_call_us("with op_backend(attention='math'): pass", namespace, 200_000),
        "sdpa_kernel": per_call_us("with sdpa_kernel(SDPBackend.MATH): pass", namespace, 20_000),
        "context_and_resolve": per_call_us("resolve('attention', attention_context(q, q, q))", namespace, 100_000),
    }


def report(t: dict[str, float]) -> list[tuple[str, str, bool]]:
    resolve_ratio = t["resolve"] / t["plain"]
    scope_ratio = t["sdpa_kernel"] / t["op_backend"]
    return [
        (f"resolve, 5-row attention family: {t['resolve']:.3f} µs", "<= 0.5 µs", t["resolve"] <= 0.5),
        (f"  vs plain Python call ({t['plain']:.3f} µs): {resolve_ratio:.1f}x", "<= 12x", resolve_ratio <= 12),
        (f"op_backend enter+exit: {t['op_backend']:.3f} µs", "<= 1 µs", t["op_backend"] <= 1.0),
        (f"  sdpa_kernel enter+exit ({t['sdpa_kernel']:.2f} µs) / op_backend: {scope_ratio:.1f}x cheaper",
         ">= 10x", scope_ratio >= 10),
        (f"context from tensors + resolve: {t['context_and_resolve']:.3f} µs", "<= 2.5 µs",
         t["context_and_resolve"] <= 2.5),
    ]


def main() -> int:
    torch.set_num_threads(1)
    print(f"dispatch hot path (torch {torch.__version__}, Python {sys.version.split()[0]}, best of {ROUNDS})")
    for line, target, ok in report(measure()):
        print(f"  {line:<78} target {target:<8} {'PASS' if ok else 'MISS'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
