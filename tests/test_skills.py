"""The ASE skill report (ase_humanoid/analysis/, benchmarks/ase_skills.py): its pure parts, the
command end to end on an untrained controller, test=true's report and the training-time
`skills/*` statistics."""

import json
import math

import imageio.v3 as iio
import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from project_scripts import load_script

from ase_humanoid import PROJECT_ROOT
from ase_humanoid.config import compose_config
from ase_humanoid.envs import make_env
from ase_humanoid.envs.motion_quality import (
    MotionQuality,
    MotionQualityProbe,
    clip_coverage,
    clip_of_frames,
    majority_clips,
    short_clip_names,
)
from ase_humanoid.errors import ConfigError
from ase_humanoid.motion.motion_lib import MotionLib
from ase_humanoid.robots.description import load_robot
from ase_humanoid.analysis.skill_measures import (
    clip_root_speeds,
    direction_span,
    heading_change,
    is_standing,
    mean_turning_rate,
    mirror_pair_turns,
    speed_by_skill,
    spread,
    standing_thresholds,
    steady_turn_rate,
    travel_directions,
)
from ase_humanoid.analysis.skill_media import tile_grid
from ase_humanoid.analysis.skill_report import SkillOptions, getup_config, skill_config, skill_speed_text
from ase_humanoid.analysis.skill_targets import USABLE_TARGETS, format_usability, usability

SIX_CLIPS = PROJECT_ROOT / "motions" / "dataset_amp_humanoid_all.yaml"
TINY_ASE = ["task=HumanoidASE", "num_envs=4", "seed=5", "motion_file=motions/dataset_amp_humanoid_all.yaml",
            "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
            "train.params.disc_units=[32,32]", "train.params.style_units=[16,16]",
            "train.params.mini_epochs=1", "train.params.horizon_length=8",
            "train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024",
            "train.params.amp_batch_size=256"]


# ---------------------------------------------------------------------------- pure parts

def test_reference_frames_are_labelled_with_their_own_clip():
    """Round trip: every frame of the six bundled clips finds itself, so its clip is its own,
    and the six clips' majority labels cover all six."""
    motion_lib = MotionLib(SIX_CLIPS, load_robot("amp_humanoid"))
    quality = MotionQuality(motion_lib, motion_lib.key_body_ids)
    clip, error = quality.nearest(motion_lib.root_pos, motion_lib.root_rot, motion_lib.body_pos)
    own_clip = torch.repeat_interleave(torch.arange(motion_lib.num_motions), motion_lib.motion_num_frames)
    assert torch.equal(clip, own_clip)
    assert float(error.max()) < 1e-3
    counts = torch.zeros(motion_lib.num_motions, quality.num_clips, dtype=torch.long)
    counts.index_put_((own_clip, clip), torch.ones_like(clip), accumulate=True)
    coverage, per_clip = clip_coverage(majority_clips(counts), quality.num_clips)
    assert coverage == 6 and per_clip.tolist() == [1] * 6
    assert short_clip_names(quality.clip_names) == ["walk", "run", "dance", "hop", "backflip", "cartwheel"]


def test_clip_of_frames_at_clip_boundaries():
    starts = torch.tensor([0, 154, 236])
    frames = torch.tensor([0, 153, 154, 235, 236, 900])
    assert clip_of_frames(frames, starts).tolist() == [0, 0, 1, 1, 2, 2]


def test_coverage_and_counts():
    coverage, counts = clip_coverage(torch.tensor([2, 2, 0, 5]), 6)
    assert coverage == 3 and counts.tolist() == [1, 0, 2, 0, 0, 1]
    coverage, counts = clip_coverage(torch.zeros(0, dtype=torch.long), 3)
    assert coverage == 0 and counts.tolist() == [0, 0, 0]
    # per latent, the clip holding the nearest frame most often; a tie goes to the lower clip
    assert majority_clips(torch.tensor([[0, 5, 1], [3, 3, 0], [0, 0, 1]])).tolist() == [1, 0, 2]


