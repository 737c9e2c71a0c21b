"""The console line: progress, time spent and the time left to max_epochs."""

from __future__ import annotations

import io
from ase_humanoid.utils.logger import EpochClock, TrainingLogger, format_duration


def test_format_duration():
    assert format_duration(0) == "0:00"
    assert format_duration(59.6) == "1:00"
    assert format_duration(3599) == "59:59"
    assert format_duration(3600 * 14 + 61) == "14:01:01"


def test_epoch_clock_follows_the_recent_pace():
    clock = EpochClock(window=4)
    assert clock.seconds_left(0, 10) is None  # no pace before the first epoch
    clock.start(100, 0.0)  # a resumed run: epoch 100 at t=0
    for epoch in range(101, 105):
        clock.tick(epoch, 2.0 * (epoch - 100))  # 2 s per epoch
    assert clock.seconds_per_epoch() == 2.0
    assert clock.seconds_left(104, 110) == 12.0
    for epoch in range(105, 109):
        clock.tick(epoch, 8.0 + 5.0 * (epoch - 104))  # the machine got busy: 5 s per epoch
    assert clock.seconds_per_epoch() == 5.0  # the window holds only the recent epochs
    assert clock.seconds_left(110, 110) == 0.0


def test_console_line_shows_time_left(tmp_path):
    stream = io.StringIO()
    times = iter([1000.0, 1010.0, 1020.0])  # created, epoch 1 logged, epoch 2 logged
    logger = TrainingLogger(tmp_path, max_epochs=5, stream=stream, time_source=lambda: next(times))
    logger.log(1, 10, {"perf/samples_per_s": 1.0})
    logger.log(2, 20, {"perf/samples_per_s": 1.0})
    logger.close()
    legend, first, second = stream.getvalue().splitlines()
    assert legend.startswith("columns: len = mean episode length")
    assert first.endswith("0:10  left 0:40")  # 10 s per epoch, 4 epochs to go
    assert second.endswith("0:20  left 0:30")


def test_console_line_counts_down_a_wall_clock_budget(tmp_path):
    """learn(time_budget_s=...) (benchmarks/learn_amp_walk.py --minutes) stops before max_epochs:
    the time left is the budget's, not that of a million epochs."""
    stream = io.StringIO()
    times = iter([1000.0, 1010.0, 1020.0])
    logger = TrainingLogger(tmp_path, max_epochs=1_000_000, stream=stream, time_source=lambda: next(times))
    logger.stop_time = 1000.0 + 60.0
    logger.log(1, 10, {})
    logger.stop_time = 1000.0 + 15.0  # past by the next epoch: nothing left
    logger.log(2, 20, {})
    logger.close()
    _, first, second = stream.getvalue().splitlines()
    assert first.endswith("0:10  left 0:50")
    assert second.endswith("0:20  left 0:00")


def test_epoch_clock_leaves_out_a_pause():
    """A stopped process (SIGSTOP, a sleeping laptop) is not the training's pace."""
    clock = EpochClock(window=20)
    clock.start(0, 0.0)
    now = 0.0
    for epoch in range(1, 21):
        now += 360.0 if epoch == 10 else 2.0  # one 6-minute pause among 2-second epochs
        clock.tick(epoch, now)
    assert clock.seconds_per_epoch() == 2.0
    assert clock.seconds_left(20, 1820) == 3600.0


def test_console_columns_are_fixed_explained_and_hide_what_does_not_exist(tmp_path):
    """A legend names each column once; every line has every column ("-" before a value exists,
    as the episode length before the first episode ends); a hidden stat (the task reward in
    pre-training, where there is none) is never shown."""
    stream = io.StringIO()
    logger = TrainingLogger(tmp_path, max_epochs=3, stream=stream, hidden_keys=("train/task_reward_mean",))
    logger.log(1, 10, {"train/task_reward_mean": 0.0, "train/disc_reward_mean": 0.5, "perf/samples_per_s": 100.0})
    logger.log(2, 20, {"episode/length": 31.0, "train/disc_reward_mean": 0.6, "perf/samples_per_s": 110.0})
    logger.close()
    legend, first, second = stream.getvalue().splitlines()
    assert "style = style reward" in legend and "task =" not in legend and "enc =" not in legend
    assert "len -  style 0.500  sps 100" in first and "task" not in first
    assert "len 31  style 0.600  sps 110" in second


def test_every_finished_run_ends_with_a_summary_and_commands_that_work(tmp_path):
    from ase_humanoid.app import end_of_run_summary
    from ase_humanoid.config import compose_config

    text = end_of_run_summary(compose_config(["task=HumanoidHeading"]), tmp_path / "my run", 100, 409600)
    assert "done: HumanoidHeading (hrl) trained 100 epochs, 409,600 samples" in text
    assert f"resume=true run_dir='{tmp_path / 'my run'}' max_epochs=200" in text  # quoted: pastes as is
    assert "benchmarks/task_policy.py" in text
