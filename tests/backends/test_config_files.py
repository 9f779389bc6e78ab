"""Hostile config sources: FIFOs, folders, devices, other encodings, huge files, alias bombs, no PyYAML."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from waiting import WAIT_S

import inspector.backends as backends
from inspector.backends import BackendError, ConfigError, ConfigNotFoundError
from inspector.backends._config_files import MAX_CONFIG_BYTES
from inspector.backends._config_values import MAX_CONFIG_NODES, check_size


@pytest.fixture
def with_a(registry, make_backend):
    registry.register_module("a", make_backend("a"))
    return registry


def _load_in_thread(path: Path) -> BaseException | object:
    """``load_config(path)`` on a thread, waited for at most WAIT_S: a blocking read fails the test."""
    outcome: list[Any] = []

    def work() -> None:
        try:
            outcome.append(backends.load_config(path, activate=False))
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), f"load_config({path}) blocked"
    return outcome[0]


def test_a_fifo_is_refused_without_blocking(with_a, tmp_path):
    fifo = tmp_path / "train.yaml"
    os.mkfifo(fifo)
    outcome = _load_in_thread(fifo)
    assert isinstance(outcome, ConfigError)
    assert "is a FIFO (named pipe), not a config file" in str(outcome) and outcome.source == str(fifo)


def test_a_directory_is_refused(with_a, tmp_path):
    folder = tmp_path / "train.yaml"
    folder.mkdir()
    with pytest.raises(ConfigError, match=re.escape("is a directory, not a config file; give the path of a .yaml")):
        backends.load_config(folder)


def test_a_directory_without_a_suffix_is_named_as_a_directory(with_a, tmp_path):
    with pytest.raises(ConfigError, match="is a directory"):
        backends.load_config(tmp_path)


def test_a_character_device_is_refused_without_reading_it(with_a):
    outcome = _load_in_thread(Path("/dev/zero"))
    assert isinstance(outcome, ConfigError) and "is a character device" in str(outcome)


def test_a_file_that_is_not_utf8_names_the_byte(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    path.write_bytes("data:\n  dataset_type: café\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=re.escape("train.yaml is not UTF-8 text (byte 0xe9 at offset 25)")):
        backends.load_config(path)


def test_utf16_is_refused_and_a_utf8_byte_order_mark_is_accepted(with_a, tmp_path):
    path = tmp_path / "train.json"
    path.write_text('{"data": {"dataset_type": "a"}}', encoding="utf-16")
    with pytest.raises(ConfigError, match="is not UTF-8 text"):
        backends.load_config(path, activate=False)
    path.write_bytes(b"\xef\xbb\xbf" + b'{"data": {"dataset_type": "a"}}')
    assert backends.load_config(path, activate=False).data.dataset_type == "a"


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(with_a, tmp_path):
    path = tmp_path / "train.yaml"
    with path.open("wb") as file:
        file.truncate(MAX_CONFIG_BYTES + 1)  # sparse: no disk used
    with pytest.raises(ConfigError, match="a config may have at most 16,777,216"):
        backends.load_config(path)


def test_a_missing_file_is_a_config_error_and_a_file_not_found_error(with_a, tmp_path):
    with pytest.raises(ConfigNotFoundError, match="No config file at") as exc:
        backends.load_config(tmp_path / "absent.yaml")
    assert isinstance(exc.value, FileNotFoundError) and isinstance(exc.value, BackendError)
    assert exc.value.source == str(tmp_path / "absent.yaml")


def test_a_path_that_cannot_be_opened_is_a_config_error_naming_why(with_a, tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"Cannot open .*file/train\.yaml: Not a directory"):
        backends.load_config(tmp_path / "file" / "train.yaml")


def test_missing_pyyaml_says_it_is_needed_and_how_to_install_it(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text("data: {dataset_type: synthetic}\n")
    code = textwrap.dedent(
        f"""
        import sys
        sys.modules["yaml"] = None  # as if PyYAML were not installed: "import yaml" raises ImportError
        import inspector.examples
        from inspector.backends import ConfigError, load_config
        try:
            load_config({str(path)!r})
        except ConfigError as exc:
            print(str(exc).splitlines()[0])
            print(type(exc.__cause__).__name__)
        print(load_config({{"data": {{"dataset_type": "synthetic"}}}}).data.dataset_type)
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "Cannot read t.yaml: reading YAML needs PyYAML, which is not installed. Install it with: "
        "pip install pyyaml (or write the config as .toml or .json)."
    ), result.stderr
    assert lines[1] == "ModuleNotFoundError" and lines[2] == "synthetic"


