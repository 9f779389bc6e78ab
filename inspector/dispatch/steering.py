"""Steering: a family whose ``op_backend`` selections also act outside the inspector.

Most families live entirely inside the inspector: selecting a row changes what ``resolve``
returns and nothing else. A family that mirrors another library's dispatch (``torch_sdpa``
mirrors PyTorch's attention kernels) can register a ``Steer``, and ``op_backend`` then enters
it with the selection for the block and exits it afterwards, even after an exception, so the
other library obeys the same selection for exactly that block.
"""

from __future__ import annotations

from typing import Any, Protocol


class Steer(Protocol):
    """Applies a family's selection outside the inspector for the length of a block."""

    def enter(self, handle: Any) -> Any:
        """Apply ``handle`` (a row name, a row's object or ``None`` for "no selection"); return
        what ``exit`` needs to put everything back."""

    def exit(self, token: Any) -> None:
        """Undo one ``enter``, given what it returned."""
