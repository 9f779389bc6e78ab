"""The backend registry: registration, lookup by member or name, options, and stable members."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
import torch.distributed.rpc as torch_rpc

from inspector.rpc import (
    BackendType,
    BackendValue,
    DuplicateBackendError,
    UnknownBackendOptionError,
    UnknownRpcBackendError,
    backend_registered,
    construct_rpc_backend_options,
    init_backend,
    register_backend,
    registered_backends,
    scoped_backends,
)

pytestmark = pytest.mark.usefixtures("backends")


def construct(rpc_timeout: float, init_method: str, *, flavour: str = "plain") -> dict[str, Any]:
    return {"rpc_timeout": rpc_timeout, "init_method": init_method, "flavour": flavour}


def init(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
    return ("started", args, kwargs)


def test_tensorpipe_is_built_in_and_reads_like_an_enum_member() -> None:
    member = BackendType.TENSORPIPE
    assert repr(member) == "BackendType.TENSORPIPE" and member.name == "TENSORPIPE"
    assert isinstance(member.value, BackendValue)
    assert list(BackendType) == [member] and len(BackendType) == 1
    assert BackendType["TENSORPIPE"] is member and dict(BackendType.__members__) == {"TENSORPIPE": member}
    assert backend_registered("TENSORPIPE") and not backend_registered("STUB")


def test_register_backend_returns_a_member_carrying_both_handlers() -> None:
    member = register_backend("STUB", construct, init)
    assert member is BackendType.STUB is BackendType["STUB"]
    assert member.value.construct_rpc_backend_options_handler is construct
    assert member.value.init_backend_handler is init
    assert repr(member) == "BackendType.STUB" and backend_registered("STUB")
    assert [m.name for m in BackendType] == ["TENSORPIPE", "STUB"]


def test_registering_a_taken_name_raises_runtime_error_with_torchs_wording() -> None:
    register_backend("STUB", construct, init)
    with pytest.raises(RuntimeError, match=r"^RPC backend STUB: already registered\n") as caught:
        register_backend("STUB", construct, init)
    assert isinstance(caught.value, DuplicateBackendError)
    assert caught.value.name == "STUB" and caught.value.known == ["TENSORPIPE", "STUB"]


def test_members_obtained_before_a_registration_keep_working_everywhere() -> None:
    stale = BackendType.TENSORPIPE
    register_backend("STUB", construct, init)
    assert stale is BackendType.TENSORPIPE and isinstance(stale, BackendType) and stale in BackendType
    options = construct_rpc_backend_options(stale, rpc_timeout=5.0)
    assert isinstance(options, torch_rpc.TensorPipeRpcBackendOptions) and options.rpc_timeout == 5.0


def test_same_handler_pair_under_two_names_gives_two_members() -> None:
    first = register_backend("ONE", construct, init)
    second = register_backend("TWO", construct, init)
    register_backend("THREE", construct, init)
    assert first is not second and [m.name for m in BackendType][-3:] == ["ONE", "TWO", "THREE"]


def test_backend_may_be_given_by_name() -> None:
    register_backend("STUB", construct, init)
    assert construct_rpc_backend_options("STUB", flavour="spicy") == {
        "rpc_timeout": 60.0,
        "init_method": "env://",
        "flavour": "spicy",
    }
    assert init_backend("STUB", 1, store="s") == ("started", (1,), {"store": "s"})


def test_unknown_backend_name_raises_value_error_listing_registered_ones() -> None:
    with pytest.raises(ValueError, match=r"Unknown RPC backend 'NOPE'\. Known: \['TENSORPIPE'\]") as caught:
        construct_rpc_backend_options("NOPE")
    assert isinstance(caught.value, UnknownRpcBackendError) and isinstance(caught.value, KeyError)
    assert caught.value.name == "NOPE" and caught.value.known == ["TENSORPIPE"]
    with pytest.raises(UnknownRpcBackendError):
        init_backend("NOPE")
    with pytest.raises(KeyError, match="NOPE"):
        BackendType["NOPE"]
    with pytest.raises(AttributeError, match="Known: \\['TENSORPIPE'\\]"):
        BackendType.NOPE  # noqa: B018


def test_a_backend_that_is_neither_member_nor_name_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"got int\.\nregistered = \['TENSORPIPE'\]"):
        construct_rpc_backend_options(42)


def test_unknown_option_is_a_type_error_naming_it_where_torch_drops_it() -> None:
    with pytest.raises(TypeError, match=r"does not take the option\(s\) \['num_worker_thread'\]") as caught:
        construct_rpc_backend_options(BackendType.TENSORPIPE, num_worker_thread=3)
    assert isinstance(caught.value, UnknownBackendOptionError)
    assert caught.value.backend == "TENSORPIPE" and caught.value.unknown == ["num_worker_thread"]
    assert "num_worker_threads" in caught.value.accepted and "device_maps" in caught.value.accepted
    register_backend("STUB", construct, init)
    with pytest.raises(UnknownBackendOptionError, match="flavor"):
        construct_rpc_backend_options("STUB", flavor="spicy")


def test_handlers_taking_any_keyword_receive_every_option() -> None:
    register_backend("OPEN", lambda timeout, method, **kw: kw, init)
    assert construct_rpc_backend_options("OPEN", anything=1) == {"anything": 1}


def test_tensorpipe_options_honour_device_maps_and_devices() -> None:
    options = construct_rpc_backend_options(
        "TENSORPIPE",
        rpc_timeout=12.0,
        init_method="tcp://127.0.0.1:1",
        num_worker_threads=4,
        device_maps={"worker1": {"cuda:0": "cuda:1", "cpu": "cpu"}},
        devices=["cuda:0"],
    )
    assert isinstance(options, torch_rpc.TensorPipeRpcBackendOptions)
    assert (options.rpc_timeout, options.init_method, options.num_worker_threads) == (12.0, "tcp://127.0.0.1:1", 4)
    assert {str(k): str(v) for k, v in options.device_maps["worker1"].items()} == {"cuda:0": "cuda:1", "cpu": "cpu"}
    assert [str(d) for d in options.devices] == ["cuda:0"]


def test_torchs_own_members_are_accepted() -> None:
    options = construct_rpc_backend_options(torch_rpc.BackendType.TENSORPIPE, rpc_timeout=7.0)
    assert options.rpc_timeout == 7.0


def test_registered_backends_lists_ours_then_torchs() -> None:
    register_backend("STUB", construct, init)
    rows = registered_backends()
    assert [(r.registry, r.name) for r in rows[:2]] == [("inspector", "TENSORPIPE"), ("inspector", "STUB")]
    assert ("torch", "TENSORPIPE") in [(r.registry, r.name) for r in rows]
    assert rows[1].construct_handler.endswith("test_rpc_registry.construct")
    assert all(r.registry == "inspector" for r in registered_backends(include_torch=False))


def test_scoped_backends_forgets_registrations_but_members_keep_their_handlers() -> None:
    with scoped_backends():
        member = register_backend("TEMP", construct, init)
    assert not backend_registered("TEMP") and [m.name for m in BackendType] == ["TENSORPIPE"]
    assert construct_rpc_backend_options(member)["flavour"] == "plain"


def test_members_are_read_only_and_pickle_by_name() -> None:
    with pytest.raises(AttributeError, match="read-only"):
        BackendType.TENSORPIPE.name = "OTHER"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(BackendType.TENSORPIPE)) is BackendType.TENSORPIPE


@pytest.mark.parametrize("name", ["", None, 3])
def test_a_backend_name_must_be_a_non_empty_string(name: Any) -> None:
    with pytest.raises(TypeError, match="non-empty str"):
        register_backend(name, construct, init)


def test_init_rpc_checks_its_name_and_backend_before_touching_torch() -> None:
    from inspector.rpc import init_rpc

    for bad in ("", "has space", "x" * 128, 7):
        with pytest.raises(ValueError, match="Invalid worker name"):
            init_rpc(bad)  # type: ignore[arg-type]
    with pytest.raises(UnknownRpcBackendError, match="Known: \\['TENSORPIPE'\\]"):
        init_rpc("worker0", backend="NOPE", rank=0, world_size=1)
