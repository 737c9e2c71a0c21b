"""benchmarks/task_ceiling.py: Heading's and Location's metrics for an ideal character."""

import math

import pytest
import torch
from project_scripts import load_script

ceiling = load_script("benchmarks/task_ceiling.py")


def test_goal_timer_redraws_as_the_env_does():
    # As tests/test_tasks.py::test_goals_resample_on_schedule_and_metrics checks on the env: a goal
    # drawn with k = 2 holds for two control steps and the third step's pre-physics redraws it.
    settings = {"change_steps_min": 2, "change_steps_max": 2}
    countdown = torch.tensor([2])
    due = [bool(ceiling.goal_schedule(countdown, settings, torch.Generator())) for _ in range(7)]
    assert due == [False, False, True, False, True, False, True]


def test_location_bounds():
    settings = ceiling.task_settings("HumanoidLocation")
    still = ceiling.location_ceiling(0.0, settings, num_episodes=4000)
    # Standing still: the target's distance, uniform in a 20 m square around the root (mean
    # 0.7652 of its half-side), within 0.5 m about pi 0.25 / 400 of the time.
    assert still["final_distance_m"] == pytest.approx(0.7652 * settings["target_dist_max"], rel=0.03)
    assert still["success_rate"] < 0.01
    instant = ceiling.location_ceiling(1000.0, settings, num_episodes=500)
    assert instant["success_rate"] == 1.0 and instant["final_distance_m"] == pytest.approx(0.0, abs=1e-9)
    rates = [ceiling.location_ceiling(v, settings, num_episodes=2000)["success_rate"] for v in (0.5, 1.0, 2.0)]
    assert rates[0] < rates[1] < rates[2]
    # At the reward's own target speed (1 m/s) a perfect walker succeeds on under a quarter of the
    # goal periods: they last 3.3-6.7 s and the targets lie up to 14 m away.
    assert rates[1] < 0.25


def test_heading_bounds():
    settings = ceiling.task_settings("HumanoidHeading")
    mean_speed = (settings["target_speed_min"] + settings["target_speed_max"]) / 2
    frozen = ceiling.heading_ceiling(0.0, settings, num_episodes=4000)
    # Never turning: the offset stays uniform on the circle (mean pi/2) and the speed error is
    # v* (1 - cos offset) (mean v*).
    assert frozen["direction_error_rad"] == pytest.approx(math.pi / 2, rel=0.03)
    assert frozen["speed_error_m_s"] == pytest.approx(mean_speed, rel=0.03)
    instant = ceiling.heading_ceiling(1000.0, settings, num_episodes=200)
    assert instant["direction_error_rad"] < 1e-6 and instant["speed_error_m_s"] < 1e-6
    one, two = (ceiling.heading_ceiling(w, settings, num_episodes=2000) for w in (1.0, 2.0))
    assert two["direction_error_rad"] < one["direction_error_rad"] < frozen["direction_error_rad"]


def test_heading_by_acceleration_bounds():
    """The release's Heading lets a character redirect its velocity without turning its body:
    velocity changing at 1.5 m/s^2 averages about 0.30 rad, within the 0.35 rad target."""
    settings = ceiling.task_settings("HumanoidHeading")
    frozen = ceiling.heading_accel_ceiling(0.0, settings, num_episodes=4000)
    assert frozen["direction_error_rad"] == pytest.approx(math.pi / 2, rel=0.03)
    instant = ceiling.heading_accel_ceiling(1000.0, settings, num_episodes=200)
    assert instant["direction_error_rad"] < 1e-6 and instant["speed_error_m_s"] < 1e-6
    errors = [ceiling.heading_accel_ceiling(a, settings, num_episodes=2000)["direction_error_rad"] for a in (1.0, 1.5, 2.0)]
    assert errors[2] < errors[1] < errors[0]
    assert errors[1] == pytest.approx(0.30, abs=0.02) and errors[0] > 0.35
