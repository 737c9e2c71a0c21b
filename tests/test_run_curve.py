"""benchmarks/run_curve.py: one point per epoch across resumed sittings, training hours from
the epochs' own durations, PNG and JSON written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import run_curve  # noqa: E402


def _record(epoch, length, rate=1000.0):
    return json.dumps({"epoch": epoch, "global_step": 3600 * epoch, "episode/length": length,
                       "perf/samples_per_s": rate, "train/task_reward_mean": 0.0})


def test_curve_of_a_resumed_run(tmp_path):
    lines = [_record(1, 10), _record(2, 20), _record(3, 30),
             _record(3, 31),  # epoch 3 logged again after a resume from its checkpoint
             "{torn line", _record(4, 40, rate=3600.0)]
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines) + "\n")
    points = run_curve.curve_points(run_curve.read_epochs(tmp_path / "metrics.jsonl"))
    assert [p["epoch"] for p in points] == [1, 2, 3, 4]
    assert points[2]["episode_length"] == 31
    # 3600 samples per epoch: 3.6 s each at 1000/s (epochs 1-3), 1 s at 3600/s (epoch 4)
    assert [p["hours"] for p in points] == [round(s / 3600, 4) for s in (3.6, 7.2, 10.8, 11.8)]
    assert run_curve.tail_summary(points, 2)["episode_length"] == 35.5
    out = tmp_path / "curve"
    assert run_curve.main([str(tmp_path), "--out", str(out), "--every", "2"]) == 0
    written = json.loads(out.with_suffix(".json").read_text())
    assert [p["epoch"] for p in written["points"]] == [2, 4] and written["epochs"] == 4
    assert out.with_suffix(".png").stat().st_size > 10_000


def test_run_without_metrics_is_an_error(tmp_path, capsys):
    assert run_curve.main([str(tmp_path), "--out", str(tmp_path / "x")]) == 1
    assert "no metrics.jsonl" in capsys.readouterr().err


def test_runs_side_by_side(tmp_path, capsys):
    for name, lengths in (("amp", (10, 40)), ("ase", (10, 20, 30))):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text(
            "\n".join(_record(e, length) for e, length in enumerate(lengths, start=1)) + "\n")
    out = tmp_path / "cmp"
    runs = [str(tmp_path / "amp"), str(tmp_path / "ase")]
    assert run_curve.main([*runs, "--labels", "AMP,ASE", "--out", str(out), "--every", "1"]) == 0
    written = json.loads(out.with_suffix(".json").read_text())
    assert [r["run"] for r in written["runs"]] == ["AMP", "ASE"]
    assert [r["epochs"] for r in written["runs"]] == [2, 3]
    assert [p["episode_length"] for p in written["runs"][1]["points"]] == [10, 20, 30]
    assert out.with_suffix(".png").stat().st_size > 10_000
    assert run_curve.main([*runs, "--labels", "AMP", "--out", str(out)]) == 1
    assert "--labels names 1 runs, 2 run folders given" in capsys.readouterr().err


def test_runs_compare_by_hours_of_training(tmp_path, monkeypatch):
    # two runs whose samples differ in kind: --x hours puts each epoch at its training time
    from matplotlib.axes import Axes

    for name, rate in (("slow", 1000.0), ("fast", 3600.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.jsonl").write_text("\n".join(_record(e, 10 * e, rate) for e in (1, 2)) + "\n")
    drawn, labels = [], []
    real_plot, real_xlabel = Axes.plot, Axes.set_xlabel
    monkeypatch.setattr(Axes, "plot", lambda ax, xs, ys, **kw: drawn.append((kw["label"], list(xs))) or real_plot(
        ax, xs, ys, **kw))
    monkeypatch.setattr(Axes, "set_xlabel", lambda ax, text, **kw: labels.append(text) or real_xlabel(ax, text, **kw))
    out = tmp_path / "cmp"
    assert run_curve.main([str(tmp_path / "slow"), str(tmp_path / "fast"), "--labels", "slow,fast",
                           "--x", "hours", "--out", str(out)]) == 0
    assert set(labels) == {"hours of training"}
    assert ("slow", [0.001, 0.002]) in drawn and ("fast", [round(1 / 3600, 4), round(2 / 3600, 4)]) in drawn
    assert out.with_suffix(".png").stat().st_size > 10_000
