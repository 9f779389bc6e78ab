"""Shared mappings that hold no file descriptor (standard library only: the worker imports it).

Python's ``mmap.mmap`` keeps a duplicate of the descriptor it maps for as long as the mapping
lives, so every kept payload would cost a descriptor and ~1,000 kept payloads would exhaust the
default limit. ``map_shared`` maps with ``mmap(2)`` through ctypes instead: once it returns, the
caller may close the descriptor, and the memory stays mapped until the last buffer over it is
gone (a ``weakref.finalize`` on the returned ctypes array calls ``munmap``). Where libc cannot be
reached this way it falls back to ``mmap.mmap``, which keeps its descriptor.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import weakref
from typing import Any

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
        libc.munmap.restype = ctypes.c_int
        libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()
_MAP_FAILED = ctypes.c_void_p(-1).value


def _munmap(address: int, size: int) -> None:
    _LIBC.munmap(address, size)


def map_shared(fd: int, size: int, *, populate: bool = False) -> Any:
    """A writable buffer (supports ``memoryview`` and ``numpy.frombuffer``) over ``size`` bytes of ``fd``.

    The descriptor may be closed as soon as this returns. Raises ``OSError`` when the mapping fails.
    """
    if _LIBC is None:
        return mmap.mmap(fd, size, flags=mmap.MAP_SHARED | (_POPULATE if populate else 0))
    flags = mmap.MAP_SHARED | (_POPULATE if populate else 0)
    address = _LIBC.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, 0)
    if address is None or address == _MAP_FAILED:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    buffer = (ctypes.c_ubyte * size).from_address(address)
    weakref.finalize(buffer, _munmap, address, size).atexit = False  # never unmap under live arrays at exit
    return buffer
