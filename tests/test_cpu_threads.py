"""The update's thread count follows measured update times (issue 22), and core counting sees
affinity masks and container quotas."""

from pathlib import Path

import pytest

from ase_humanoid.utils.cpu_threads import UpdateThreadChooser, available_cores, cgroup_cpu_limit


def run_updates(chooser: UpdateThreadChooser, seconds_for, count: int) -> list[int]:
    """Drive `count` updates; `seconds_for(threads, update_index)` is what each would take."""
    used = []
    for index in range(count):
        threads = chooser.next_threads()
        chooser.record(threads, seconds_for(threads, index))
        used.append(threads)
    return used


def test_idle_machine_keeps_every_core_apart_from_probes():
    chooser = UpdateThreadChooser(2, probe_every=16)
    used = run_updates(chooser, lambda threads, _: 0.3 if threads == 2 else 0.6, 64)
    assert used[:3] == [2, 2, 1]  # warm-up, then each count timed once
    assert used[3:].count(1) == sum(1 for i in range(3, 64) if i % 16 == 0)  # only the probes
    assert chooser.best() == 2


def test_switches_to_one_thread_when_load_appears_and_back_when_it_goes():
    chooser = UpdateThreadChooser(2, probe_every=8)

    def seconds(threads, index):
        loaded = 20 <= index < 60  # a busy process beside the training in these updates
        if threads == 2:
            return 1.5 if loaded else 0.3  # the 2-thread update waits on a descheduled sibling
        return 0.7 if loaded else 0.6

    used = run_updates(chooser, seconds, 90)
    assert set(used[5:20]) <= {2, 1} and used[5:20].count(2) > used[5:20].count(1)
    # within one probe interval (plus the median window) of the load appearing, 1 thread wins
    assert used[40:60].count(1) > 15
    # and after the load is gone, every core again
    assert used[80:90].count(2) >= 8


def test_warm_up_update_is_not_timed():
    chooser = UpdateThreadChooser(4)
    chooser.record(chooser.next_threads(), 100.0)  # first-call allocations
    chooser.record(chooser.next_threads(), 1.0)
    chooser.record(chooser.next_threads(), 2.0)
    assert list(chooser.seconds[4]) == [1.0] and chooser.best() == 4


def test_one_core_has_nothing_to_choose():
    chooser = UpdateThreadChooser(1)
    assert run_updates(chooser, lambda *_: 1.0, 20) == [1] * 20
    with pytest.raises(ValueError):
        UpdateThreadChooser(0)


def test_container_quota_caps_the_core_count(tmp_path: Path):
    cpu_max = tmp_path / "cpu.max"
    cpu_max.write_text("150000 100000\n")
    assert cgroup_cpu_limit(cpu_max) == 1.5
    cpu_max.write_text("max 100000\n")
    assert cgroup_cpu_limit(cpu_max) is None
    cpu_max.write_text("garbage")
    assert cgroup_cpu_limit(cpu_max) is None
    assert cgroup_cpu_limit(tmp_path / "missing") is None
    assert 1 <= available_cores()


def test_runner_reports_the_thread_count_it_used(tmp_path):
    """A real (tiny) training: each epoch's metrics carry the update's thread count, and with
    adapt_update_threads the first three use all, all, then one thread."""
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config(["task=HumanoidAMP", "num_envs=4", "train.params.horizon_length=4",
                          "train.params.amp_obs_demo_buffer_size=64", "train.params.amp_replay_buffer_size=64",
                          "train.params.amp_minibatch_size=16", "num_threads=1", "update_threads=2"])
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    runner = Runner(env, agent, tmp_path, config={}, max_epochs=0, save_every=0, is_main=False,
                    update_threads=int(cfg.update_threads), adapt_update_threads=bool(cfg.adapt_update_threads),
                    quality_every=0)
    runner.obs = env.reset()
    used = []
    for _ in range(3):
        runner.collect_rollout()
        runner.update_agent()
        used.append(runner.last_update_threads)
    env.close()
    assert used == [2, 2, 1]
