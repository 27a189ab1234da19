"""`dxp calibrate` checks every argument before any evaluation and names the flags; no
stale figures; figure ticks and argument errors of the plotting helpers (CLI review,
sixteenth session)."""

from __future__ import annotations

import numpy as np
import pytest

from dxp_plugins.cli import main

SMALL = ["--vocab-size", "1000", "--words", "5", "--samples", "10", "--no-figures"]


def test_every_epsilon_is_checked_before_any_evaluation(tmp_path, capsys):
    # 5 is evaluated (and its status line printed) before 800 is refused.
    code = main(["calibrate", "--epsilons", "5,800", "--out", str(tmp_path / "o"), *SMALL])
    err = capsys.readouterr().err
    assert code == 1
    assert "epsilon=5" not in err  # nothing computed before the refusal
    assert "--epsilons" in err


@pytest.mark.parametrize(
    ("extra", "flag"),
    [
        (["--max-n-w", "1.5"], "--max-n-w"),
        (["--min-s-w", "0"], "--min-s-w"),
        (["--word-pool", "0"], "--word-pool"),
        (["--min-s-w", "50"], "--samples"),  # unreachable with 10 draws
        (["--method", "exact"], "--method monte_carlo"),
        (["--epsilons", "5,800", "--max-n-w", "0.9"], "--epsilons"),
    ],
)
def test_errors_name_the_command_line_flags(tmp_path, capsys, extra, flag):
    epsilons = [] if "--epsilons" in extra else ["--epsilons", "5"]  # given once
    argv = ["calibrate", *epsilons, "--out", str(tmp_path / "o"), *SMALL, *extra]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err, err


def test_unreachable_target_refused_before_any_draw(tmp_path, capsys):
    argv = ["calibrate", "--epsilons", "5", "--out", str(tmp_path / "o"), *SMALL, "--min-s-w", "50"]
    assert main(argv) == 1
    assert "epsilon=5" not in capsys.readouterr().err


def test_no_figures_does_not_leave_stale_figures(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "nw_sw_curves.png").write_bytes(b"old run")
    argv = ["calibrate", "--mechanism", "tem", "--epsilons", "1", "--out", str(out), *SMALL]
    assert main(argv) == 0
    assert not (out / "nw_sw_curves.png").exists()


def test_a_run_without_figures_says_which_old_ones_it_removed(tmp_path, capsys):
    out = tmp_path / "o"
    argv = ["calibrate", "--mechanism", "tem", "--epsilons", "1", "--out", str(out)]
    argv += ["--vocab-size", "1000", "--words", "5", "--samples", "10"]
    assert main(argv) == 0
    assert (out / "nw_sw_curves.png").is_file() and (out / "nw_sw_histograms.png").is_file()
    capsys.readouterr()
    assert main([*argv, "--no-figures"]) == 0
    assert "removed the previous run's nw_sw_histograms.png, nw_sw_curves.png" in (
        capsys.readouterr().out
    )
    assert not list(out.glob("*.png"))


def test_the_summary_records_the_noise_seed(tmp_path):
    import json

    out = tmp_path / "o"
    argv = ["calibrate", "--mechanism", "tem", "--epsilons", "1", "--out", str(out), *SMALL]
    assert main([*argv, "--seed", "3"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seed"] == 3 and summary["embeddings"]["params"] == {}


def test_an_empty_out_is_refused(capsys):
    assert main(["calibrate", "--epsilons", "1", "--out", "", *SMALL]) == 1
    assert "--out must name a folder" in capsys.readouterr().err


def test_crowded_epsilon_ticks_are_not_all_labelled():
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from dxp_plugins.plotting import _epsilon_ticks

    axis = Figure().subplots()
    _epsilon_ticks(axis, [2, 3, 5, 5.2149, 5.4397, 5.9160, 10])
    labels = [text.get_text() for text in axis.get_xticklabels()]
    assert labels[:3] == ["2", "3", "5"] and labels[-1] == "10"
    assert "" in labels[3:6]  # the bisection points between 5 and 10 are ticks, not labels
    assert "5.91600" not in labels and all(len(label) <= 4 for label in labels)


def test_histograms_name_the_form_they_take(glove_5k):
    from dxp_plugins import Madlib, calibration, plotting

    stats = calibration.plausible_deniability(Madlib(glove_5k, 10.0), ["hockey"], n_samples=20)
    for wrong in ({"a": [stats]}, stats, [np.float64(1.0)]):
        with pytest.raises(TypeError, match="list of PlausibleDeniability results"):
            plotting.deniability_histograms(wrong)


def test_choose_epsilon_refuses_an_unreachable_target_before_any_draw_under_auto(glove_5k):
    """The API checked reachability before the first draw only for method='monte_carlo';
    under 'auto' a whole first epsilon was drawn first."""
    from dxp_plugins import Madlib, calibration

    drawn = []

    def factory(epsilon):
        mechanism = Madlib(glove_5k, epsilon)
        real = mechanism.privatize_ids
        mechanism.privatize_ids = lambda ids: drawn.append(len(ids)) or real(ids)
        return mechanism

    with pytest.raises(ValueError, match="min_s_w=50 cannot be met by Monte Carlo"):
        calibration.choose_epsilon(factory, ["hockey", "team"], min_s_w=50, n_samples=10)
    assert drawn == []


def test_the_seeded_warning_is_printed_once(tmp_path, capsys):
    """Each epsilon's mechanism warned from another line of calibrate, so Python's filter
    printed the same seeded-randomness warning twice for three epsilons (open work 12)."""
    argv = ["calibrate", "--epsilons", "5,10,20", "--seed", "1", "--out", str(tmp_path / "o")]
    assert main([*argv, *SMALL, "--method", "monte_carlo"]) == 0
    err = capsys.readouterr().err
    assert err.count("seeded randomness") == 1, err