def test_standing_criterion():
    body_pos = torch.zeros(15, 3)
    body_pos[0, 2], body_pos[2, 2] = 0.89, 1.35  # root, head of the standing pose
    root_min, head_min = standing_thresholds(body_pos, head_id=2)
    assert root_min == pytest.approx(0.712) and head_min == pytest.approx(1.08)
    root = torch.tensor([0.89, 0.75, 0.75, 0.3, 0.6])
    head = torch.tensor([1.35, 1.20, 1.0, 1.3, 1.2])  # standing, walking, hunched, lying, kneeling
    assert is_standing(root, head, root_min, head_min).tolist() == [True, True, False, False, False]


def test_heading_change_takes_the_short_way_round():
    before = torch.tensor([3.1, 0.0, -0.5])
    after = torch.tensor([-3.1, 0.3, -0.2])
    assert torch.allclose(heading_change(before, after), torch.tensor([2 * math.pi - 6.2, 0.3, 0.3]), atol=1e-5)


def test_turning_rate_ignores_yaw_swing_and_stops_at_a_fall():
    dt, steps = 1.0 / 30.0, 60
    t = torch.arange(steps, dtype=torch.float64)
    swing = 0.1 * torch.sin(2 * math.pi * t / 15)  # pelvis yaw swinging 0.1 rad twice a second
    turning = 1.0 * dt + swing.diff(prepend=swing[:1])  # 1 rad/s turn plus the swing
    heading_steps = torch.stack([swing.diff(prepend=swing[:1]), turning, turning, turning], dim=1)
    heading_steps[30:, 2] = 0.0  # latent 2 fell after 30 steps
    steps_used = torch.tensor([steps, steps, 30, 0])
    rate = mean_turning_rate(heading_steps, steps_used, window=15, dt=dt)
    assert float(rate[0]) < 0.05  # swinging on the spot is not turning (step by step: 0.8 rad/s)
    assert float(rate[1]) == pytest.approx(1.0, abs=0.05) and float(rate[2]) == pytest.approx(1.0, abs=0.05)
    assert math.isnan(float(rate[3]))
    short = mean_turning_rate(heading_steps[:, 1:2], torch.tensor([5]), window=15, dt=dt)
    assert float(short[0]) == pytest.approx(abs(float(heading_steps[:5, 1].sum())) / (5 * dt))


def test_spread_and_tile_grid():
    s = spread(torch.tensor([1.0, 3.0, float("nan")]))
    assert (s["mean"], s["std"], s["min"], s["max"]) == (2.0, 1.0, 1.0, 3.0)
    assert math.isnan(spread(torch.tensor([float("nan")]))["mean"])
    tiles = np.stack([np.full((2, 3, 3), i + 1, dtype=np.uint8) for i in range(5)])
    grid = tile_grid(tiles, columns=3)
    assert grid.shape == (4, 9, 3)
    assert grid[0, 0, 0] == 1 and grid[0, 8, 0] == 3 and grid[3, 4, 0] == 5 and grid[3, 8, 0] == 0


def test_clip_speeds_match_the_clips_root_paths():
    lib = MotionLib(SIX_CLIPS, load_robot("amp_humanoid"))
    speeds = clip_root_speeds(lib.root_lin_vel, lib.motion_num_frames)
    assert speeds.shape == (6,)
    for clip, name in enumerate(lib.motion_names):
        if float(lib.motion_fps[clip]) < 30:  # the 16-fps backflip: its stored velocities are smoothed
            continue
        start, n = int(lib.motion_start[clip]), int(lib.motion_num_frames[clip])
        path = lib.root_pos[start:start + n, :2].double()
        path_speed = float((path[1:] - path[:-1]).norm(dim=-1).sum()) / float(lib.motion_lengths[clip])
        assert float(speeds[clip]) == pytest.approx(path_speed, rel=0.05), name
    by_name = dict(zip(lib.motion_names, speeds.tolist()))
    assert 1.3 < by_name["amp_humanoid_walk"] < 1.7 and by_name["amp_humanoid_run"] > 3.0


