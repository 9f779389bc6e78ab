"""describe_batch: the keys, shapes and dtypes of one batch, as records."""

from __future__ import annotations

import numpy as np
import torch

from inspector.backends import FieldInfo, describe_batch


def test_a_dict_of_tensors_is_described_leaf_by_leaf():
    batch = {"obs": torch.zeros(2, 3), "action": np.zeros((2, 1), dtype=np.int16), "label": "x"}
    assert describe_batch(batch) == (
        FieldInfo("obs", "tensor", (2, 3), "float32"),
        FieldInfo("action", "ndarray", (2, 1), "int16"),
        FieldInfo("label", "str", None, None),
    )


def test_nested_mappings_and_sequences_join_keys_with_dots():
    batch = {"obs": {"image": torch.zeros(1, 3, 4, 4, dtype=torch.uint8)}, "pair": (torch.ones(1), 2)}
    assert [(f.key, f.kind, f.shape) for f in describe_batch(batch)] == [
        ("obs.image", "tensor", (1, 3, 4, 4)),
        ("pair.0", "tensor", (1,)),
        ("pair.1", "int", None),
    ]


def test_a_bare_tensor_is_one_field():
    assert describe_batch(torch.zeros(5, dtype=torch.bfloat16)) == (FieldInfo("<batch>", "tensor", (5,), "bfloat16"),)