# --- alias bombs and self-reference (NOTE [ Config size ]) --------------------------------


def _bomb(levels: int, width: int, where: str) -> str:
    lines = [f"    l0: &l0 [{', '.join(['x'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"    l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    body = "\n".join(lines)
    if where == "data":
        return f"data:\n  dataset_type: a\n  options:\n{body}\n"
    return f"data: {{dataset_type: a}}\nmodel:\n  nested:\n{body}\n"


@pytest.mark.parametrize("where", ["data", "model"])
def test_a_yaml_alias_bomb_is_refused_at_load(with_a, tmp_path, where):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb(levels=9, width=10, where=where))  # 10**9 values once expanded, ~1 KB on disk
    with pytest.raises(ConfigError, match="expands to more than 1,000,000 values") as exc:
        backends.load_config(path)
    assert exc.value.key.startswith("data.options.l" if where == "data" else "model.nested.l")
    assert backends.active_backend() is None


def test_shared_anchors_of_a_modest_size_are_fine_and_repr_is_bounded(with_a, tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text(_bomb(levels=3, width=10, where="data"))  # 1,110 values expanded
    cfg = backends.load_config(path)
    assert len(repr(cfg)) < 50_000 and cfg.data.options["l2"][0] is cfg.data.options["l1"]


def test_a_mapping_built_in_python_is_measured_the_same_way(with_a):
    leaf: list[Any] = list(range(10))
    for _ in range(7):
        leaf = [leaf] * 10
    with pytest.raises(ConfigError, match="expands to more than"):
        backends.load_config({"data": {"dataset_type": "a", "options": {"big": leaf}}})
    with pytest.raises(ConfigError, match="expands to more than"):
        backends.DataConfig("a", options={"big": leaf})


def test_a_config_that_contains_itself_is_refused(with_a):
    loop = yaml.safe_load("data: {dataset_type: a}\nmodel: &m\n  again: *m\n")
    with pytest.raises(ConfigError, match=re.escape("model.again contains itself")):
        backends.load_config(loop)


def test_a_config_nested_too_deeply_is_refused(with_a):
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(150):
        node["n"] = {}
        node = node["n"]
    with pytest.raises(ConfigError, match="nested deeper than 100 levels"):
        backends.load_config({"data": {"dataset_type": "a"}, "model": deep})


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)),
    max_leaves=30,
)


def _expanded(value: Any) -> int:
    """An independent count: every container and leaf, shared references counted each time."""
    if isinstance(value, dict):
        return 1 + sum(_expanded(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_expanded(v) for v in value)
    return 1


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(1, 4))
def test_check_size_counts_every_expanded_node(value, copies):
    shared = {"a": [value] * copies, "b": value}  # the same object reached several times
    assert check_size(shared) == _expanded(shared) == _expanded(json.loads(json.dumps(shared)))


@settings(max_examples=50, deadline=None)
@given(json_values)
def test_check_size_refuses_exactly_past_the_limit(value):
    size = _expanded(value)
    assert check_size(value, limit=size) == size
    if size > 1:
        with pytest.raises(ConfigError):
            check_size(value, limit=size - 1)


def test_the_default_limit_is_generous_for_real_configs():
    assert MAX_CONFIG_NODES >= 1_000_000
