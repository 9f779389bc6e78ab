"""One rank's bytes for a job-wide gather: its records as JSON in a versioned envelope, bounded and checked.

The envelope is ``{"format": "inspector.job", "version": 1, "rank": R, "world_size": N,
"records": [...]}``, at most ``MAX_PAYLOAD_BYTES`` of UTF-8 JSON. On receipt the bytes are
parsed as JSON only (no pickle: nothing another rank sends is ever run; NaN, Infinity, a key
given twice and nesting beyond what a record has are refused), then the envelope and every record are checked
(NOTE [ Job records ] in ``inspector._job_records``); any problem is a ``RecordProblem``, which
the gather turns into that rank's refusal.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from typing import Any

from inspector._files import file_kind
from inspector._job_records import KINDS, SDPA, RecordProblem, check_record

FORMAT = "inspector.job"
VERSION = 1
MAX_PAYLOAD_BYTES = 64 * 1024  # one rank's records; 64 SDPA groups of a real model take about 20 KiB
MAX_DEPTH = 8  # envelope, records, a record, its groups, a group, a value: six levels are used


def encode(rank: int, world_size: int, records: Sequence[dict[str, Any]]) -> bytes:
    """This rank's envelope as bytes, within ``MAX_PAYLOAD_BYTES``: while it is over, the SDPA record's
    least-called group is folded into its counts (``folded_groups``, ``folded_calls``); every other
    record is small by its schema (NOTE [ Job records ])."""
    records = [dict(record) for record in records]

    def dumped() -> bytes:
        return json.dumps(
            {"format": FORMAT, "version": VERSION, "rank": rank, "world_size": world_size, "records": records},
            allow_nan=False,
            separators=(",", ":"),
        ).encode()

    data = dumped()
    sdpa = next((record for record in records if record["kind"] == SDPA), None)
    while len(data) > MAX_PAYLOAD_BYTES and sdpa is not None and sdpa["groups"]:
        *sdpa["groups"], last = sdpa["groups"]
        sdpa["folded_groups"] += 1
        sdpa["folded_calls"] += last["count"]
        data = dumped()
    if len(data) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"rank {rank}'s job records take {len(data):,} bytes, more than {MAX_PAYLOAD_BYTES:,}")
    return data


def _refuse_constant(name: str) -> Any:
    raise RecordProblem("payload", f"holds {name}, which is not a JSON number")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """One JSON object; a key given twice is refused (``json`` would keep the last one silently)."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise RecordProblem("payload", "gives a key twice in one object")
    return found


def _depth(value: Any, limit: int, level: int = 1) -> int:
    if level > limit:
        return level
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((_depth(child, limit, level + 1) for child in children), default=level)


def parse(data: bytes, limit: int = MAX_PAYLOAD_BYTES, depth: int = MAX_DEPTH) -> Any:
    """JSON from ``data`` (at most ``limit`` bytes and ``depth`` levels), or ``RecordProblem``."""
    if len(data) > limit:
        raise RecordProblem("payload", f"is {len(data):,} bytes, more than the {limit:,} allowed")
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except RecordProblem:
        raise
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise RecordProblem("payload", f"is not JSON ({type(exc).__name__}: {str(exc)[:80]})") from None
    if _depth(value, depth) > depth:
        raise RecordProblem("payload", f"nests deeper than the {depth} levels job records use")
    return value


def decode(data: bytes, rank: int, world_size: int) -> dict[str, dict[str, Any]]:
    """The checked records rank ``rank`` sent, by kind; ``RecordProblem`` for anything that does not fit."""
    return check_envelope(parse(data), rank, world_size)


def check_envelope(value: Any, rank: int, world_size: int) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise RecordProblem("payload", f"is not an {FORMAT} envelope")
    if value.get("version") != VERSION:
        raise RecordProblem(
            "payload.version",
            f"is {str(value.get('version'))[:20]}; this inspector reads "
            f"{VERSION}: run one inspector version on every rank",
        )
    if set(value) != {"format", "version", "rank", "world_size", "records"}:
        raise RecordProblem("payload", f"has fields {sorted(str(k)[:40] for k in value)[:8]}")
    if value["rank"] != rank or value["world_size"] != world_size or isinstance(value["rank"], bool):
        raise RecordProblem(
            "payload.rank",
            f"says rank {str(value['rank'])[:20]} of {str(value['world_size'])[:20]}, "
            f"but came from rank {rank} of {world_size}",
        )
    return check_records(value["records"], "payload.records")


def check_records(records: Any, path: str) -> dict[str, dict[str, Any]]:
    """A list of at most one checked record per kind, by kind."""
    if not isinstance(records, list) or len(records) > len(KINDS):
        raise RecordProblem(path, f"must be a list of at most {len(KINDS)} records")
    by_kind: dict[str, dict[str, Any]] = {}
    for index, record in enumerate(records):
        checked = check_record(record, f"{path}[{index}]")
        if checked["kind"] in by_kind:
            raise RecordProblem(f"{path}[{index}]", f"is a second {checked['kind']} record")
        by_kind[checked["kind"]] = checked
    return by_kind


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """A regular file's bytes, at most ``limit``; a FIFO, a device or a directory is refused without
    blocking (opened with ``O_NONBLOCK``, checked on the descriptor)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = file_kind(info.st_mode)
            raise RecordProblem("file", f"is {kind}, not a job view written by JobView.save")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise RecordProblem("file", f"is over the {limit:,}-byte limit for a job view")
    return data
