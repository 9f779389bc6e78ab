"""What a ``watch()`` block saw: decisions per call signature, groups with counts, the calls kept (its table:
``watch_table``).

NOTE [ Bounded watching ]
A watch records every call as a count in a group, and keeps in full only the first ``keep``
calls. The decision for a call (PyTorch's own choice) is made once per call signature;
everything a reader wants beyond it (the ported rules' prediction, every backend's verdict,
the next step to a faster backend) is derived from the signature's facts only when a table is
asked for. Groups merge signatures that differ only in sequence lengths (a decode loop whose
KV cache grows is one group, its lengths shown as a range), so their number stays small; the
signature cache itself is bounded and starts afresh when full (counts live in the groups).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

from inspector.dispatch.context import format_value
from inspector.dispatch.torch_sdpa.facts import SdpaCall, context_of
from inspector.dispatch.torch_sdpa.modules import summarise
from inspector.dispatch.torch_sdpa.watch_table import WatchGroup, WatchTable
from inspector.dispatch.trace import MATCH, Trace

NATIVE = "native fast path"
UNKNOWN = "unknown"
REFUSED = "refused"  # PyTorch raised: no backend ran
MAX_GROUPS = 1024
MAX_MODULES = 64  # distinct module paths remembered per group
NOTHING_SEEN = (
    "No SDPA call was seen in the block. Possible reasons: the model computes attention itself "
    "(nn.MultiheadAttention with need_weights=True, Hugging Face attn_implementation='eager'); it calls a "
    "reference to the function taken before the block (from torch.nn.functional import "
    "scaled_dot_product_attention): use watch(prebound=True); the calls ran in another thread (only the thread "
    "that entered the block is watched); or the model is compiled (torch.compile puts attention inside its graph). "
    "To check, call torch.nn.functional.scaled_dot_product_attention inside the block, or record the block with "
    "torch.profiler."
)


class Decision:
    """PyTorch's choice for one call signature, and what is derived from it on demand."""

    __slots__ = (
        "_next",
        "_predicted",
        "_rejected",
        "_trace",
        "answered_by",
        "backend",
        "facts",
        "group",
        "name",
        "note",
    )

    def __init__(self, backend: str, answered_by: str, facts: SdpaCall | None, note: str = "", name: str = "") -> None:
        self.backend, self.answered_by, self.facts, self.note, self.name = backend, answered_by, facts, note, name
        self.group: Group | None = None  # the group its calls are counted in
        self._trace: Trace | None = None
        self._predicted: str | None = None
        self._rejected: tuple[tuple[str, str], ...] | None = None
        self._next: str | None = None

    def trace(self) -> Trace | None:
        """Every backend's verdict for the signature, by the ported rules (computed once)."""
        if self._trace is None and self.facts is not None:
            from inspector.dispatch.torch_sdpa.family import trace_context

            self._trace = trace_context(context_of(self.facts))
        return self._trace

    @property
    def predicted(self) -> str:
        if self._predicted is None:
            trace = self.trace()
            self._predicted = self.backend if trace is None else (trace.chosen or "error")
        return self._predicted

    @property
    def rejected(self) -> tuple[tuple[str, str], ...]:
        """The backends PyTorch tried before the one it ran, each with why it passed it over."""
        if self._rejected is None:
            trace = self.trace()
            self._rejected = () if trace is None else _rejected(trace, self.backend)
        return self._rejected

    @property
    def next_step(self) -> str:
        if self._next is None:
            from inspector.dispatch.torch_sdpa.hints import next_step

            trace = self.trace()
            self._next = "" if trace is None else next_step(trace)
        return self._next

    def full_note(self) -> str:
        if self.note or self.facts is None or self.answered_by != "pytorch" or self.predicted == self.backend:
            return self.note
        return f"the inspector's rules predicted {self.predicted}; PyTorch chose {self.backend}"


def _rejected(trace: Trace, chosen: str) -> tuple[tuple[str, str], ...]:
    reasons = []
    for row in trace.rows:
        if row.name == chosen:
            break
        if row.verdict == MATCH:
            continue
        why = "; ".join(str(c) for c in row.failing) or row.verdict
        reasons.append((row.name, why if row.available else f"not available here ({why})"))
    return tuple(reasons)


def coarse_key(decision: Decision) -> tuple[Any, ...]:
    """What a group shares: everything but the sequence lengths (NOTE [ Bounded watching ])."""
    f = decision.facts
    if f is None or decision.backend == REFUSED:
        return (decision.backend, decision.name, decision.note, None if f is None else str(f))
    q, k = f.shapes[0], f.shapes[1]
    q_len = q[-2] if len(q) >= 2 else None
    kv_len = k[-2] if len(k) >= 2 else None
    mask = (
        None
        if f.mask_shape is None
        else (len(f.mask_shape), tuple(f.mask_shape[:-2]), f.mask_dtype, f.mask_requires_grad)
    )
    layout = None if f.strides is None else tuple(bool(s) and s[-1] == 1 for s in f.strides)
    return (
        decision.backend,
        decision.answered_by,
        f.device,
        f.dtypes,
        tuple(_without_length(s) for s in f.shapes),
        layout,
        f.nested,
        mask,
        f.dropout_p,
        f.is_causal,
        f.enable_gqa,
        f.requires_grad,
        f.enabled,
        None if f.cuda is None else f.cuda.gpu,
        q_len == kv_len,
        q_len == 0 or kv_len == 0,
        q_len == 1,
    )


