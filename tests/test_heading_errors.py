"""benchmarks/heading_errors.py: a Heading policy's errors binned by time on the current goal."""

import math

import pytest
from project_scripts import load_script

from ase_humanoid.errors import ConfigError
from ase_humanoid.utils.checkpoint import load_checkpoint

HEADING = "pretrained/heading_amp_humanoid.pt"


def test_errors_by_time_on_goal_add_up_to_the_overall_ones():
    result = load_script("benchmarks/heading_errors.py").main([HEADING, "--envs", "4", "--seconds", "8", "--json"])
    # a high-level policy: sampled once per decision, every llc_steps control steps
    assert result["sampled_every_control_steps"] == load_checkpoint(HEADING)["agent"]["config"]["llc_steps"]
    rows = result["by_goal_steps"]
    assert rows[0]["goal_steps"] == [0, 15] and len(rows) >= 4  # 8 s: goals last 100-200 steps
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    for key in ("direction_error", "speed_error", "root_speed"):
        assert sum(r["share"] * r[key] for r in rows) == pytest.approx(result[key])
    assert all(0.0 <= r["direction_error"] <= math.pi for r in rows)
    # Started standing: on the first goal's first half second it has barely set off.
    assert rows[0]["root_speed"] < result["root_speed"]


def test_a_policy_of_another_task_is_refused():
    with pytest.raises(ConfigError, match="HumanoidASE policy"):
        load_script("benchmarks/heading_errors.py").main(["pretrained/ase_llc_amp_humanoid_walk.pt", "--envs", "2"])