def test_speed_by_skill_groups_latents_under_their_clip():
    nan = float("nan")
    latent_speed = torch.tensor([0.2, 0.4, nan, 1.0])
    skills = torch.tensor([0, 0, 0, 2])
    out = speed_by_skill(latent_speed, skills, torch.tensor([1.5, 3.4, 0.5]), ["walk", "run", "hop"])
    assert out["walk"] == {"clip_m_s": 1.5, "latents": 3, "mean_m_s": pytest.approx(0.3), "max_m_s": pytest.approx(0.4)}
    assert out["run"] == {"clip_m_s": pytest.approx(3.4), "latents": 0}
    assert out["hop"]["latents"] == 1 and out["hop"]["max_m_s"] == 1.0


def test_travel_direction_is_the_net_displacement_seen_from_the_start_heading():
    steps = torch.linspace(0.0, 1.0, 11)[:, None]  # 11 recorded positions, 0..1 of the way
    ahead, left, behind = torch.tensor([3.0, 0.0]), torch.tensor([0.0, 2.0]), torch.tensor([-2.0, 0.0])
    paths = torch.stack([steps * ahead, steps * left, steps * behind, steps * (0.25 * ahead),
                         steps * left], dim=1)  # [11, 5, 2]
    paths[6:, 4] = math.nan  # latent 4 fell half-way: its last recorded position counts
    start_heading = torch.tensor([0.0, 0.0, 0.0, 0.0, math.pi / 2])  # latent 4 faced +y
    directions = travel_directions(paths, start_heading)
    assert directions[:3].tolist() == pytest.approx([0.0, math.pi / 2, -math.pi])
    assert math.isnan(directions[3])  # ended 0.75 m from its start: no direction
    assert directions[4] == pytest.approx(0.0)  # 1 m straight ahead of where it faced


def test_steady_turn_rate_leaves_out_the_set_off_and_the_steps_after_a_fall():
    dt = 0.1
    heading_steps = torch.zeros(10, 3, dtype=torch.float64)
    heading_steps[:2] = 1.0  # every latent turns hard while setting off (left out)
    heading_steps[2:, 0] = 0.05  # then latent 0 keeps turning left at 0.5 rad/s
    heading_steps[2:, 1] = -0.02  # latent 1 right at 0.2 rad/s
    steps_used = torch.tensor([10.0, 10.0, 2.0], dtype=torch.float64)  # latent 2 fell at step 2
    rate = steady_turn_rate(heading_steps, steps_used, skip=2, dt=dt)
    assert rate[:2].tolist() == pytest.approx([0.5, -0.2])
    assert math.isnan(rate[2])


def test_mirror_pair_turns_compare_each_latent_with_its_mirror_image():
    nan = math.nan
    #                      first half: latents 0-3      second half: their mirror images
    turns = torch.tensor([0.5, -0.2, nan, 0.3, -0.5, 0.1, 0.4, nan])
    pairs = mirror_pair_turns(turns)
    assert pairs["pairs"] == 2  # a pair with a latent that fell early is left out
    assert pairs["mean_abs_turn"] == pytest.approx((0.5 + 0.2 + 0.5 + 0.1) / 4)
    assert pairs["mean_abs_asymmetry"] == pytest.approx((0.0 + 0.1) / 2)
    assert mirror_pair_turns(torch.tensor([nan, 0.2]))["pairs"] == 0
    with pytest.raises(ConfigError, match="even number"):
        SkillOptions(num_latents=5, mirror_pairs=True)


def test_direction_span_is_the_smallest_arc_holding_every_direction():
    assert direction_span(torch.tensor([0.3, 0.3, 0.3])) == pytest.approx(0.0)
    assert direction_span(torch.tensor([-0.2, 0.5, math.nan])) == pytest.approx(0.7)
    # across the back: 170 and -170 degrees are 20 degrees apart, not 340
    assert direction_span(torch.tensor([math.radians(170), math.radians(-170)])) == pytest.approx(math.radians(20))
    quarter = torch.tensor([0.0, math.pi / 2, math.pi, -math.pi / 2])
    assert direction_span(quarter) == pytest.approx(1.5 * math.pi)
    assert math.isnan(direction_span(torch.tensor([math.nan])))


