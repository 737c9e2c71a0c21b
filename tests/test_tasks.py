"""Task envs (heading, location, reach, strike): reward formulas against hand-computed values,
observation sizes on both humanoids, goal handling and the strike target's real physics."""

from __future__ import annotations

import math

import mujoco
import pytest
import torch

from ase_humanoid.envs import make_env
from ase_humanoid.envs.tasks import rewards
from ase_humanoid.envs.tasks.strike import HumanoidStrike
from ase_humanoid.errors import ConfigError
from ase_humanoid.sim.base import PropSpec
from ase_humanoid.utils import rotations as rot

FAST = dict(num_threads=1, seed=0, state_init="Default")
TASKS = ("HumanoidHeading", "HumanoidLocation", "HumanoidReach", "HumanoidStrike")


def yaw_quat(angle: float) -> torch.Tensor:
    return rot.quat_from_axis_angle(torch.tensor([[0.0, 0.0, 1.0]]), torch.tensor([angle]))


IDENTITY = rot.quat_identity(1)


# ---- heading ----------------------------------------------------------------------------------

def test_heading_reward_hand_computed():
    direction = torch.tensor([[1.0, 0.0]])
    # 1.0 m/s along x, 0.5 m/s sideways, target 1.5 m/s; facing 60 degrees off the target facing
    vel = torch.tensor([[1.0, 0.5]])
    facing_target = torch.tensor([[math.cos(math.pi / 3), math.sin(math.pi / 3)]])
    reward = rewards.heading_reward(vel, IDENTITY, direction, torch.tensor([1.5]), facing_target)
    expected = 0.7 * math.exp(-0.25 * (0.5 ** 2 + 0.1 * 0.25)) + 0.3 * 0.5
    assert reward.item() == pytest.approx(expected, abs=1e-6)
    # exact speed, aligned facing: the maximum 1
    perfect = rewards.heading_reward(torch.tensor([[1.5, 0.0]]), IDENTITY, direction, torch.tensor([1.5]), direction)
    assert perfect.item() == pytest.approx(1.0, abs=1e-6)


def test_heading_moving_away_gives_no_direction_term():
    direction = torch.tensor([[1.0, 0.0]])
    away = rewards.heading_reward(torch.tensor([[-1.5, 0.0]]), IDENTITY, direction, torch.tensor([1.5]), direction)
    assert away.item() == pytest.approx(0.3, abs=1e-6)  # facing term only
    # facing away from the target facing gives 0 for that term (clamped, not negative)
    backwards = rewards.heading_reward(torch.tensor([[1.5, 0.0]]), yaw_quat(math.pi), direction,
                                       torch.tensor([1.5]), direction)
    assert backwards.item() == pytest.approx(0.7, abs=1e-6)


def test_heading_obs_in_heading_frame():
    # character turned +90 degrees: a world +x target direction is -y in its heading frame
    obs = rewards.heading_obs(yaw_quat(math.pi / 2), torch.tensor([[1.0, 0.0]]), torch.tensor([1.5]),
                              torch.tensor([[0.0, 1.0]]))
    assert torch.allclose(obs, torch.tensor([[0.0, -1.0, 1.5, 1.0, 0.0]]), atol=1e-6)


# ---- location ---------------------------------------------------------------------------------

