"""``inspector.rpc.gather``: what every rank of a job measured, compared on rank 0 as one ``JobView``.

NOTE [ Where the job view lives ]
The job view sits in ``inspector.rpc``, the engine part that already knows about jobs: where
ranks meet (``_rendezvous``: the store of ``inspector.rpc.init_rpc``, shared with torch's), how a
rank that never comes is named on the others (the join guard's protocol, NOTE [ Join protocol ],
which the gather's meeting follows: NOTE [ Gather protocol ]), and which torch internals it may
use behind a check (``_torch_internals``). It reads no other engine part: the SDPA watch and the
loader profile each turn themselves into a plain record (``job_record()``), the schemas of those
records live in the shared ``inspector._job_records`` (NOTE [ Job records ]), and everything
here works on those records alone. A new shared package would have had to re-learn the
rendezvous and the rank-naming protocol, or import ``rpc`` anyway.
"""

from __future__ import annotations

import itertools
import math
import numbers
import threading
import time
from typing import Any

from inspector._job_records import ENVIRONMENT, RecordProblem, check_record
from inspector._messages import Message
from inspector.rpc._errors import GatherUsageError, short
from inspector.rpc._gather_meeting import Meeting
from inspector.rpc._gather_transport import exchange, job_here
from inspector.rpc._job_environment import environment_record
from inspector.rpc._job_payload import MAX_PAYLOAD_BYTES, decode, encode
from inspector.rpc._job_state import remember_view
from inspector.rpc._job_view import JobView

DEFAULT_GATHER_TIMEOUT_S = 300.0
ACCEPTED = (
    "the `calls` of `with torch_sdpa.watch() as calls:`, a LoaderProfile (profile_loader(...), "
    "LoopProfiler.result()), or the job_record() of either"
)

_gathers = itertools.count()
_running = threading.Lock()  # one gather at a time in a process (NOTE [ Gather protocol ]: n-th meets n-th)


def _record_of(result: Any) -> dict[str, Any]:
    """The plain record of one result (its own ``job_record()``), checked as any rank's would be."""
    if isinstance(result, dict):
        record = result
    else:
        method = getattr(type(result), "job_record", None)
        if not callable(method):
            raise TypeError(f"gather takes {ACCEPTED}; got {type(result).__name__}: {short(result)}")
        record = result.job_record()
    try:
        return check_record(record)
    except RecordProblem as exc:
        raise ValueError(f"gather was given a record that does not fit its schema: {exc}") from None


def _records(results: tuple[Any, ...]) -> list[dict[str, Any]]:
    records = [environment_record()]
    for result in results:
        record = _record_of(result)
        kinds = [r["kind"] for r in records]
        if record["kind"] in kinds:
            what = "environment (gather adds it itself)" if record["kind"] == ENVIRONMENT else record["kind"]
            raise ValueError(f"gather takes one result of each kind; {what} was given twice")
        records.append(record)
    return records


def _seconds(timeout: object) -> float:
    seconds = math.nan
    if isinstance(timeout, numbers.Real) and not isinstance(timeout, bool):
        try:
            seconds = float(timeout)
        except OverflowError:
            seconds = math.inf
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(
            str(
                Message(
                    f"gather's timeout must be a positive, finite number of seconds, got {short(timeout)}",
                    next_step="pass timeout=300",
                )
            )
        )
    return seconds


def _whole_job(group: Any) -> None:
    """Refuse a process group other than the whole job's: gather's gloo group is made with
    ``new_group``, which every rank of the job must call, members of a subgroup or not."""
    if group is None:
        return
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and group is dist.group.WORLD:
        return
    try:
        ranks = f"ranks {dist.get_process_group_ranks(group)}" if dist.is_initialized() else "a group"
    except Exception:
        ranks = "a group that is not this job's (this rank is not in it, or it was destroyed)"
    here = f"rank {dist.get_rank()} of {dist.get_world_size()}" if dist.is_initialized() else "this process"
    raise GatherUsageError(
        Message(
            f"gather compares every rank of the job, and {here} was given a subgroup ({ranks}).",
            next_step="call gather(...) without group= on every rank of the job; the view's rows of the ranks you "
            "care about are `view.sdpa.to_frame().query('rank in [...]')` and the like",
        )
    )


