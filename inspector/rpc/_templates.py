"""Common topologies as device maps: a full mesh, a ring, and a parameter server with trainers.

Each template maps ``cuda:i -> cuda:i`` (a worker's i-th GPU to its peer's i-th GPU), the
layout data-parallel jobs use, and is symmetric (every caller's callee maps back), so a
template raises no pre-flight warning; a plan then edits the pairs that differ.
"""

from __future__ import annotations

from inspector._messages import Message

MAX_TEMPLATE_WORKERS = 1024
MAX_TEMPLATE_PAIRS = 1 << 20  # a 64-worker x 8-GPU mesh has 32,256; this bound keeps a typo from eating memory
MAX_DEVICES_PER_WORKER = 128  # torch indexes a device type with an int8

Maps = dict[str, dict[str, dict[str, str]]]


def _identity(devices_per_worker: int) -> dict[str, str]:
    if (
        isinstance(devices_per_worker, bool)
        or not isinstance(devices_per_worker, int)
        or not 0 <= devices_per_worker <= MAX_DEVICES_PER_WORKER
    ):
        headline = f"A template needs 0 .. {MAX_DEVICES_PER_WORKER} GPUs per worker, got {devices_per_worker!r}"
        raise ValueError(str(Message(headline, next_step="give the number of GPUs each worker has")))
    return {f"cuda:{i}": f"cuda:{i}" for i in range(devices_per_worker)}


def _check_pairs(maps_per_worker: int, workers: int, devices_per_worker: int) -> None:
    pairs = maps_per_worker * workers * devices_per_worker
    if pairs > MAX_TEMPLATE_PAIRS:
        headline = f"This template would map {pairs:,} device pairs, over the {MAX_TEMPLATE_PAIRS:,} a plan holds."
        raise ValueError(str(Message(headline, next_step="fewer workers or GPUs per worker")))


def _check(workers: int, minimum: int = 1) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or not minimum <= workers <= MAX_TEMPLATE_WORKERS:
        headline = f"A template needs {minimum} .. {MAX_TEMPLATE_WORKERS} workers, got {workers!r}"
        raise ValueError(str(Message(headline, next_step="pick a worker count in that range")))


def worker_names(workers: int) -> list[str]:
    _check(workers)
    return [f"worker{i}" for i in range(workers)]


def full_mesh_maps(names: list[str], devices_per_worker: int) -> Maps:
    """Every worker maps ``cuda:i -> cuda:i`` to every other worker."""
    _check(len(names))
    identity = _identity(devices_per_worker)
    _check_pairs(len(names) - 1, len(names), devices_per_worker)
    return {src: {dst: dict(identity) for dst in names if dst != src} for src in names}


def ring_maps(names: list[str], devices_per_worker: int) -> Maps:
    """Every worker maps ``cuda:i -> cuda:i`` to its two neighbours on a ring (one for two workers)."""
    _check(len(names))
    identity, n = _identity(devices_per_worker), len(names)
    maps: Maps = {}
    for i, name in enumerate(names):
        neighbours = dict.fromkeys(names[(i + step) % n] for step in (1, -1))
        maps[name] = {peer: dict(identity) for peer in neighbours if peer != name}
    return maps


def parameter_server_names(trainers: int) -> list[str]:
    _check(trainers)
    return ["ps", *(f"trainer{i}" for i in range(trainers))]


def parameter_server_maps(names: list[str], devices_per_worker: int) -> Maps:
    """``names[0]`` is the server; each trainer maps ``cuda:i -> cuda:i`` to it, and it maps back."""
    server, trainers = names[0], names[1:]
    identity = _identity(devices_per_worker)
    maps: Maps = {server: {trainer: dict(identity) for trainer in trainers}}
    maps.update({trainer: {server: dict(identity)} for trainer in trainers})
    return maps