def test_location_reward_far_and_near():
    root = torch.tensor([[0.0, 0.0, 0.9]])
    target = torch.tensor([[3.0, 4.0]])  # 5 m away
    direction = torch.tensor([[0.6, 0.8]])
    # moving toward it at 0.5 m/s, facing +x (cos = 0.6)
    reward = rewards.location_reward(root, 0.5 * direction, IDENTITY, target)
    expected = 0.5 * math.exp(-0.5 * 25.0) + 0.4 * math.exp(-4.0 * 0.25) + 0.1 * 0.6
    assert reward.item() == pytest.approx(expected, abs=1e-6)
    # faster than the target speed is not penalised
    fast = rewards.location_reward(root, 3.0 * direction, IDENTITY, target)
    assert fast.item() == pytest.approx(0.5 * math.exp(-12.5) + 0.4 + 0.06, abs=1e-6)
    # within sqrt(0.5) m: velocity and facing terms are full even standing still, facing away
    near_target = torch.tensor([[0.5, 0.4]])  # d^2 = 0.41 < 0.5
    near = rewards.location_reward(root, torch.zeros(1, 2), yaw_quat(math.pi), near_target)
    assert near.item() == pytest.approx(0.5 * math.exp(-0.5 * 0.41) + 0.4 + 0.1, abs=1e-6)
    # just outside, standing still facing away: position term only
    outside = rewards.location_reward(root, torch.zeros(1, 2), yaw_quat(math.pi), torch.tensor([[0.6, 0.4]]))
    assert outside.item() == pytest.approx(0.5 * math.exp(-0.5 * 0.52), abs=1e-6)


# ---- reach ------------------------------------------------------------------------------------

def test_reach_reward_and_obs():
    target = torch.tensor([[0.3, -0.2, 1.4]])
    assert rewards.reach_reward(target.clone(), target).item() == pytest.approx(1.0)
    assert rewards.reach_reward(target + torch.tensor([[0.0, 0.0, 0.5]]), target).item() == pytest.approx(math.exp(-1.0))
    obs = rewards.reach_obs(torch.tensor([[1.0, 1.0, 0.9]]), yaw_quat(math.pi), torch.tensor([[2.0, 1.0, 1.9]]))
    assert torch.allclose(obs, torch.tensor([[-1.0, 0.0, 1.0]]), atol=1e-6)


def test_sword_origin_is_the_blade_tip():
    """The reach point on sword_shield is the sword body's origin: the blade ends there."""
    env = make_env("HumanoidReach", num_envs=1, robot="sword_shield", **FAST)
    model = env.mj_model
    blade = model.geom("sword_blade")
    assert model.body(blade.bodyid[0]).name.endswith("sword")
    assert blade.pos[0] + blade.size[0] == pytest.approx(0.0, abs=1e-6)  # far end of the box at x = 0
    assert env.reach_body_id == env.robot.body_id("sword")
    env.close()


# ---- strike -----------------------------------------------------------------------------------

def test_strike_reward_terms():
    root = torch.tensor([[0.0, 0.0, 0.9]])
    upright = IDENTITY
    far = torch.tensor([[5.0, 0.0, 0.9]])
    # standing still far away, target upright: nothing
    assert rewards.strike_reward(root, torch.zeros(1, 2), far, upright).item() == pytest.approx(0.0)
    # approaching at 0.5 m/s: approach term only
    r = rewards.strike_reward(root, torch.tensor([[0.5, 0.0]]), far, upright)
    assert r.item() == pytest.approx(0.4 * math.exp(-4.0 * 0.25), abs=1e-6)
    # faster than 1 m/s is capped (full term), moving away gives 0
    assert rewards.strike_reward(root, torch.tensor([[2.0, 0.0]]), far, upright).item() == pytest.approx(0.4)
    assert rewards.strike_reward(root, torch.tensor([[-2.0, 0.0]]), far, upright).item() == pytest.approx(0.0)
    # standing still next to the target earns nothing extra; tilted 60 degrees: 0.6 (1 - cos 60)
    tilted = rot.quat_from_axis_angle(torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([math.pi / 3]))
    near = torch.tensor([[0.7, 0.0, 0.9]])
    assert rewards.strike_reward(root, torch.zeros(1, 2), near, upright).item() == pytest.approx(0.0)
    assert rewards.strike_reward(root, torch.zeros(1, 2), near, tilted).item() == pytest.approx(0.6 * 0.5, abs=1e-6)
    assert not bool(rewards.strike_success(tilted))
    # tilted past ~78 degrees (cos < 0.2): reward 1 and success, wherever the character is
    down = rot.quat_from_axis_angle(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([math.radians(80.0)]))
    assert rewards.strike_reward(root, torch.tensor([[-3.0, 0.0]]), far, down).item() == pytest.approx(1.0)
    assert bool(rewards.strike_success(down))