def gather(*results: Any, timeout: float = DEFAULT_GATHER_TIMEOUT_S, group: Any = None) -> JobView | None:
    """Send this rank's results and environment to rank 0, which gets them all compared as a ``JobView``.

    Every rank calls it at the same point, with its own results: the ``calls`` of a
    ``torch_sdpa.watch()`` block, a ``LoaderProfile``, or neither (the environment always goes).
    Rank 0 gets the ``JobView`` (also kept for the RPC tab and the report: ``last_gather()``); the
    other ranks get ``None``. Outside a job it returns this process's own view. A rank that has not
    called it within ``timeout`` seconds is named in the ``JobGatherError`` every other rank raises
    (NOTE [ Gather protocol ]); what the ranks send is plain JSON, bounded and checked on receipt
    (NOTE [ Job records ]), carried over torch's own collectives (NOTE [ Gather transport ]).

    Example (on every rank of a torchrun job, after ``init_process_group``)::

        >>> with torch_sdpa.watch() as calls:
        ...     loss = model(batch).sum()
        >>> profile = profile_loader(loader, step=train_step, batches=20)
        >>> view = inspector.rpc.gather(calls, profile, timeout=120)
        >>> if view is not None:                      # rank 0
        ...     print(view)                           # the ranks that differ, named
        ...     view.save("job.json")                 # for `inspector report --job job.json`

    ``group`` may only be ``None`` or ``torch.distributed.group.WORLD``: a gather is always the whole
    job's (``GatherUsageError`` for a subgroup). One gather runs at a time in a process; a second
    one from another thread meanwhile raises ``GatherUsageError`` at once.
    """
    seconds = _seconds(timeout)
    _whole_job(group)
    records = _records(results)
    if not _running.acquire(blocking=False):
        raise GatherUsageError(
            Message(
                "gather is already running in this process (another thread called it and has not returned).",
                next_step="call gather from one thread, once at the same point on every rank; wait for the first "
                "call to return",
            )
        )
    try:
        return _gather(records, seconds)
    finally:
        _running.release()


def _gather(records: list[dict[str, Any]], seconds: float) -> JobView | None:
    started = time.monotonic()
    job = job_here(started, seconds)
    payload = encode(job.rank, job.world_size, records)
    if job.store is None:
        view = JobView(1, {0: decode(payload, 0, 1)}, how=job.how)
        remember_view(view)
        return view
    meeting = Meeting(job.store, job.rank, job.world_size, next(_gathers), seconds, job.where)
    meeting.meet(started + seconds)
    received = exchange(job, meeting, payload, started + seconds - time.monotonic())
    if received is None:
        return None
    meeting.forget()
    view = _view(job.world_size, received, job.how)
    remember_view(view)
    return view


def _view(world_size: int, received: list[tuple[int, bytes]], how: str) -> JobView:
    """The job view from every rank's bytes; a rank whose bytes do not fit is refused, named, and left out."""
    records, refused = {}, {}
    for rank, (claimed, data) in enumerate(received):
        try:
            if not 0 < claimed <= MAX_PAYLOAD_BYTES:
                why = (
                    f"claims {claimed:,} bytes; a payload holds 1 .. {MAX_PAYLOAD_BYTES:,}, so that rank does not "
                    "run this inspector's gather: run one inspector version on every rank"
                )
                raise RecordProblem("payload", why)
            records[rank] = decode(data, rank, world_size)
        except RecordProblem as exc:
            refused[rank] = str(exc)
    return JobView(world_size, records, refused, how)
