"""benchmarks/train_throughput.py --idle-rounds: env-only stepping and timed epochs in rounds,
each round's figures and the median ratio, on a real (tiny) AMP training."""

from __future__ import annotations

import json
import statistics

import pytest
from project_scripts import load_script


def test_idle_rounds_report_each_round_and_the_median_ratio(capsys):
    script = load_script("benchmarks/train_throughput.py")
    assert script.main(["--task", "HumanoidAMP", "--envs", "8", "--epochs", "1", "--idle-rounds", "3",
                        "--json", "task.env.max_episode_length=20"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rounds = result["rounds"]
    assert len(rounds) == 3 and len(result["per_epoch_samples_per_s"]) == 3  # one timed epoch each
    for figures in rounds:
        assert figures["samples_per_s"] > 0 and figures["env_only_samples_per_s"] > 0
        assert figures["ratio_to_env_only"] == pytest.approx(figures["samples_per_s"]
                                                             / figures["env_only_samples_per_s"])
    assert result["ratio_to_env_only_median"] == statistics.median(r["ratio_to_env_only"] for r in rounds)
    assert result["env_only_samples_per_s"] == statistics.median(r["env_only_samples_per_s"] for r in rounds)


def test_idle_rounds_refuse_the_loaded_and_compare_modes(capsys):
    script = load_script("benchmarks/train_throughput.py")
    with pytest.raises(SystemExit):
        script.main(["--idle-rounds", "2", "--busy", "1"])
    assert "--idle-rounds measures the plain idle mode" in capsys.readouterr().err