def test_strike_forbidden_contact():
    num_bodies = 4
    allowed = torch.tensor([False, True, False, True])  # e.g. hand and foot allowed
    pushed = torch.tensor([[5.0, 0.0, 80.0]])  # sideways force on the target
    resting = torch.tensor([[0.0, 0.0, 84.8]])  # only the floor's support
    forces = torch.zeros(1, num_bodies, 3)
    forces[0, 1] = torch.tensor([-5.0, 0.0, 0.0])  # the hand hits it
    forces[0, 3] = torch.tensor([0.0, 0.0, 400.0])  # the foot stands
    assert not bool(rewards.strike_forbidden_contact(pushed, forces, allowed))
    forces[0, 2] = torch.tensor([0.0, 3.0, 0.0])  # a forbidden body touches something
    assert bool(rewards.strike_forbidden_contact(pushed, forces, allowed))
    assert not bool(rewards.strike_forbidden_contact(resting, forces, allowed))


# ---- envs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("robot, sizes", [("sword_shield", (258, 255, 256, 268)),
                                          ("amp_humanoid", (228, 225, 226, 238))])
def test_observation_sizes(robot, sizes):
    for task, size in zip(TASKS, sizes):
        env = make_env(task, num_envs=2, robot=robot, **FAST)
        obs = env.reset()
        assert env.num_obs == size and obs.shape == (2, size), task
        obs, reward, terminated, truncated, info = env.step(torch.zeros(2, env.num_actions))
        assert obs.shape == (2, size) and reward.shape == (2,) and torch.isfinite(obs).all(), task
        assert all(m.kind in ("sphere", "arrow") for m in env.markers(0))
        env.close()


def test_goals_resample_on_schedule_and_metrics():
    env = make_env("HumanoidLocation", num_envs=3, robot="amp_humanoid", change_steps_min=2,
                   change_steps_max=2, **FAST)
    env.reset()
    first = env.target_xy.clone()
    assert (first.abs() <= 10.0).all() and not torch.equal(first[0], first[1])
    env.set_goals(torch.tensor([0]), env.sim.state.root_pos[:1, :2])  # env 0: target under the root
    zeros = torch.zeros(3, env.num_actions)
    env.step(zeros)
    env.step(zeros)
    assert torch.equal(env.target_xy[1:], first[1:])
    env.step(zeros)  # the third step's pre-physics draws new goals
    assert not torch.equal(env.target_xy[1:], first[1:])
    metrics = env.task_metrics()
    assert 0.0 < metrics["task/success_rate"] < 1.0  # env 0 was on its target, the others not
    assert metrics["task/final_distance"] > 0.0
    assert env.task_metrics() == {}  # cleared after reading
    env.close()


def test_heading_metrics_and_reach_effector():
    env = make_env("HumanoidHeading", num_envs=2, robot="amp_humanoid", **FAST)
    env.reset()
    env.step(torch.zeros(2, env.num_actions))
    metrics = env.task_metrics()
    # standing still: speed error = target speed
    assert metrics["task/speed_error"] == pytest.approx(1.55, abs=0.1)
    env.close()
    reach = make_env("HumanoidReach", num_envs=2, robot="amp_humanoid", **FAST)
    reach.reset()
    hand = reach.sim.state.body_pos[:, reach.robot.body_id("right_hand")]
    reach.set_goals(torch.arange(2), hand)
    _, reward, *_ = reach.step(torch.zeros(2, reach.num_actions))
    assert (reward > 0.95).all()  # the hand barely moves in one step of a held pose
    with pytest.raises(ConfigError, match="reach_body"):
        make_env("HumanoidReach", num_envs=1, robot="amp_humanoid", reach_body="sword", **FAST)
    reach.close()