def _without_length(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i != len(shape) - 2)


class Group:
    """Calls that share a decision and a coarse signature (internal: counted on the hot path)."""

    __slots__ = ("count", "decision", "first_index", "kv_lens", "modules", "q_lens")

    def __init__(self, decision: Decision, first_index: int) -> None:
        self.decision, self.first_index, self.count = decision, first_index, 0
        self.modules: set[str] = set()
        self.q_lens: list[int] = []  # [min, max]
        self.kv_lens: list[int] = []

    def saw(self, decision: Decision, module: str) -> None:
        """A new signature joined the group: widen the length ranges, note the module."""
        f = decision.facts
        if f is not None:
            self.widen(f.shapes[0], f.shapes[1])
        self.note_module(module)

    def widen(self, q: tuple[int, ...], k: tuple[int, ...]) -> None:
        """Take a call with these query and key shapes into the length ranges (straight-line: a
        decode loop runs this once a step)."""
        if len(q) >= 2:
            n, lengths = int(q[-2]), self.q_lens
            if not lengths:
                lengths += (n, n)
            elif n < lengths[0]:
                lengths[0] = n
            elif n > lengths[1]:
                lengths[1] = n
        if len(k) >= 2:
            n, lengths = int(k[-2]), self.kv_lens
            if not lengths:
                lengths += (n, n)
            elif n < lengths[0]:
                lengths[0] = n
            elif n > lengths[1]:
                lengths[1] = n

    def note_module(self, module: str) -> None:
        if module and len(self.modules) < MAX_MODULES:
            self.modules.add(module)


def _shapes_text(f: SdpaCall, q_lens: list[int], kv_lens: list[int]) -> str:
    def one(name: str, shape: tuple[int, ...], lengths: list[int]) -> str:
        dims = [str(int(d)) for d in shape]
        if len(shape) >= 2 and lengths and lengths[0] != lengths[1]:
            dims[-2] = f"{lengths[0]}..{lengths[1]}"
        return f"{name}({', '.join(dims)})"

    q, k, v = f.shapes
    return " ".join((one("q", q, q_lens), one("k", k, kv_lens), one("v", v, kv_lens)))


def snapshot(group: Group) -> WatchGroup:
    d, f = group.decision, group.decision.facts
    modules = summarise(group.modules)
    if f is None:
        return WatchGroup(
            d.backend, group.count, modules, "", "", None, None, "", None, "", "", "", d.answered_by, d.backend, d.note
        )
    mask = "" if f.mask_shape is None else f"{tuple(f.mask_shape)} {format_value(f.mask_dtype)}"
    if (
        f.mask_shape is not None
        and len(f.mask_shape) >= 2
        and (group.q_lens[:1] != group.q_lens[1:] or group.kv_lens[:1] != group.kv_lens[1:])
    ):
        mask = f"{len(f.mask_shape)}-D {format_value(f.mask_dtype)}"
    dtypes = sorted({format_value(t) for t in f.dtypes})
    return WatchGroup(
        d.backend,
        group.count,
        modules,
        "/".join(dtypes),
        _shapes_text(f, group.q_lens, group.kv_lens),
        f.is_causal,
        f.dropout_p,
        mask,
        f.requires_grad,
        ", ".join(sorted(f.enabled)) or "none",
        d.next_step,
        "; ".join(f"{name}: {why}" for name, why in d.rejected),
        d.answered_by,
        d.predicted,
        d.full_note(),
    )


