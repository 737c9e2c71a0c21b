"""benchmarks/terrain_collision.py: MuJoCo's per-world cost on the plane and on heightfields."""

import numpy as np
from project_scripts import load_script

from ase_humanoid.envs import make_env
from ase_humanoid.sim import hfield_collision


def test_report_covers_plane_and_each_spacing_on_their_own_states(capsys):
    script = load_script("benchmarks/terrain_collision.py")
    result = script.main(["--terrain", "mixed", "--scales", "0.2", "0.3", "--envs", "2", "--steps", "61", "--json"])
    assert set(result["by_scale"]) == {"0.2", "0.3"}
    for report in [result["plane"], *result["by_scale"].values()]:
        assert set(report) >= {"step_us", "collision_us", "contacts", "collision_feet_only_us", "collision_no_body_us"}
        assert report["step_us"] > 0 and report["contacts"] >= 0
    for scale, report in result["by_scale"].items():
        assert report["physics_terrain_vs_plane"] == round(result["plane"]["step_us"] / report["step_us"], 3)
        if result["hfield_fast_path"]:  # the same states through MuJoCo's own routine, then the fast path back
            assert report["mujoco_routine"]["step_us"] > 0 and report["mujoco_routine"]["collision_us"] > 0
    assert result["hfield_fast_path"] == hfield_collision.is_installed()
    assert capsys.readouterr().out.strip().startswith("{")  # one JSON object


def test_switching_bodies_off_for_a_replay_leaves_the_model_as_it_was():
    script = load_script("benchmarks/terrain_collision.py")
    env = make_env("HumanoidAMP", num_envs=2, sim="mujoco", device="cpu", seed=0,
                   motion_file=str(script.DEFAULT_MOTION_FILE))
    env.reset()
    model = env.mj_model
    before = model.geom_contype.copy(), model.geom_conaffinity.copy()
    states, controls = script.kept_states(env, 51, seed=0)
    assert states.shape[0] == 2 and controls.shape == (2, model.nu)  # the worlds after step 50
    feet = [model.body(name).id for name in env.robot.contact_body_names]
    only_feet = script.replay_times(model, states, controls, feet)
    none = script.replay_times(model, states, controls, [])
    assert none["contacts"] == 0  # no body collides with anything
    assert only_feet["contacts"] <= script.replay_times(model, states, controls)["contacts"]
    assert np.array_equal(model.geom_contype, before[0]) and np.array_equal(model.geom_conaffinity, before[1])
