"""The storage file layout: a fixed prelude, a small JSON header, then aligned raw array bytes (standard library only).

NOTE [ Storage file format ]
A storage file is, in order:

    prelude   32 bytes: magic, format version, flags, CRC-32 of the header, header length,
              data length (little-endian ``<8sHHIQQ``)
    header    UTF-8 JSON (ASCII in practice): the object's tree as a flat token list and, for
              every array leaf, its dtype, shape and offset into the data region
    padding   zeros up to the next multiple of ``ALIGN``
    data      every array's raw bytes, each starting at a multiple of ``ALIGN`` from here

Nothing in the file is ever executed: the header is parsed by ``json`` and checked against a
closed vocabulary of tags and dtypes, and array bytes are only ever viewed as arrays. That is
why a worker can ``readinto`` the whole file straight into a shared-memory segment and the main
process can build arrays over that segment without a copy. The exact file size is implied by
the prelude, so every reader (``reader.StorageFile``: the synchronous load, the pool before it
picks a segment, ``describe_storage``) reads the prelude and the header first (one read of the
first ``HEAD_READ`` bytes, a second only for a longer header) and checks both completely before
it reads or reserves anything else: the declared sizes against the file's real size, the header
CRC (a garbled header), its JSON, and every leaf against the data region, which must be exactly
as long as its arrays need (NOTE [ Header plans ]). A truncated file, a garbled header, or a
huge sparse file that only looks big is refused after reading its first 4 KiB (and the rest of
its header, if longer), and nothing of the file's size is allocated or reserved. The array bytes
carry no checksum: hashing them would halve throughput, and a flipped bit there cannot make the
loader misbehave, only deliver a different number.
Files are written to a temporary name in the same directory with mode 0600 and renamed into
place, so a reader never sees a half-written file.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from inspector.loader._errors import StorageCorruptError

MAGIC = b"\x89ISTORE\n"
VERSION = 1
ALIGN = 64
PRELUDE = struct.Struct("<8sHHIQQ")
PRELUDE_SIZE = PRELUDE.size  # 32
SUFFIX = ".istore"


def align(n: int) -> int:
    """Round ``n`` up to the next multiple of ``ALIGN``."""
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Prelude(NamedTuple):
    """Where the header and the data region sit in a file image (a tuple: made once per load, cheaply)."""

    header_len: int
    data_len: int
    header_crc: int
    data_start: int
    file_size: int


def pack_prelude(header: bytes, data_len: int) -> bytes:
    """The 32 prelude bytes for a file with this header and data length."""
    return PRELUDE.pack(MAGIC, VERSION, 0, zlib.crc32(header), len(header), data_len)


def parse_prelude(head: bytes | memoryview, file_size: int, path: str) -> Prelude:
    """Check the prelude against the real file size; raise ``StorageCorruptError`` on any mismatch."""
    if file_size < PRELUDE_SIZE:
        if bytes(head[: min(len(MAGIC), file_size)]) == MAGIC[:file_size] and file_size > 0:
            raise StorageCorruptError(path, f"truncated: {file_size} bytes, shorter than the prelude")
        raise StorageCorruptError(path, f"not a storage file ({file_size} bytes, no storage prelude)")
    if len(head) < PRELUDE_SIZE:
        raise StorageCorruptError(path, f"truncated: the file shrank below {PRELUDE_SIZE} bytes while being read")
    magic, version, _flags, crc, header_len, data_len = PRELUDE.unpack_from(head)
    if magic != MAGIC:
        raise StorageCorruptError(path, f"bad magic {magic!r} (expected {MAGIC!r}); not a storage file")
    if version != VERSION:
        raise StorageCorruptError(path, f"format version {version} (this inspector reads {VERSION})")
    data_start = align(PRELUDE_SIZE + header_len)
    prelude = Prelude(header_len, data_len, crc, data_start, data_start + data_len)
    if prelude.file_size != file_size:
        kind = "truncated" if file_size < prelude.file_size else "trailing bytes"
        raise StorageCorruptError(path, f"{kind}: expected {prelude.file_size} bytes, file has {file_size}")
    return prelude


def check_header_crc(header: bytes | memoryview, prelude: Prelude, path: str) -> None:
    """Raise ``StorageCorruptError`` unless the header bytes match the prelude's CRC."""
    if zlib.crc32(header) != prelude.header_crc:
        raise StorageCorruptError(path, "header checksum mismatch (garbled header)")