class StrikeWithRam(HumanoidStrike):
    """The strike env plus a heavy free box to throw at the target (a second real rigid body)."""

    RAM = PropSpec("ram", "box", (0.15, 0.15, 0.15), 1000.0)

    def prop_specs(self):
        return super().prop_specs() + [self.RAM]


def _zero3(n):
    return torch.zeros(n, 3)


def test_strike_target_is_a_rigid_body_knocked_over_by_a_push():
    env = StrikeWithRam(num_envs=2, robot="amp_humanoid", **FAST)
    env.reset()
    ids = torch.arange(2)
    env.place_target(ids, torch.tensor([[3.0, 0.0], [3.0, 0.0]]), torch.zeros(2))
    parked = torch.tensor([[50.0, 0.0, 0.15]]).expand(2, 3)
    env.sim.set_prop_state("ram", ids, parked, rot.quat_identity(2), _zero3(2), _zero3(2))
    model = env.mj_model
    target_body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "target")
    if target_body < 0:  # props may be prefixed in the scene
        target_body = [i for i in range(model.nbody) if model.body(i).name.endswith("target")][0]
    assert model.body_mass[target_body] == pytest.approx(0.4 * 0.4 * 1.8 * 30.0, rel=1e-3)
    zeros = torch.zeros(2, env.num_actions)
    env.step(zeros)
    start = env.target_state.pos.clone()
    assert start[:, 2] == pytest.approx(0.9, abs=0.02)  # stands on the floor
    # env 0: a 30 kg box hits the target's upper part at 6 m/s; env 1: left alone
    ram_pos = torch.tensor([[2.0, 0.0, 1.5], [50.0, 0.0, 0.15]])  # env 1's stays parked
    ram_vel = torch.tensor([[6.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    env.sim.set_prop_state("ram", ids, ram_pos, rot.quat_identity(2), ram_vel, _zero3(2))
    down_reward = torch.zeros(2)
    standing = env.default_states(2)
    for _ in range(60):
        env.sim.set_robot_state(ids, *standing.as_tuple())  # held standing: no fall, no failure
        _, reward, terminated, _, _ = env.step(zeros)
        assert not bool(terminated.any()), "knocking the target over must not end the episode"
        if bool(env.knocked_down[0]):
            down_reward = reward
    assert bool(env.knocked_down[0]), "the pushed target should fall over"
    assert down_reward[0].item() == pytest.approx(1.0)  # still paying on the last step
    assert not bool(env.knocked_down[1]) and (env.target_state.pos[1] - start[1]).norm() < 0.01
    env.reset()  # ends both episodes: env 0 succeeded, env 1 did not
    metrics = env.task_metrics()
    assert metrics["task/success_rate"] == 0.5 and 0.0 < metrics["task/time_to_success"] < 2.0
    env.close()


def discounted_return(rewards_per_step: list[float], ended_at: int | None, gamma: float) -> float:
    """Sum of gamma^t r_t up to and including step `ended_at` (a termination: no bootstrap)."""
    total = 0.0
    for t, r in enumerate(rewards_per_step):
        total += gamma ** t * r
        if ended_at is not None and t == ended_at:
            break
    return total


def test_striking_pays_more_than_standing_next_to_the_target():
    """The env's own reward and termination over a whole episode: standing 0.8 m from an upright
    target versus knocking it down at step k. Striking must win for any k in the episode (the
    old rewards paid 0.4 per step for standing near it and ended the episode on a knock-down)."""
    env = make_env("HumanoidStrike", num_envs=1, robot="amp_humanoid", **FAST)
    env.reset()
    ids = torch.arange(1)
    root_xy = env.sim.state.root_pos[:, :2]
    gamma = 0.99  # cfg/train/hrl.yaml
    upright = rot.quat_identity(1)
    down = rot.quat_from_axis_angle(torch.tensor([[0.0, 1.0, 0.0]]), torch.tensor([math.pi / 2]))
    target_pos = {"up": torch.cat([root_xy + torch.tensor([[0.8, 0.0]]), torch.tensor([[0.9]])], -1),
                  "down": torch.cat([root_xy + torch.tensor([[1.5, 0.0]]), torch.tensor([[0.2]])], -1)}

    def episode(knock_step: int | None) -> float:
        """Discounted return with the target knocked down from `knock_step` on (None: never)."""
        per_step, ended_at = [], None
        for t in range(env.max_episode_length):
            state = "down" if knock_step is not None and t >= knock_step else "up"
            env.sim.set_prop_state("target", ids, target_pos[state], down if state == "down" else upright,
                                   _zero3(1), _zero3(1))
            env.prev_root_pos = env.sim.state.root_pos.clone()  # standing still
            env.episode_steps[:] = t + 1
            per_step.append(env.compute_task_reward().item())
            if bool(env.compute_task_termination()[0]) and ended_at is None:
                ended_at = t
        return discounted_return(per_step, ended_at, gamma)

    standing = episode(None)
    assert standing == pytest.approx(0.0, abs=1e-6)
    returns = {k: episode(k) for k in (10, 100, 250, 299)}
    assert all(r > standing for r in returns.values()), returns
    # an early strike is worth most: about 1 per step for the rest of the episode
    assert returns[10] > 80.0 and returns[10] > returns[100] > returns[250], returns
    env.close()


def test_strike_targets_near_half_the_time_and_observed_height():
    env = make_env("HumanoidStrike", num_envs=400, robot="amp_humanoid", **FAST)
    env.reset()
    offset = env.target_state.pos[:, :2] - env.sim.state.root_pos[:, :2]
    distance = offset.norm(dim=-1)
    assert bool((distance >= 0.5 - 1e-4).all()) and bool((distance <= 10.0 + 1e-4).all())
    # P(d <= 1.5) = 0.5 (near) + 0.5 * 1 / 9.5 (far draws that land near) = 0.553
    assert (distance <= 1.5).float().mean().item() == pytest.approx(0.553, abs=0.08)
    # the observed target height is the target's own height above the floor (0.9 m standing)
    obs = env.compute_task_obs()
    assert torch.allclose(obs[:, 2], env.target_state.pos[:, 2], atol=1e-5)
    assert torch.allclose(obs[:, :2].norm(dim=-1), distance, atol=1e-4)
    env.close()


def test_strike_failure_when_the_body_runs_into_the_target():
    env = make_env("HumanoidStrike", num_envs=1, robot="amp_humanoid", **FAST)
    env.reset()
    ids = torch.arange(1)
    env.place_target(ids, torch.tensor([[0.8, 0.0]]), torch.zeros(1))
    zeros = torch.zeros(1, env.num_actions)
    env.step(zeros)
    # throw the standing humanoid at the target: the torso / thigh / head hit it (forbidden bodies)
    s = env.sim.state
    env.sim.set_robot_state(ids, s.root_pos, s.root_rot, torch.tensor([[5.0, 0.0, 0.0]]), _zero3(1),
                            s.dof_pos, s.dof_vel)
    failed, target_speed = False, 0.0
    for _ in range(30):
        _, _, terminated, _, info = env.step(zeros)
        # the target's velocity in the observation of the state reached (before any reset)
        target_speed = max(target_speed, info["final_obs"][0, -6:-3].norm().item())
        if bool(terminated[0]):
            failed = bool(env.failed[0])
            break
    assert target_speed > 0.1, "the body should push the target"
    assert failed, "a hit by a non-striking body must end the episode as a failure"
    metrics = env.task_metrics()
    assert metrics["task/success_rate"] == 0.0 and metrics["task/failure_rate"] == 1.0
    env.close()
