"""``predict``: the backend PyTorch will run for a call, as cheaply as PyTorch's own check.

NOTE [ Asking PyTorch first ]
For plain tensors (``torch.Tensor`` itself, on any device PyTorch's dispatcher serves) the
exact answer is PyTorch's own C++ check, ``torch._fused_sdp_choice``: the same
``select_sdp_backend`` ``F.scaled_dot_product_attention`` runs, under the same flags. A Python
port cannot match its cost: reading q, k and v's metadata from Python alone (classes,
devices, shapes, dtypes, contiguity) costs more than the whole C++ check, so no cache key
built from that metadata can be cheaper either. ``predict`` therefore asks PyTorch for real
tensors and answers from the ported rules (``tables.predict_by_rules``) where PyTorch cannot
be asked: another GPU (``gpu=``), tensor subclasses (whose ``__torch_dispatch__`` PyTorch's
check would run), and calls PyTorch's check itself raises on. The differential tests hold the
rules to PyTorch's choice on generated calls, so the two answers are the same wherever both exist.

NOTE [ A call CPython can specialise ]
What ``predict`` adds to PyTorch's check is one Python call, so the shape of that call matters:
CPython 3.11 specialises (and inlines) calls only to functions without keyword-only parameters,
``*args`` or ``**kwargs``; a keyword-only ``gpu`` cost every call about 40 ns, a tenth of
PyTorch's own check here. So ``gpu`` is an ordinary last parameter, passed by keyword in every
example, and the fast path indexes a tuple rather than a dictionary.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.nn.attention import SDPBackend

from inspector.dispatch.torch_sdpa.tables import predict_by_rules

_choice = torch._fused_sdp_choice
_BY_VALUE = {int(member.value): member for member in SDPBackend.__members__.values()}
_ERROR = SDPBackend.ERROR
# By PyTorch's value (ERROR, -1, last): a tuple index is cheaper than a dictionary lookup on the hot path.
_BACKENDS = (*(_BY_VALUE[value] for value in range(len(_BY_VALUE) - 1)), _ERROR)
# How PyTorch says that no allowed backend can run the call (CPU and CUDA dispatch).
NO_KERNEL = ("No available kernel", "No viable backend")


def pytorch_choice(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> SDPBackend | None:
    """PyTorch's own answer (``ERROR`` where it refuses), or ``None`` where it cannot be asked."""
    if (
        query.__class__ is not Tensor
        or key.__class__ is not Tensor
        or value.__class__ is not Tensor
        or (attn_mask is not None and attn_mask.__class__ is not Tensor)
    ):
        return None
    try:
        if scale is None and not enable_gqa:
            return _BY_VALUE[_choice(query, key, value, attn_mask, dropout_p, is_causal)]
        return _BY_VALUE[
            _choice(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
        ]
    except RuntimeError as exc:
        text = str(exc)
        return _ERROR if NO_KERNEL[0] in text or NO_KERNEL[1] in text else None
    except Exception:  # PyTorch's check itself fails (a 1-D mask, a bad argument): the rules say what happens
        return None


_NAMES = {value: member.name.lower() for value, member in _BY_VALUE.items()}


def pytorch_choice_name(*args: Any, **kwargs: Any) -> str | None:
    """``pytorch_choice``'s answer as a backend name (``"flash_attention"``) for a call's own
    arguments, for plain tensors only, without the enum: ``watch`` asks it once a step of a
    decode loop, and PyTorch parses only the arguments the call passed (its check takes the
    same arguments as ``scaled_dot_product_attention``)."""
    try:
        return _NAMES[_choice(*args, **kwargs)]
    except Exception:  # a refusal or a check that fails: the full decision says which
        return None


def predict(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
    gpu: Any = None,  # meant as a keyword; not keyword-only (NOTE [ A call CPython can specialise ])
) -> SDPBackend:
    """The backend PyTorch will run for exactly this call under the flags in force now.

    ``SDPBackend.ERROR`` where PyTorch would refuse the call ("No available kernel"), e.g. when
    an ``sdpa_kernel`` block allows only backends that cannot serve it. ``gpu`` (a preset such
    as ``"h100"``, a compute capability such as ``(9, 0)``, or a ``GpuProfile``) answers for the
    same call on that GPU, by PyTorch's rules (see NOTE [ Asking PyTorch first ]).

    >>> q = torch.randn(2, 8, 128, 64)
    >>> predict(q, q, q)
    <SDPBackend.FLASH_ATTENTION: 1>
    >>> predict(q, q, q, dropout_p=0.1)
    <SDPBackend.MATH: 0>
    >>> predict(q, q, q, gpu="t4")
    <SDPBackend.EFFICIENT_ATTENTION: 2>
    """
    if gpu is None and query.__class__ is Tensor and key.__class__ is Tensor and value.__class__ is Tensor:
        try:  # ``pytorch_choice``, inlined (the hot path), passing the fewest arguments PyTorch must parse
            if scale is None and not dropout_p and not is_causal:  # the common calls: one test each
                if attn_mask is None:
                    return _BACKENDS[
                        _choice(query, key, value, enable_gqa=enable_gqa) if enable_gqa else _choice(query, key, value)
                    ]
                if attn_mask.__class__ is Tensor and not enable_gqa:
                    return _BACKENDS[_choice(query, key, value, attn_mask)]
            if attn_mask is None or attn_mask.__class__ is Tensor:
                return _BACKENDS[
                    _choice(query, key, value, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
                ]
        except RuntimeError as exc:
            text = str(exc)
            if NO_KERNEL[0] in text or NO_KERNEL[1] in text:
                return _ERROR
        except Exception:  # see ``pytorch_choice``
            pass
    return predict_by_rules(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, gpu=gpu)