def test_speed_by_skill_gives_the_speed_of_the_latents_that_stayed_up():
    # two walk latents run fast and fall; the two that stay up are slow: the mean hides it
    latent_speed = torch.tensor([3.0, 3.2, 0.3, 0.5, 1.0])
    skills = torch.tensor([0, 0, 0, 0, 1])
    fell = torch.tensor([True, True, False, False, True])
    out = speed_by_skill(latent_speed, skills, torch.tensor([1.5, 3.4]), ["walk", "run"], fell)
    assert out["walk"]["mean_m_s"] == pytest.approx(1.75) and out["walk"]["fell"] == 2
    assert out["walk"]["up_mean_m_s"] == pytest.approx(0.4) and out["walk"]["up_max_m_s"] == pytest.approx(0.5)
    assert out["run"]["fell"] == 1 and "up_mean_m_s" not in out["run"]
    assert "[2 of 4 fell; the 2 up 0.40 up to 0.50]" in skill_speed_text(out["walk"])
    assert "[1 of 1 fell; none up]" in skill_speed_text(out["run"])


def _report(fall_rate=0.05, error=9.0, counts=(2, 1, 3, 10, 1, 1, 1, 1), getup=0.8) -> dict:
    names = ["amp_humanoid_walk", "amp_humanoid_run", "amp_humanoid_dance", "amp_humanoid_hop",
             "amp_humanoid_backflip", "cmu_16_17_walk_turn_left_90", "cmu_135_04_front_kick_1",
             "amp_humanoid_cartwheel"]
    return {"fall_rate": fall_rate, "key_body_error_cm": error, "clip_counts": dict(zip(names, counts)),
            "clip_coverage": sum(c > 0 for c in counts), "getup": {"success_rate": getup}}


def test_measurement_envs_ignore_the_trainings_phases():
    """The report's envs fix fall_init_prob and recovery starts themselves; a training schedule
    (task.env.phases) in the checkpoint's config must not change them back."""
    cfg = compose_config(["task=HumanoidASE", "test=true",
                          "task.env.phases=[{from_epoch:0,fall_init_prob:0.3,recovery_episode_prob:0.5}]"])
    options = SkillOptions(num_latents=4, steps=10)
    rollouts, getups = skill_config(cfg, options), getup_config(skill_config(cfg, options), options)
    assert list(rollouts.task.env.phases) == [] and list(getups.task.env.phases) == []
    assert (rollouts.task.env.fall_init_prob, getups.task.env.fall_init_prob) == (0.0, 1.0)


def test_usability_names_each_target_it_misses():
    good = _report()
    assert all(usability(good).values())
    assert "verdict: usable" in format_usability(good)
    # each target missed alone, just past its limit
    assert usability(_report(fall_rate=USABLE_TARGETS["fall_rate"] + 0.01)) == {**usability(good), "fall_rate": False}
    assert not usability(_report(error=10.1))["key_body_error_cm"]
    assert not usability(_report(counts=(2, 1, 3, 1, 1, 1, 1, 0)))["clip_coverage"]  # 7 of 8 clips
    no_kick = usability(_report(counts=(2, 1, 3, 1, 1, 1, 0, 1)))  # no latent kicks
    assert not no_kick["skill_kinds"]
    assert not usability(_report(getup=0.69))["getup_success_rate"]
    text = format_usability(_report(counts=(2, 0, 3, 10, 1, 1, 1, 1), getup=0.0))
    assert "run no, turn yes, strike yes: NOT met" in text and "getup in 3 s: 0.00 (target >= 0.70): NOT met" in text
    assert "not yet (3 of 5 targets missed)" in text and "use the controller as it is" not in text
    # a dataset of six clips asks for all six, and only for the kinds it has
    six = {"fall_rate": 0.05, "key_body_error_cm": 9.0, "getup": {"success_rate": 0.8}, "clip_coverage": 6,
           "clip_counts": dict(zip(["amp_humanoid_walk", "amp_humanoid_run", "amp_humanoid_dance", "amp_humanoid_hop",
                                    "amp_humanoid_backflip", "amp_humanoid_cartwheel"], (1, 1, 1, 1, 1, 1)))}
    assert all(usability(six).values()) and "kinds of skill: run yes:" in format_usability(six)


