"""Real tensors for a described call, so a call described by axes alone can be run and timed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from inspector.dispatch.torch_sdpa.facts import SdpaCall


def tensors_for(facts: SdpaCall, seed: int = 0) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` for ``F.scaled_dot_product_attention`` with the shapes, dtype, mask and
    options ``facts`` describe: random contiguous tensors on this machine's CPU or GPU.

    A boolean mask lets every query see every key (a mask that hides a whole row would make
    the reference NaN), a float mask adds zeros. A GPU that is only described (a profile, not
    this machine's device) cannot be run here: ``ValueError`` says so.
    """
    if facts.cuda is not None and not facts.cuda.measured:
        raise ValueError(
            f"Cannot run a call on {facts.cuda.gpu}: this machine does not have that GPU. The rules answer "
            "without running (trace_call / inspector explain without --time); time it on the GPU itself"
        )
    if facts.nested:
        raise ValueError("Cannot build nested inputs from a description; pass your own tensors to compare()")
    device = "cuda" if facts.device == "cuda" else "cpu"
    generator = torch.Generator(device=device).manual_seed(seed)

    def tensor(shape: tuple[int, ...], dtype: Any) -> Any:
        t = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dtype)
        return t.requires_grad_(facts.requires_grad and t.is_floating_point())

    q, k, v = (tensor(tuple(s), d) for s, d in zip(facts.shapes, facts.dtypes, strict=True))
    kwargs: dict[str, Any] = {"dropout_p": facts.dropout_p, "is_causal": facts.is_causal}
    if facts.enable_gqa:
        kwargs["enable_gqa"] = True
    if facts.scale is not None:
        kwargs["scale"] = facts.scale
    if facts.mask_shape is not None:
        dtype = facts.mask_dtype or torch.bool
        mask = (
            torch.ones(facts.mask_shape, dtype=torch.bool, device=device)
            if dtype == torch.bool
            else torch.zeros(facts.mask_shape, dtype=dtype, device=device)
        )
        kwargs["attn_mask"] = mask
    return (q, k, v), kwargs
