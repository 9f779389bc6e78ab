"""The demo policy (``inspector.demos``), the one place the app and the command line ask."""

from __future__ import annotations

from inspector.backends import isolated_registry
from inspector.demos import load_demos, user_registered_anything
from inspector.dispatch import ImplRecord, Spec, default_registry, register_family
from inspector.dispatch.testing import isolated_dispatch


def test_nothing_of_the_users_own_loads_the_demos() -> None:
    with isolated_dispatch(keep_families=False), isolated_registry():
        assert not user_registered_anything()
        assert all(note.startswith("demo skipped") for note in load_demos(None))
        assert {"attention", "rotary"} <= set(default_registry().registered())


def test_a_family_of_the_users_own_keeps_the_demos_out_unless_asked() -> None:
    with isolated_dispatch(keep_families=False), isolated_registry():
        register_family("mine", [ImplRecord("mine", "only", lambda: 1, Spec.always())], "only")
        assert user_registered_anything()
        (note,) = load_demos(None)
        assert note.startswith("demos not loaded") and default_registry().registered() == ("mine",)
        assert load_demos(False) == (note,) and default_registry().registered() == ("mine",)
        load_demos(True)  # asked for: added, under free names only
        assert {"attention", "mine", "rotary"} <= set(default_registry().registered())


def test_a_demo_name_the_user_took_is_kept_and_said() -> None:
    with isolated_dispatch(keep_families=False), isolated_registry():
        register_family("attention", [ImplRecord("attention", "mine", lambda: 1, Spec.always())], "mine")
        notes = load_demos(True)
        assert default_registry().get_family("attention").origin == __name__
        assert any("kept your 'attention' family" in note for note in notes)