def test_the_next_step_builds_on_a_controller_only_when_it_is_usable(tmp_path):
    from ase_humanoid.app import next_step_after_pretraining

    assert "task=HumanoidHeading llc_checkpoint=" in next_step_after_pretraining(_report(), tmp_path, 100)
    missed = next_step_after_pretraining(_report(fall_rate=1.0), tmp_path, 100)
    assert "llc_checkpoint" not in missed and f"resume=true run_dir={tmp_path} max_epochs=200" in missed


def test_finished_pretraining_ends_with_the_skill_report(tmp_path, capsys):
    """The main command ends by saying what it trained: the skill report of its last checkpoint
    and the targets it meets, then how to use the controller."""
    from ase_humanoid.app import run

    run([*TINY_ASE, f"run_dir={tmp_path}", "max_epochs=1", "quality_every=0", "save_every=0",
         "final_skill_report=2", "task.env.max_episode_length=15", "task.env.fall_pool_size=4",
         "task.env.fall_steps=5"])
    out = capsys.readouterr().out
    assert "skills: 2 fixed latents x 0.5 s" in out and "getup:" in out
    assert "usable controller?" in out and "verdict: " in out
    assert f"resume=true run_dir={tmp_path}" in out  # an untrained controller: train on, no task on it


# ---------------------------------------------------------------------------- end to end

@pytest.fixture(scope="module")
def untrained_ase_checkpoint(tmp_path_factory):
    """A freshly built (untrained) small ASE agent saved as a checkpoint with its config."""
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.utils.checkpoint import save_checkpoint

    cfg = compose_config(TINY_ASE)
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    path = tmp_path_factory.mktemp("ase") / "latest.pt"
    save_checkpoint({"format": "ase_humanoid/1", "epoch": 0, "config": OmegaConf.to_container(cfg, resolve=True),
                     "agent": agent.state_dict(include_buffers=False)}, path)
    env.close()
    return path


def _skills_command():
    return load_script("benchmarks/ase_skills.py")


def test_command_reports_json_and_writes_video_and_paths(untrained_ase_checkpoint, tmp_path, capsys):
    video, paths = tmp_path / "grid.mp4", tmp_path / "paths.png"
    _skills_command().main([str(untrained_ase_checkpoint), "--latents", "4", "--seconds", "1",
                            "--getup-episodes", "6", "--getup-seconds", "0.5", "--json",
                            "--video", str(video), "--paths", str(paths)])
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["latents"] == 4 and report["seconds"] == pytest.approx(1.0) and report["epoch"] == 0
    assert 0.0 <= report["fall_rate"] <= 1.0
    assert 0.0 < report["key_body_error_cm"] < 100.0
    assert report["num_clips"] == 6 and 1 <= report["clip_coverage"] <= 4
    assert sum(report["clip_counts"].values()) == 4
    for key in ("root_speed", "turn_rate", "root_height"):
        s = report[key]
        assert 0.0 <= s["min"] <= s["mean"] <= s["max"] and s["std"] >= 0.0
    assert 0.0 < report["root_height"]["max"] < 1.5
    assert -1.0 <= report["enc_z"] <= 1.0
    getup = report["getup"]
    assert getup["episodes"] == 6 and len(getup["stood_up"]) == 6 and 0.0 <= getup["success_rate"] <= 1.0
    assert getup["root_threshold_m"] == pytest.approx(0.8 * 0.89) and 1.0 < getup["head_threshold_m"] < 1.2
    assert 0.0 < getup["start_head_height_m"] <= getup["best_head_height_m"] < 2.0  # how far up it came
    per_latent = report["per_latent"]
    travel = report["travel_direction"]
    assert 0 <= travel["moved"] <= 4 and travel["min_distance_m"] == 1.0
    steady = report["steady_turn_rate"]  # 1 s rollouts: no latent gets past the 2 s of setting off
    assert steady["after_s"] == 2.0 and math.isnan(steady["mean"])
    assert steady["right"] == steady["left"] == 0 and report["mirror_pairs"] is None
    assert all(rate is None for rate in report["per_latent"]["steady_turn_rate"])
    for key in ("skill", "root_speed", "turn_rate", "travel_direction", "steady_turn_rate", "root_height",
                "key_body_error_cm", "enc_z", "fell", "fall_time_s"):
        assert len(per_latent[key]) == 4, key
    assert set(per_latent["skill"]) <= set(report["clip_counts"])
    by_skill = report["speed_by_skill"]
    assert list(by_skill) == list(report["clip_counts"])
    assert [e["latents"] for e in by_skill.values()] == list(report["clip_counts"].values())
    assert by_skill["amp_humanoid_run"]["clip_m_s"] > by_skill["amp_humanoid_walk"]["clip_m_s"] > 1.0
    assert report["fall_rate"] == sum(per_latent["fell"]) / 4
    frames = iio.imread(video)
    assert frames.shape == (16, 2 * 120, 2 * 160, 3)  # 2x2 tiles of 160x120; 31 states, every 2nd
    assert frames[0].std() > 10
    assert iio.imread(paths).shape[-1] in (3, 4)