class WatchedCall:
    """One call kept in full (no tensors): its index, where it came from, and its decision."""

    __slots__ = ("_decision", "_key", "index", "module")

    def __init__(self, index: int, decision: Decision, module: str, key: tuple[Any, ...] | None = None) -> None:
        self.index, self._decision, self.module, self._key = index, decision, module, key

    def _own(self) -> Decision:
        """The decision with this call's own facts: a call that joined a signature with other
        sequence lengths (NOTE [ Growing sequences ]) has its own shapes, and so its own reasons."""
        decision, key = self._decision, self._key
        if key is not None:
            self._key = None
            if decision.facts is not None:
                from inspector.dispatch.torch_sdpa.watch_keys import facts_for

                facts = facts_for(decision.facts, key)
                if facts is not decision.facts:
                    own = Decision(decision.backend, decision.answered_by, facts, decision.note, decision.name)
                    own.group = decision.group
                    self._decision = decision = own
        return decision

    def refused(self, refusal: Decision) -> None:
        """PyTorch raised for this call: it ran no backend."""
        self._decision = refusal

    backend = property(lambda self: self._decision.backend)
    answered_by = property(lambda self: self._decision.answered_by)
    predicted = property(lambda self: self._own().predicted)
    rejected = property(lambda self: self._own().rejected)
    next_step = property(lambda self: self._own().next_step)
    note = property(lambda self: self._own().full_note())
    facts = property(lambda self: self._own().facts)

    @property
    def trace(self) -> Trace | None:
        return self._own().trace()

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        f = self._own().facts
        return () if f is None else tuple(tuple(int(d) for d in s) for s in f.shapes)

    dtype = property(lambda self: "" if self.facts is None else format_value(self.facts.dtypes[0]))
    device = property(lambda self: "" if self.facts is None else self.facts.device)
    enabled = property(lambda self: () if self.facts is None else tuple(sorted(self.facts.enabled)))
    dropout_p = property(lambda self: 0.0 if self.facts is None else self.facts.dropout_p)
    is_causal = property(lambda self: False if self.facts is None else self.facts.is_causal)
    mask = property(lambda self: None if self.facts is None else self.facts.mask_shape)
    enable_gqa = property(lambda self: False if self.facts is None else self.facts.enable_gqa)
    requires_grad = property(lambda self: False if self.facts is None else self.facts.requires_grad)

    def __str__(self) -> str:
        shapes = " ".join(f"{name}{tuple(shape)}" for name, shape in zip("qkv", self.shapes, strict=False))
        where = f" in {self.module}" if self.module else ""
        return f"#{self.index} {self.backend} {self.dtype} {self.device} {shapes}{where}".replace("  ", " ").rstrip()

    def __repr__(self) -> str:
        return f"<WatchedCall {self}>"


class WatchedCalls:
    """The calls a ``watch()`` block saw: ``seen`` counts them all, the first ``keep`` are kept in
    full (``len``, iteration, indexing), ``table()`` groups them all with counts."""

    def __init__(self, keep: int = 1000) -> None:
        self.keep = keep
        self.seen = 0
        self.calls: list[WatchedCall] = []
        self._groups: dict[tuple[Any, ...], Group] = {}

    @property
    def dropped(self) -> int:
        """Calls seen but not kept in full (they are in the counts)."""
        return self.seen - len(self.calls)

    def __len__(self) -> int:
        return len(self.calls)

    def __iter__(self) -> Iterator[WatchedCall]:
        return iter(self.calls)

    def __getitem__(self, index: int) -> WatchedCall:
        return self.calls[index]

    def backends(self) -> Counter[str]:
        """How many calls ran each backend (every call seen, not only the ones kept)."""
        counts: Counter[str] = Counter()
        for group in self._groups.values():
            if group.count:
                counts[group.decision.backend] += group.count
        return counts

    def _ordered(self) -> list[Group]:
        return [g for g in sorted(self._groups.values(), key=lambda g: (-g.count, g.first_index)) if g.count]

    def groups(self) -> tuple[WatchGroup, ...]:
        return tuple(snapshot(g) for g in self._ordered())

    def groups_on_devices(self) -> tuple[tuple[WatchGroup, str, str], ...]:
        """Each group (as ``groups()``) with the device type its calls ran on and, on CUDA, the GPU's
        capability (``sm80``); ``""`` where the calls could not be read."""
        found = []
        for g in self._ordered():
            f = g.decision.facts
            sm = "" if f is None or f.cuda is None else f"sm{f.cuda.sm[0]}{f.cuda.sm[1]}"
            found.append((snapshot(g), "" if f is None else str(f.device), sm))
        return tuple(found)

    def table(self) -> WatchTable:
        """Every call grouped (backend, module, dtype, shapes, options), most frequent first."""
        groups = self.groups()
        return WatchTable(groups, self.seen, len(self.calls), "" if groups else NOTHING_SEEN)

    def to_frame(self) -> Any:
        return self.table().to_frame()

    def to_csv(self, path: str | os.PathLike[str]) -> str:
        return self.table().to_csv(path)

    def job_record(self) -> dict[str, Any]:
        """These calls as a plain, bounded record for ``inspector.rpc.gather`` (``torch_sdpa.job_record``)."""
        from inspector.dispatch.torch_sdpa.job_record import job_record

        return job_record(self)

    def __repr__(self) -> str:
        if not self.seen:
            return "<WatchedCalls: no SDPA call seen; .table() says why that may be>"
        summary = ", ".join(f"{name} x{count:,}" for name, count in self.backends().most_common())
        kept = "all kept" if self.dropped == 0 else f"first {len(self.calls):,} kept"
        return f"<WatchedCalls: {self.seen:,} SDPA call(s) seen ({kept}): {summary}>"

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()
