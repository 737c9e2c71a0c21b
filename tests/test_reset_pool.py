"""Reference-state resets drawn ahead in batches (`envs/reset_pool.py` DrawAhead), the env's
`reset_pool_size` setting, its checkpointing, and precomputed kinematics handed to a backend."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from ase_humanoid.envs import env_class, make_env, task_names
from ase_humanoid.envs.checkpointing import env_state_dict, load_env_state_dict
from ase_humanoid.envs.reset_plan import DEFAULT_ROOT_HEIGHT
from ase_humanoid.envs.reset_pool import DrawAhead
from ase_humanoid.errors import ConfigError
from ase_humanoid.robots.description import load_robot
from ase_humanoid.robots.kinematics import articulation_state, body_state_from_qpos
from ase_humanoid.sim.mujoco_cpu import MujocoCpuBackend
from ase_humanoid.utils import rotations as rot

MOTIONS = Path(__file__).resolve().parents[1] / "motions"
CARTWHEEL = MOTIONS / "amp_humanoid" / "amp_humanoid_cartwheel.npy"
LOCOMOTION = MOTIONS / "dataset_amp_humanoid_locomotion.yaml"  # walk, run: two clips
FAST = dict(num_threads=1, seed=0)
ASE_FAST = dict(fall_pool_size=4, fall_steps=5, **FAST)


# ---- DrawAhead -----------------------------------------------------------------------------------


class CountingDraw:
    """A draw function handing out consecutive integers, recording the size of every call."""

    def __init__(self):
        self.calls: list[int] = []
        self.next_value = 0

    def __call__(self, count: int) -> dict:
        self.calls.append(count)
        values = torch.arange(self.next_value, self.next_value + count)
        self.next_value += count
        return {"value": values, "pair": torch.stack([values, -values], dim=-1)}


class RandomDraw:
    """A draw function of random rows from its own generator (like the env's reference draws)."""

    def __init__(self, seed: int):
        self.generator = torch.Generator().manual_seed(seed)

    def __call__(self, count: int) -> dict:
        return {"x": torch.randn(count, 3, generator=self.generator),
                "k": torch.randint(0, 100, (count,), generator=self.generator)}


def test_draw_ahead_hands_out_rows_once_in_order():
    draw = CountingDraw()
    pool = DrawAhead(draw, size=5)
    assert draw.calls == []  # nothing is drawn before the first take
    taken = []
    for n in (2, 2, 1):  # exactly one batch
        batch = pool.take(n)
        assert batch["value"].shape == (n,) and batch["pair"].shape == (n, 2)
        assert torch.equal(batch["pair"][:, 1], -batch["value"])  # rows of all fields stay aligned
        taken += batch["value"].tolist()
    assert taken == [0, 1, 2, 3, 4]
    assert draw.calls == [5] and pool.available == 0
    # the next take starts a new batch, continuing where the draws left off
    assert pool.take(3)["value"].tolist() == [5, 6, 7]
    assert draw.calls == [5, 5] and pool.available == 2


def test_draw_ahead_refills_when_too_few_rows_remain():
    draw = CountingDraw()
    pool = DrawAhead(draw, size=5)
    assert pool.take(3)["value"].tolist() == [0, 1, 2]
    # 2 left but 3 wanted: the rest (3, 4) is dropped and a new batch of 5 is drawn
    assert pool.take(3)["value"].tolist() == [5, 6, 7]
    assert draw.calls == [5, 5] and pool.available == 2
    assert pool.take(2)["value"].tolist() == [8, 9]
    assert draw.calls == [5, 5] and pool.available == 0


def test_draw_ahead_take_larger_than_size():
    draw = CountingDraw()
    pool = DrawAhead(draw, size=4)
    pool.take(1)
    batch = pool.take(9)  # more than a whole batch: one batch of exactly 9
    assert batch["value"].tolist() == list(range(4, 13))
    assert draw.calls == [4, 9] and pool.available == 0
    assert pool.take(1)["value"].tolist() == [13]  # back to batches of `size`
    assert draw.calls == [4, 9, 4] and pool.available == 3


def test_draw_ahead_take_zero():
    draw = CountingDraw()
    pool = DrawAhead(draw, size=3)
    empty = pool.take(0)
    assert empty["value"].shape == (0,) and empty["pair"].shape == (0, 2)
    # an empty take consumes nothing: the first rows are still handed out next
    assert pool.take(2)["value"].tolist() == [0, 1]
    calls = list(draw.calls)
    assert pool.take(0)["value"].numel() == 0
    assert pool.available == 1 and draw.calls == calls  # no draw, nothing consumed
    assert pool.take(1)["value"].tolist() == [2]


def test_draw_ahead_rejects_empty_size():
    with pytest.raises(ValueError, match="size"):
        DrawAhead(CountingDraw(), size=0)


def test_draw_ahead_state_dict_round_trip():
    """A pool loaded from another's state_dict (with its draw function's state) hands out the
    same rows as the original from then on, through refills."""
    draw_a = RandomDraw(seed=1)
    a = DrawAhead(draw_a, size=4)
    first = a.take(3)
    state = a.state_dict()
    generator_state = draw_a.generator.get_state()
    # the state holds exactly the rows not handed out yet, as copies
    assert state["batch"]["x"].shape == (1, 3)
    remaining = state["batch"]["x"].clone()

    draw_b = RandomDraw(seed=99)
    b = DrawAhead(draw_b, size=4)
    b.load_state_dict(state)
    draw_b.generator.set_state(generator_state)
    assert b.available == a.available == 1
    for n in (1, 2, 5, 3, 0, 4):
        batch_a, batch_b = a.take(n), b.take(n)
        assert batch_a.keys() == batch_b.keys()
        for name in batch_a:
            assert torch.equal(batch_a[name], batch_b[name]), (n, name)
        assert a.available == b.available
    assert torch.equal(state["batch"]["x"], remaining)  # later takes did not touch the saved rows
    assert not torch.equal(first["x"][-1:], remaining)

    # a pool that never drew saves nothing and draws on its first take after loading
    fresh = DrawAhead(RandomDraw(seed=5), size=2)
    loaded = DrawAhead(RandomDraw(seed=5), size=2)
    loaded.load_state_dict(fresh.state_dict())
    assert loaded.available == 0
    assert torch.equal(loaded.take(2)["x"], fresh.take(2)["x"])


# ---- env setting ---------------------------------------------------------------------------------


@pytest.mark.parametrize("task", task_names())
def test_reset_pool_size_config(task):
    assert env_class(task).config_class().reset_pool_size == 1024
    with pytest.raises(ConfigError, match="reset_pool_size"):
        make_env(task, num_envs=1, reset_pool_size=-1, **FAST)


def test_reset_pool_follows_config():
    default = make_env("HumanoidAMP", num_envs=1, motion_file=str(CARTWHEEL), **FAST)
    assert default.reset_draws.size == 1024
    assert make_env("HumanoidAMP", num_envs=1, motion_file=str(CARTWHEEL), reset_pool_size=0,
                    **FAST).reset_draws is None
    # without a MotionLib (state_init Default) the pool draws standing poses
    standing = make_env("HumanoidAMP", num_envs=2, state_init="Default", reset_pool_size=4, **FAST)
    standing.reset()
    assert standing.reset_draws.available == 2
    torch.testing.assert_close(standing.sim.state.root_pos[:, 2], torch.full((2,), DEFAULT_ROOT_HEIGHT))
    assert torch.equal(standing.sim.state.dof_pos, torch.zeros(2, standing.num_actions))


def record_time_draws(env) -> list:
    """Record (motion_ids, times) of every random time the env's MotionLib draws."""
    draws = []
    sample_time = env.motion_lib.sample_time

    def recording(motion_ids, *args, **kwargs):
        times = sample_time(motion_ids, *args, **kwargs)
        draws.append((motion_ids.clone(), times.clone()))
        return times

    env.motion_lib.sample_time = recording
    return draws


def assert_reference_reset(env, motion_ids, times):
    """The env's humanoids and AMP histories are the clips' states at `times` and t - k dt."""
    steps, per = env.num_amp_obs_steps, env.num_amp_obs_per_step
    demo_times = times.unsqueeze(-1) - env.control_dt * torch.arange(steps, dtype=times.dtype)
    demo = env.amp_obs_from_motion(motion_ids.repeat_interleave(steps), demo_times.reshape(-1))
    torch.testing.assert_close(env.amp_history, demo.reshape(-1, steps, per), atol=1e-3, rtol=0)
    torch.testing.assert_close(env.amp_history[:, 0], env.amp_obs_from_sim(), atol=1e-4, rtol=0)
    state = env.motion_lib.get_motion_state(motion_ids, times, body_states=False)
    torch.testing.assert_close(env.sim.state.root_pos, state.root_pos, atol=1e-6, rtol=0)
    torch.testing.assert_close(env.sim.state.dof_pos, state.dof_pos, atol=1e-6, rtol=0)


@pytest.mark.parametrize("pool_size", [0, 8])
def test_random_init_reference_resets_match_demo(pool_size):
    """Drawn on demand or from the pool, a Random reset starts the humanoid in the clip's state
    with the demo AMP history of that clip and time; the pool's rows are used in order."""
    env = make_env("HumanoidAMP", num_envs=3, motion_file=str(LOCOMOTION), state_init="Random",
                   reset_pool_size=pool_size, **FAST)
    draws = record_time_draws(env)
    clips_used = set()
    for reset in range(3):
        env.reset()
        if pool_size == 0:
            assert env.reset_draws is None
            assert len(draws) == reset + 1  # one draw of 3 per reset
            motion_ids, times = draws[-1]
        else:
            # resets 1 and 2 use rows 0-2 and 3-5 of one batch of 8; reset 3 needs a new batch
            assert len(draws) == (1 if reset < 2 else 2)
            assert len(draws[-1][1]) == 8
            rows = slice(3, 6) if reset == 1 else slice(0, 3)
            motion_ids, times = draws[-1][0][rows], draws[-1][1][rows]
            assert env.reset_draws.available == (2 if reset == 1 else 5)
        assert len(times) == 3
        assert_reference_reset(env, motion_ids, times)
        clips_used |= set(motion_ids.tolist())
    assert clips_used == {0, 1}  # both clips were checked


def test_step_resets_consume_the_pool():
    """Every reference reset of a step takes one row of the pool (a new batch when too few are
    left), and the precomputed kinematics belong to the states written to the simulator."""
    env = make_env("HumanoidAMP", num_envs=3, motion_file=str(CARTWHEEL), state_init="Random",
                   reset_pool_size=8, max_episode_length=3, enable_early_termination=False, **FAST)
    pool = env.reset_draws
    env.reset()
    assert pool.available == 5
    actions = torch.zeros(env.num_envs, env.num_actions)
    resets_seen = 0
    for _ in range(9):
        before = pool.available
        _, _, terminated, truncated, _ = env.step(actions)
        done = terminated | truncated
        k = int(done.sum())
        resets_seen += k
        assert pool.available == (before - k if k <= before else max(pool.size, k) - k)
        if k:
            s = env.sim.state
            torch.testing.assert_close(env.amp_history[done, 0], env.amp_obs_from_sim()[done], atol=1e-4, rtol=0)
            bodies = body_state_from_qpos(env.robot, s.root_pos, s.root_rot, s.root_lin_vel, s.root_ang_vel,
                                          s.dof_pos, s.dof_vel)
            for reported, recomputed in zip((s.body_pos, s.body_rot, s.body_lin_vel, s.body_ang_vel), bodies):
                torch.testing.assert_close(reported[done], recomputed[done], atol=1e-5, rtol=0)
    assert resets_seen == 9  # every env timed out at steps 3, 6 and 9


# ---- env checkpoint ------------------------------------------------------------------------------


def make_ase_env(**overrides):
    # The joint law: random actions topple the cartwheel faster, so the pool refills within the steps compared.
    return make_env("HumanoidASE", num_envs=4, motion_file=str(CARTWHEEL), state_init="Hybrid", pd_damping="joint",
                    reset_pool_size=4, max_episode_length=5, **ASE_FAST, **overrides)


def count_pool_refills(env) -> list:
    """Calls of the env's MotionLib clip sampling (each reference-pool refill makes one)."""
    calls = []
    sample_motions = env.motion_lib.sample_motions

    def counting(n, *args, **kwargs):
        calls.append(n)
        return sample_motions(n, *args, **kwargs)

    env.motion_lib.sample_motions = counting
    return calls


def run_steps(env, actions):
    out = []
    for a in actions:
        obs, reward, terminated, truncated, info = env.step(a)
        out.append((obs.clone(), reward.clone(), terminated.clone(), truncated.clone(), info["amp_obs"].clone()))
    return out


def test_env_checkpoint_restores_reset_pool():
    """An env restored from a checkpoint continues bitwise like the original, through resets
    that refill the reference pool; without the pool's saved rows it would not."""
    gen = torch.Generator().manual_seed(7)
    a = make_ase_env()
    actions = [2.0 * torch.rand(4, a.num_actions, generator=gen) - 1.0 for _ in range(40)]
    a.reset()
    warmup = 10
    run_steps(a, actions[:warmup])
    while a.reset_draws.available == 0:  # checkpoint with undrawn rows in the pool
        run_steps(a, actions[warmup:warmup + 1])
        warmup += 1
    compared = actions[warmup:warmup + 15]
    state = env_state_dict(a)
    assert state["components"]["reset_draws"]["batch"]["root_pos"].shape[0] == a.reset_draws.available
    assert a.reset_draws.available > 0  # rows a restore without the pool would lose

    refills = count_pool_refills(a)
    expected = run_steps(a, compared)
    assert len(refills) >= 1  # the pool was refilled during the compared steps
    assert any(bool((t | tr).any()) for _, _, t, tr, _ in expected)

    b = make_ase_env()
    load_env_state_dict(b, state)
    assert b.reset_draws.available == len(state["components"]["reset_draws"]["batch"]["root_pos"])
    for step, (got, want) in enumerate(zip(run_steps(b, compared), expected)):
        for name, x, y in zip(("obs", "reward", "terminated", "truncated", "amp_obs"), got, want):
            assert torch.equal(x, y), f"{name} differs at step {step}"

    # the undrawn rows matter: restoring everything but the pool diverges
    c = make_ase_env()
    load_env_state_dict(c, {**state, "components": {}})
    diverged = any(not torch.equal(x[0], y[0]) for x, y in zip(run_steps(c, compared), expected))
    assert diverged


# ---- precomputed kinematics in the backend -------------------------------------------------------


@pytest.mark.parametrize("robot_name", ["amp_humanoid", "sword_shield"])
def test_cpu_backend_takes_precomputed_kinematics(robot_name):
    robot = load_robot(robot_name)
    gen = torch.Generator().manual_seed(11)
    n, ids = 2, torch.tensor([2, 0])
    root_pos = torch.randn(n, 3, generator=gen) + torch.tensor([0.0, 0.0, 1.5])
    root_rot = rot.quat_normalize(torch.randn(n, 4, generator=gen))
    root_lin_vel, root_ang_vel = torch.randn(n, 3, generator=gen), torch.randn(n, 3, generator=gen)
    lo, hi = robot.dof_limits_lower, robot.dof_limits_upper
    dof_pos = lo + (hi - lo) * torch.rand(n, robot.num_dofs, generator=gen)
    dof_vel = torch.randn(n, robot.num_dofs, generator=gen)
    states = (root_pos, root_rot, root_lin_vel, root_ang_vel, dof_pos, dof_vel)

    computed = MujocoCpuBackend(robot, 4, num_threads=1)
    given = MujocoCpuBackend(robot, 4, num_threads=1)
    try:
        computed.set_robot_state(ids, *states)
        given.set_robot_state(ids, *states, kinematics=articulation_state(robot, *states))
        for field in dataclasses.fields(computed.state):
            x, y = getattr(computed.state, field.name), getattr(given.state, field.name)
            assert torch.equal(x, y), field.name
        # the written rows hold the given states' kinematics, the others the default pose
        assert torch.equal(given.state.root_pos[ids], root_pos)
        untouched = torch.tensor([1, 3])
        fresh = MujocoCpuBackend(robot, 2, num_threads=1)
        assert torch.equal(given.state.body_pos[untouched], fresh.state.body_pos)
        fresh.close()
        # the simulation itself does not depend on where the snapshot's kinematics came from
        targets = torch.zeros(4, robot.num_dofs)
        for sim in (computed, given):
            sim.set_pd_targets(targets)
            sim.step(2)
        for field in dataclasses.fields(computed.state):
            assert torch.equal(getattr(computed.state, field.name), getattr(given.state, field.name)), field.name
    finally:
        computed.close()
        given.close()


def test_reset_pool_size_is_a_task_config_key():
    """Every task's YAML carries the key, so `task.env.reset_pool_size=...` reaches the env."""
    from ase_humanoid.builders import build_env
    from ase_humanoid.config import compose_config

    for size in (0, 16):
        cfg = compose_config(["task=HumanoidAMP", "num_envs=2", "num_threads=1", f"task.env.reset_pool_size={size}"])
        env = build_env(cfg)
        assert (env.reset_draws is None) if size == 0 else (env.reset_draws.size == size)
        env.close()
    for task in task_names():
        assert compose_config([f"task={task}"]).task.env.reset_pool_size == 1024