def test_command_starts_latents_from_moving_reference_states(untrained_ase_checkpoint, capsys):
    walk = PROJECT_ROOT / "motions" / "amp_humanoid" / "amp_humanoid_walk.npy"
    _skills_command().main([str(untrained_ase_checkpoint), f"motion_file={walk}", "--latents", "4",
                            "--seconds", "0.5", "--getup-episodes", "0", "--start", "reference"])
    out = capsys.readouterr().out
    assert "from reference-motion states" in out and "(1.51)" in out  # the walk clip's own speed
    report = _skills_command().main([str(untrained_ase_checkpoint), f"motion_file={walk}", "--latents", "4",
                                     "--seconds", "0.5", "--getup-episodes", "0", "--start", "reference",
                                     "--json"])
    assert report["start"] == "reference" and list(report["clip_counts"]) == ["amp_humanoid_walk"]
    # started mid-stride at the clip's speed, the (untrained) characters move at first
    assert report["root_speed"]["max"] > 0.5


def test_evaluation_prints_the_skill_report(untrained_ase_checkpoint, capsys):
    from ase_humanoid.app import run

    run(["task=HumanoidASE", "test=true", f"checkpoint={untrained_ase_checkpoint}", "num_envs=2",
         "test_episodes=2", "task.env.max_episode_length=15"])
    out = capsys.readouterr().out
    assert "episode/length=" in out and "quality/key_body_error_cm=" in out  # the evaluation as before
    assert "skills: 2 fixed latents x 0.5 s" in out
    for words in ("fall rate", "clip coverage:", "across latents: root speed", "enc(amp_obs) . z", "getup:"):
        assert words in out


def test_training_logs_skill_statistics(tmp_path):
    """The runner's quality epochs add skills/* from the probe worlds of the training rollout."""
    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config(TINY_ASE)
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    runner = Runner(env, agent, tmp_path, config={}, max_epochs=1, quality_every=1, quality_envs=3)
    stats = runner.learn()
    env.close()
    assert "quality/key_body_error_cm" in stats
    assert 1.0 <= stats["skills/clip_coverage"] <= 3.0
    assert stats["skills/root_speed_std"] >= 0.0
    assert -1.0 <= stats["skills/enc_z"] <= 1.0


def test_probe_shares_of_nearest_clips_on_played_clips():
    """Round trip: envs that play clips kinematically (walk, run, dance, one each) look like
    exactly those clips, a third of the frames each, and nothing else; test=true prints these."""
    env = make_env("HumanoidViewMotion", num_envs=3, motion_file=str(SIX_CLIPS), num_threads=1, seed=0)
    try:
        probe = MotionQualityProbe(env, num_envs=3)
        env.reset()
        for _ in range(12):
            _, _, terminated, truncated, _ = env.step(None)
            probe.observe(terminated | truncated)
        shares = probe.pop_clip_shares()
        assert shares == pytest.approx({"quality/nearest_clip/walk": 1 / 3, "quality/nearest_clip/run": 1 / 3,
                                        "quality/nearest_clip/dance": 1 / 3})
        assert probe.pop_clip_shares() == {}  # popped
    finally:
        env.close()


