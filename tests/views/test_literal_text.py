"""A ``$`` in a user's string is drawn as written: matplotlib never reads the inspector's figure text as mathtext."""

from __future__ import annotations

import io

import matplotlib.text
import pytest
import torch.utils.data

from inspector.loader.bench import profile_loader, sweep_loader
from inspector.views._figures import figure_to_png, key_above, new_figure, plain_math
from inspector.views.loader_profile import loop_figure, profile_figure, sweep_figure

MATH = r"cost $\foo{$"  # raises while drawing, were it mathtext


def drawn_literally(fig) -> bool:  # type: ignore[no-untyped-def]
    """Draw ``fig`` every way a user may (our PNG, Jupyter's savefig) and check each text stayed literal."""
    figure_to_png(fig)
    fig.savefig(io.BytesIO(), format="png")
    texts = fig.findobj(matplotlib.text.Text)
    return any("$" in t.get_text() for t in texts) and not any(t.get_parse_math() for t in texts)


def test_tick_labels_titles_and_keys_with_a_dollar_are_drawn_as_written() -> None:
    fig = new_figure()
    ax = fig.subplots()
    ax.barh([0, 1], [1, 2], label=MATH)
    ax.set_yticks([0, 1], [MATH, "plain"])
    ax.set_title(MATH)
    ax.set_xlabel(MATH)
    key_above(fig, *ax.get_legend_handles_labels())
    assert drawn_literally(fig)


def test_a_loader_profile_labelled_with_a_dollar_draws_its_figures() -> None:
    profile = profile_loader([{"x": 1}] * 4, batches=2, warmup=0, device=None, label=MATH, step=lambda b: None)
    assert drawn_literally(profile_figure([profile]))
    loop = loop_figure(profile)
    figure_to_png(loop)


def test_a_sweep_whose_setting_carries_a_dollar_draws_its_figure() -> None:
    def make_loader(batch_size: int, tag: str) -> torch.utils.data.DataLoader:
        return torch.utils.data.DataLoader(list(range(16)), batch_size=batch_size)

    result = sweep_loader(make_loader, batches=2, warmup=0, time_cap_s=5.0, batch_size=[4], tag=[MATH])
    assert drawn_literally(sweep_figure(result))


def test_a_log_axis_labels_its_ticks_in_plain_text_not_raw_mathtext() -> None:
    fig = new_figure()
    ax = fig.subplots()
    ax.plot([0.2, 300], [1e-3, 2e5])
    ax.set_xscale("log")
    ax.set_yscale("log")
    figure_to_png(fig)
    labels = [t.get_text() for t in [*ax.get_xticklabels(), *ax.get_yticklabels()] if t.get_text()]
    assert "10⁵" in labels and "10⁻³" in labels and "10⁰" in labels
    assert not [label for label in labels if "$" in label or "mathdefault" in label]


@pytest.mark.parametrize(
    ("mathtext", "plain"),
    [
        (r"$\mathdefault{10^{5}}$", "10⁵"),
        (r"$\mathdefault{10^{-12}}$", "10⁻¹²"),
        (r"$\mathdefault{2\times10^{-3}}$", "2×10⁻³"),
        (r"$\mathdefault{1}$", "1"),
        ("cost $5", "cost $5"),
        ("$", "$"),
        ("", ""),
    ],
)
def test_plain_math_rewrites_only_a_whole_mathtext_label(mathtext: str, plain: str) -> None:
    assert plain_math(mathtext) == plain
