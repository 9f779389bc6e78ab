"""One end of the socket between the main process and a worker (standard library only).

Whole messages over ``SOCK_SEQPACKET``; a message may carry descriptors (``SCM_RIGHTS``). No
descriptor is duplicated to send one, so handing a file or a segment to a worker can never fail
for lack of descriptors in the sender (see NOTE [ Worker protocol ] in ``messages``).
"""

from __future__ import annotations

import array
import errno
import socket
import struct
from typing import NamedTuple

from inspector.loader.pool.messages import MAX_MESSAGE, Message, decode, encode

MAX_FDS = 2
_FD_SPACE = socket.CMSG_SPACE(MAX_FDS * array.array("i").itemsize)
_CLOEXEC = int(getattr(socket, "MSG_CMSG_CLOEXEC", 0))  # plain ints: the enum operators are slow
_DONTWAIT = int(socket.MSG_DONTWAIT)
_TRUNC = int(socket.MSG_TRUNC)
_CTRUNC = int(socket.MSG_CTRUNC)
_SOL_SOCKET = int(socket.SOL_SOCKET)
_SCM_RIGHTS = int(socket.SCM_RIGHTS)
GONE = (errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN, errno.EBADF)  # the peer is gone, not a passing fault


class Received(NamedTuple):
    """A message, the descriptors it carried, and whether any descriptor was lost on the way.

    A descriptor is lost when the receiver has no free descriptor slot (EMFILE): the kernel drops
    it and says so with ``MSG_CTRUNC``.
    """

    message: Message
    fds: tuple[int, ...]
    fds_lost: bool


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of sequenced-packet Unix sockets, neither inheritable."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def set_receive_timeout(sock: socket.socket, seconds: float) -> None:
    """A blocking receive on ``sock`` gives up after ``seconds`` (``SO_RCVTIMEO``: no extra system call per wait)."""
    whole, micros = divmod(int(seconds * 1e6), 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", whole, micros))


class Channel:
    """Send and receive whole messages on ``sock``; one thread receives, any thread may send."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buffer = bytearray(MAX_MESSAGE)
        self._view = memoryview(self._buffer)

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def closed(self) -> bool:
        return self.sock.fileno() < 0

    def send(self, message: Message, fds: tuple[int, ...] = ()) -> None:
        """Send ``message`` with ``fds`` attached; ``OSError`` when it cannot (``errno`` in ``GONE``: peer gone)."""
        data = encode(message)
        if fds:
            self.sock.sendmsg([data], [(_SOL_SOCKET, _SCM_RIGHTS, array.array("i", fds))])
        else:
            self.sock.send(data)

    def receive(self, block: bool = True) -> Received | None:
        """The next message; None when none is waiting (``block`` False, or a receive timeout). ``EOFError`` once
        the peer is gone."""
        flags = _CLOEXEC if block else _CLOEXEC | _DONTWAIT
        try:
            size, ancillary, msg_flags, _address = self.sock.recvmsg_into([self._view], _FD_SPACE, flags)
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno in GONE:
                raise EOFError("the other end of the loader socket is gone") from exc
            raise
        if size == 0:
            raise EOFError("the other end of the loader socket is gone")
        fds: tuple[int, ...] = ()
        if ancillary:
            received = array.array("i")
            for level, kind, data in ancillary:
                if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                    received.frombytes(data[: len(data) - len(data) % received.itemsize])
            fds = tuple(received)
        if msg_flags & _TRUNC:
            for fd in fds:
                socket.close(fd)
            raise ValueError(f"a loader message longer than {MAX_MESSAGE} bytes")
        return Received(decode(self._view[:size]), fds, bool(msg_flags & _CTRUNC))

    def receive_message(self) -> Message | None:
        """The next message if one is waiting (None if not), for a receiver that takes no descriptors (any that came
        along are closed by the kernel). ``EOFError`` once the peer is gone."""
        view = self._view
        try:
            size = self.sock.recv_into(view, 0, _DONTWAIT | _TRUNC)  # with MSG_TRUNC: the message's full size
        except BlockingIOError:
            return None
        except OSError as exc:
            if exc.errno in GONE:
                raise EOFError("the other end of the loader socket is gone") from exc
            raise
        if size == 0:
            raise EOFError("the other end of the loader socket is gone")
        if size > MAX_MESSAGE:
            raise ValueError(f"a loader message longer than {MAX_MESSAGE} bytes")
        return decode(view[:size])

    def close(self) -> None:
        self.sock.close()