def test_every_measures_each_snapshot_of_a_run_once_and_tabulates_them(untrained_ase_checkpoint, tmp_path, capsys):
    from ase_humanoid.utils.checkpoint import load_checkpoint, save_checkpoint

    state = load_checkpoint(untrained_ase_checkpoint)
    run_dir = tmp_path / "run"
    for epoch in (50, 75, 100):
        save_checkpoint({**state, "epoch": epoch}, run_dir / f"epoch_{epoch:06d}.pt")
    args = [str(run_dir), "--every", "50", "--latents", "2", "--seconds", "0.3",
            "--getup-episodes", "2", "--getup-seconds", "0.2"]
    reports = _skills_command().main(args)
    assert [r["epoch"] for r in reports] == [50, 100]
    rows = [line for line in capsys.readouterr().out.splitlines() if line[:3] in ("| 5", "| 1")]
    assert [row.split(" | ")[0] for row in rows] == ["| 50", "| 100"]
    assert all(row.endswith(" of 5 |") and "(walk " in row and ", run " in row for row in rows), rows
    kept = sorted((run_dir / "skill_reports").iterdir())
    assert len(kept) == 2 and all("latents2_s0.3_seed0" in path.name for path in kept)
    stamps = [path.stat().st_mtime_ns for path in kept]

    # Measured again after a new snapshot: the kept reports are read back, only the new one is measured.
    save_checkpoint({**state, "epoch": 150}, run_dir / "epoch_000150.pt")
    again = _skills_command().main([*args, "--json"])
    assert [r["epoch"] for r in again] == [50, 100, 150]
    assert again[:2] == json.loads(json.dumps(reports))
    assert [path.stat().st_mtime_ns for path in kept] == stamps
    assert len(list((run_dir / "skill_reports").iterdir())) == 3
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["epoch"] for r in printed["reports"]] == [50, 100, 150]

    # A kept report that does not read is measured again and replaced, not a crash.
    kept[0].write_text('{"epoch": 50, "fall_')
    assert [r["epoch"] for r in _skills_command().main(args)] == [50, 100, 150]
    assert "does not read" in capsys.readouterr().out
    remeasured = json.loads(kept[0].read_text())
    assert remeasured.pop("seconds_taken") > 0 and remeasured == {k: v for k, v in again[0].items() if k != "seconds_taken"}

    with pytest.raises(SystemExit, match="no epoch_K.pt with K a multiple of 7"):
        _skills_command().main([str(run_dir), "--every", "7"])
    with pytest.raises(SystemExit, match="--video / --paths for one checkpoint"):
        _skills_command().main([*args, "--paths", str(tmp_path / "p.png")])


def test_probe_leaves_out_a_world_that_is_blowing_up():
    """A world at 1e8 m/s (finite, not yet reset by the env) is left out of the probe's means."""
    env = make_env("HumanoidViewMotion", num_envs=2, motion_file=str(SIX_CLIPS), num_threads=1, seed=0)
    try:
        probe = MotionQualityProbe(env, num_envs=2)
        env.reset()
        env.step(None)
        probe.observe()
        calm = probe.pop_means()["quality/root_speed"]
        state = env.sim.state
        lin_vel = state.root_lin_vel.clone()
        lin_vel[0] = torch.tensor([1e8, 0.0, 0.0])
        env.sim.set_robot_state(torch.arange(2), state.root_pos.clone(), state.root_rot.clone(), lin_vel,
                                state.root_ang_vel.clone(), state.dof_pos.clone(), state.dof_vel.clone())
        probe.observe()
        means = probe.pop_means()
        assert means["quality/root_speed"] < 10.0 and calm < 10.0
    finally:
        env.close()
