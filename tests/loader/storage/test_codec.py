"""Encoding payloads without pickle: exact round trips, and clear refusals naming where a value sits."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from loader_payloads import assert_same, payloads

from inspector.loader import FileStorage, UnsupportedPayloadError
from inspector.loader.storage.encode import SUPPORTED, encode


def roundtrip(obj: object, tmp_path: Path) -> object:
    storage = FileStorage(tmp_path / "payload.istore")
    storage.save(obj)
    return storage.load()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(obj=payloads)
def test_random_nested_payloads_round_trip_bit_for_bit_with_the_same_types(obj: object, tmp_path: Path) -> None:
    assert_same(obj, roundtrip(obj, tmp_path))


@pytest.mark.parametrize(
    "dtype",
    sorted(
        {
            "float16",
            "float32",
            "float64",
            "bfloat16",
            "bool",
            "complex64",
            "complex128",
            "complex32",
            "int8",
            "uint8",
            "int16",
            "int32",
            "int64",
            "uint16",
            "uint32",
            "uint64",
            "float8_e4m3fn",
            "float8_e5m2",
            "float8_e4m3fnuz",
            "float8_e5m2fnuz",
        }
    ),
)
def test_every_plain_torch_dtype_round_trips(dtype: str, tmp_path: Path) -> None:
    raw = torch.randint(0, 255, (64,), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    typed = raw.view(getattr(torch, dtype)).reshape(2, -1)
    assert_same({"t": typed}, roundtrip({"t": typed}, tmp_path))


def test_tensor_flags_and_layout_details_survive(tmp_path: Path) -> None:
    base = torch.randn(3, 4)
    obj = {
        "grad": base.clone().requires_grad_(True),
        "transposed": base.t(),
        "conj": torch.randn(2, 2, dtype=torch.complex64).conj(),
        "scalar": torch.tensor(2.5, dtype=torch.bfloat16),
        "empty": torch.empty(0, 3),
    }
    back = roundtrip(obj, tmp_path)
    assert back["grad"].requires_grad and back["grad"].is_leaf
    assert torch.equal(back["transposed"], base.t())
    assert torch.equal(back["conj"], obj["conj"].resolve_conj()) and not back["conj"].is_conj()
    assert back["scalar"].shape == () and back["scalar"].dtype == torch.bfloat16
    assert back["empty"].shape == (0, 3)


def test_python_values_keep_their_exact_types(tmp_path: Path) -> None:
    obj = [None, True, 0, -(10**40), 1.5, float("-inf"), -0.0, 2 + 3j, "é\ud800", b"\x00\xff", (), [], {}]
    back = roundtrip(obj, tmp_path)
    assert_same(obj, back)
    assert [type(v) for v in back] == [type(v) for v in obj]


def test_numpy_details_survive(tmp_path: Path) -> None:
    obj = {
        "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "big_endian": np.arange(4, dtype=">i4"),
        "datetime": np.array(["2024-01-01", "NaT"], dtype="M8[s]"),
        "strings": np.array(["ab", "c"]),
        "zero_d": np.array(7, dtype=np.int16),
        "scalar": np.float16(0.5),
        "bool_scalar": np.bool_(True),
        "view": np.arange(10)[::3],
    }
    back = roundtrip(obj, tmp_path)
    assert_same(
        {k: np.ascontiguousarray(v) if k != "zero_d" and isinstance(v, np.ndarray) else v for k, v in obj.items()}, back
    )
    assert type(back["scalar"]) is np.float16 and type(back["bool_scalar"]) is np.bool_


def test_loaded_arrays_are_writable_and_independent(tmp_path: Path) -> None:
    back = roundtrip({"a": np.zeros(3), "b": np.zeros(3)}, tmp_path)
    back["a"][:] = 1
    assert back["a"].flags.writeable and back["b"].tolist() == [0.0, 0.0, 0.0]


def test_structures_of_any_depth_round_trip(tmp_path: Path) -> None:
    deep: object = np.arange(3)
    for i in range(5000):
        deep = [deep] if i % 2 else {"k": deep}
    back = roundtrip(deep, tmp_path)
    for i in reversed(range(5000)):
        back = back[0] if i % 2 else back["k"]  # type: ignore[index]
    assert back.tolist() == [0, 1, 2]  # type: ignore[attr-defined]


def test_unsupported_value_error_names_its_path_inside_the_structure() -> None:
    obj = {"obs": [np.zeros(1), 1, 2, object()]}
    with pytest.raises(UnsupportedPayloadError, match=r"obj\['obs'\]\[3\]") as info:
        encode(obj)
    assert info.value.where == "obj['obs'][3]"
    assert info.value.type_name == "object"
    assert info.value.supported == SUPPORTED
    assert isinstance(info.value, TypeError)
    assert "supported = dict, list" in str(info.value)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (np.array([object()]), "would need pickle"),
        (np.zeros(2, dtype=[("a", "f4"), ("b", "i4")]), "structured dtype"),
        (collections.OrderedDict(a=1), "no pickle-free storage form"),
        (torch.nn.Parameter(torch.zeros(2)), "tensor subclasses"),
        (torch.zeros(2).to_sparse(), "only dense"),
        ({1, 2}, "no pickle-free storage form"),
    ],
)
def test_values_that_would_need_pickle_are_refused(value: object, fragment: str) -> None:
    with pytest.raises(UnsupportedPayloadError, match=fragment) as info:
        encode({"x": [value]})
    assert info.value.where == "obj['x'][0]"


def test_a_bad_dict_key_is_named_as_a_key() -> None:
    with pytest.raises(UnsupportedPayloadError, match=r"the dict key frozenset"):
        encode({"a": {frozenset({1}): 1}})


def test_reference_cycles_are_refused_not_looped_forever() -> None:
    loop: list[object] = [1]
    loop.append({"again": loop})
    with pytest.raises(UnsupportedPayloadError, match="contains itself") as info:
        encode(loop)
    assert info.value.where == "obj[1]['again']"


def test_the_header_is_small_json_and_arrays_sit_aligned() -> None:
    encoded = encode({"a": np.zeros(3, np.float32), "b": [np.ones(5, np.int8), torch.ones(2)]})
    header = json.loads(encoded.header)
    assert header["arrays"] == 3
    assert [offset % 64 for offset, _chunk in encoded.chunks] == [0, 0, 0]
    assert header["tensor_span"] == [encoded.chunks[2][0], encoded.chunks[2][0] + 8]
