"""`train.py test=true`: run the deterministic policy, print episode statistics, optionally show
it in the viewer or record a video.

For an ASE controller `latent=random` resamples skills on the training schedule, `latent=fixed`
gives each env one skill for the whole episode. Task envs add their own metrics through
`env.task_metrics()` (heading error, location success, ...). An ASE controller on HumanoidASE also
gets the skill report of `analysis/skill_report.py` (`skill_report`; benchmarks/ase_skills.py prints it alone).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from ase_humanoid.config import saved_value
from ase_humanoid.envs.motion_quality import MotionQualityProbe
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.paths import PROJECT_ROOT
from ase_humanoid.runner import EpisodeTracker
from ase_humanoid.utils.checkpoint import POLICY_ENTRIES, load_checkpoint, load_checkpoint_config, require_entries
from ase_humanoid.utils.checks import output_file_problem
from ase_humanoid.utils.shipped_models import PRETRAINED_DIR


def shipped_policies(task_name: str, folder: Path = PRETRAINED_DIR) -> list[Path]:
    """The shipped models trained on task `task_name` (from each file's own run config), by name;
    a damaged file is left out here and reported when it is loaded."""
    found = []
    for path in sorted(Path(folder).glob("*.pt")):
        try:
            config = load_checkpoint_config(path) or {}
        except CheckpointError:
            continue
        if (config.get("task") or {}).get("name") == task_name:
            found.append(path)
    return found


def checkpoint_test_config(checkpoint, overrides=()) -> tuple[DictConfig, dict]:
    """train.py's test=true config for `checkpoint` with the task and robot it was trained with
    unless `overrides` name them (its motion file, network sizes and AMP history follow in
    `load_policy`); returns (config, the checkpoint's state)."""
    from ase_humanoid.builders import resolve_path
    from ase_humanoid.checkpoint_config import compose_run_config

    cfg = compose_run_config(["test=true", f"checkpoint={checkpoint}", *overrides])
    return cfg, load_checkpoint(resolve_path(checkpoint))


def load_policy(cfg: DictConfig):
    """Build env + agent as in training and load the checkpoint's agent state."""
    from ase_humanoid.builders import build_agent, build_env, resolve_path

    if not cfg.checkpoint and cfg.task.name != "HumanoidViewMotion":
        shipped = [path.relative_to(PROJECT_ROOT).as_posix() for path in shipped_policies(cfg.task.name)]
        hint = f"; shipped for {cfg.task.name}: {', '.join(shipped)}" if shipped else ""
        raise ConfigError(f"test=true needs checkpoint=<file or run folder>{hint}")
    check_video_path(cfg.video)
    if cfg.task.name == "HumanoidViewMotion":
        return build_env(cfg), None
    state = load_checkpoint(resolve_path(cfg.checkpoint), map_location=str(cfg.device))
    require_entries(state, cfg.checkpoint, POLICY_ENTRIES, "to evaluate its policy")
    saved = state.get("config") or {}
    warn_task_mismatch(saved, cfg)
    use_saved_motion_file(saved, cfg)
    saved_steps = saved_value(saved, "task.env.num_amp_obs_steps")
    if saved_steps is not None and "num_amp_obs_steps" in cfg.task.get("env", {}):
        # The discriminator saw this history length (the CPU profile's 2 or the release's 10).
        with open_dict(cfg):
            cfg.task.env.num_amp_obs_steps = int(saved_steps)
    if state.get("config") is not None:
        from ase_humanoid.builders import saved_pd_damping

        # The policy is evaluated on the dynamics it was trained on (robot.pd_damping).
        trained = saved_pd_damping(saved)
        if cfg.robot.get("pd_damping", trained) != trained:
            print(f"robot.pd_damping={trained}: the checkpoint was trained with it", file=sys.stderr, flush=True)
        with open_dict(cfg):
            cfg.robot.pd_damping = trained
    saved_train = saved.get("train")
    if saved_train is not None:
        # The env and networks are built as they were trained (algorithm, sizes), whatever
        # cfg.train says: a task trained flat (train=amp_task) has no high-level wrapper, one
        # trained with train=hrl carries its controller.
        OmegaConf.set_struct(cfg, False)
        cfg.train = OmegaConf.create(saved_train)
        OmegaConf.set_struct(cfg, True)
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    agent.load_policy_state_dict(state["agent"])
    return env, agent


def check_video_path(video: str | None) -> None:
    """ConfigError unless `video` is None or a .mp4/.gif path in an existing, writable folder
    (checked before the env is built; a typo must not create folders anywhere)."""
    if video is None:
        return
    path = Path(video).expanduser()
    if path.suffix.lower() not in (".mp4", ".gif"):
        raise ConfigError(f"config key 'video': '{video}' must end in .mp4 or .gif")
    problem = output_file_problem(path)
    if problem is not None:
        raise ConfigError(f"config key 'video': {problem}")


def warn_task_mismatch(saved: dict, cfg: DictConfig) -> None:
    """A policy trained on another task runs (same humanoid), but rarely on purpose: say so."""
    saved_task = saved_value(saved, "task.name")
    if saved_task is not None and saved_task != cfg.task.name:
        algo = saved_value(saved, "train.algo")
        print(f"warning: checkpoint {cfg.checkpoint} was trained on task={saved_task} (algo {algo}); "
              f"evaluating it on task={cfg.task.name}", file=sys.stderr, flush=True)


def use_saved_motion_file(saved: dict, cfg: DictConfig) -> None:
    """With no motion_file on the command line, evaluate on the dataset the checkpoint trained
    on (the task's default would measure quality/* against another dataset); say so, or that
    the file is not here. A motion_file given on the command line is kept."""
    from ase_humanoid.builders import resolve_path

    from ase_humanoid.config import trained_motion_file

    saved_motion = trained_motion_file(saved)
    if cfg.get("motion_file") is not None or not saved_motion or saved_value(saved, "task.name") != cfg.task.name:
        return
    if saved_value(saved, "robot.name") not in (None, cfg.robot.name):
        return  # another humanoid's data would not load; the robot mismatch is reported with the policy
    if not Path(resolve_path(saved_motion)).exists():
        print(f"note: checkpoint {cfg.checkpoint} was trained with motion_file={saved_motion}, which is not "
              "here; evaluating with the task's default", file=sys.stderr, flush=True)
        return
    with open_dict(cfg):
        cfg.motion_file = saved_motion
    print(f"motion_file={saved_motion}: the checkpoint was trained with it", file=sys.stderr, flush=True)


def _policy_actions(agent, obs: torch.Tensor, env) -> torch.Tensor:
    if agent is None:  # view-motion: the env ignores actions
        return torch.zeros(env.num_envs, env.action_space.shape[-1], device=env.device)
    return agent.act(obs, deterministic=True)["actions"]


def evaluate(cfg: DictConfig) -> dict[str, float]:
    env, agent = load_policy(cfg)
    if agent is not None and cfg.latent == "fixed" and hasattr(agent, "set_latents"):
        agent.set_latents(agent.sample_latents(env.num_envs))
    elif cfg.latent not in ("random", "fixed"):
        raise ConfigError(f"latent must be random or fixed, got '{cfg.latent}'")

    if cfg.viewer:
        return run_viewer(env, agent, latent=cfg.latent, task_name=cfg.task.name)
    stats = run_episodes(env, agent, cfg)
    if reports_skills(cfg):
        from ase_humanoid.analysis.skill_report import SkillOptions, format_summary

        # one latent per test episode, capped so that the report stays under a minute on 2 cores
        options = SkillOptions(num_latents=min(int(cfg.test_episodes), MAX_TEST_SKILL_LATENTS),
                               steps=int(cfg.task.env.max_episode_length), seed=int(cfg.seed))
        print(format_summary(skill_report(cfg, options)), flush=True)
    return stats


def run_episodes(env, agent, cfg: DictConfig) -> dict[str, float]:
    """Run `agent` (anything with `act(obs, deterministic=True)`; None for view-motion) until
    `cfg.test_episodes` episodes have ended and `cfg.video` is long enough; print and return
    episode statistics, motion quality and task metrics."""
    frames, recorder = [], None
    frame_rate = 1.0 / env.dt  # every control step of the simulator, also under a high-level policy
    max_video_frames = int(cfg.video_seconds * frame_rate) if cfg.video else 0
    if cfg.video:
        from ase_humanoid.utils.render import OffscreenRenderer

        recorder = OffscreenRenderer(env.mj_model)

        def record_frame():
            if len(frames) < max_video_frames:
                frames.append(recorder.render(env.render_state(0), text=_overlay(env, cfg, len(frames) / frame_rate),
                                              markers=env.markers(0)))

        env.step_callback = record_frame

    tracker = EpisodeTracker()
    quality = MotionQualityProbe(env, env.num_envs) if MotionQualityProbe.available(env) else None
    obs = env.reset()
    finished = 0
    step = 0
    t0 = time.time()
    # Stop after test_episodes episodes and once the video is long enough.
    decisions_per_episode = int(np.ceil(env.max_episode_length * env.dt * env.control_freq))
    step_limit = decisions_per_episode * max(1, int(np.ceil(cfg.test_episodes / env.num_envs))) + 1
    while step < step_limit:
        actions = _policy_actions(agent, obs, env)
        obs, reward, terminated, truncated, info = env.step(actions)
        if agent is not None:
            _advance_latents(agent, terminated | truncated, cfg.latent)
        tracker.add(info, terminated, truncated)
        if quality is not None:
            quality.observe(terminated | truncated)
        finished += int((terminated | truncated).sum())
        step += 1
        if finished >= cfg.test_episodes and len(frames) >= max_video_frames:
            break
    stats = tracker.pop_means()
    if quality is not None:
        stats.update(quality.pop_means())
        stats.update(quality.pop_clip_shares())
    if hasattr(env, "task_metrics"):
        stats.update(env.task_metrics())
    if hasattr(env, "terrain_metrics"):  # fall rate per tile kind on terrain
        stats.update(env.terrain_metrics())
    stats["eval/seconds"] = time.time() - t0
    if recorder is not None:
        from ase_humanoid.utils.render import write_video

        path = write_video(cfg.video, frames, fps=frame_rate)
        recorder.close()
        print(f"video: {path} ({len(frames)} frames)")
    print(format_results(stats, cfg), flush=True)
    print(" ".join(f"{k}={v:.4g}" for k, v in sorted(stats.items())), flush=True)  # one line for scripts
    return stats


# Units of the evaluation's numbers, by the end of their name.
RESULT_UNITS = {"length": "control steps", "fall_rate": "of episodes", "return": "(sum of rewards)",
                "seconds": "s", "_cm": "cm", "root_speed": "m/s", "direction_error": "rad", "speed_error": "m/s",
                "final_distance": "m", "distance": "m", "success_rate": "of goal periods", "failure_rate": "",
                "time_to_success": "s"}


def _unit(name: str) -> str:
    return next((unit for end, unit in RESULT_UNITS.items() if name.endswith(end)), "")


def format_results(stats: dict[str, float], cfg: DictConfig) -> str:
    """The evaluation for a person: what ran, each number with its unit, and for a task policy
    the controller it drove and the command that gives the random-latent baseline."""
    episodes = int(stats.get("episode/count", 0))
    lines = [f"{cfg.task.name}, {episodes} episodes of checkpoint {cfg.checkpoint}:"]
    llc = cfg.get("llc_checkpoint") or (cfg.checkpoint if cfg.train.algo == "hrl" else None)
    if cfg.train.algo == "hrl":
        lines[0] = lines[0][:-1] + f", on the controller {'saved with it' if llc == cfg.checkpoint else llc}:"
    for name, value in sorted(stats.items()):
        if name.startswith("quality/nearest_clip/"):
            continue
        lines.append(f"  {name:32s} {value:10.4g} {_unit(name)}".rstrip())
    shares = {k.rsplit("/", 1)[1]: v for k, v in stats.items() if k.startswith("quality/nearest_clip/")}
    if shares:
        top = sorted(shares.items(), key=lambda kv: -kv[1])[:5]
        lines.append("  frames nearest each clip: " + ", ".join(f"{name} {share:.2f}" for name, share in top))
    if cfg.train.algo == "hrl":
        lines.append(f"  random latents on the same controller: python benchmarks/task_policy.py {cfg.checkpoint} "
                     f"--episodes {max(episodes, 1)}")
    return "\n".join(lines)


MAX_TEST_SKILL_LATENTS = 32


def reports_skills(cfg: DictConfig) -> bool:
    """test=true adds the skill report for an ASE controller on its pre-training task (after
    `load_policy`, cfg.train is the checkpoint's)."""
    return cfg.task.name == "HumanoidASE" and cfg.train.algo == "ase"


def skill_report(cfg: DictConfig, options) -> dict:
    """The skill report (`analysis/skill_report.py`) of the ASE checkpoint `cfg.checkpoint`: networks loaded as
    `load_policy` loads them, on an env per measurement (`skill_config`, `getup_config`)."""
    from ase_humanoid.builders import build_env
    from ase_humanoid.analysis.skill_report import getup_config, measure_skills, skill_config

    rollout_cfg = skill_config(cfg, options)
    env, agent = load_policy(rollout_cfg)
    getup_env = build_env(getup_config(rollout_cfg, options))  # after load_policy: the checkpoint's AMP history
    try:
        return measure_skills(env, agent, getup_env, options)
    finally:
        env.close()
        getup_env.close()


def _advance_latents(agent, dones: torch.Tensor, mode: str) -> None:
    """Keep ASE latents on their training schedule (random) or fixed per env (fixed)."""
    if mode == "fixed" or not hasattr(agent, "advance_latents"):
        return
    agent.advance_latents(dones)


def _overlay(env, cfg: DictConfig, seconds: float) -> list[str]:
    lines = [f"{cfg.task.name}  t={seconds:5.2f}s"]
    if hasattr(env, "describe"):
        lines.append(env.describe(0))
    return lines


def viewer_texts(env, task_name: str, tracker: EpisodeTracker) -> list[tuple[str, str]]:
    """The viewer's corner text: env 0's task and current episode, and the statistics of the
    episodes finished so far (all envs)."""
    steps = int(env.episode_steps[0])
    rows = [("task", task_name)]
    if hasattr(env, "describe"):
        rows.append((getattr(env, "describe_label", "goal"), env.describe(0)))
    rows.append(("episode", f"t={steps * env.dt:5.2f} s  return {float(env.episode_return[0]):.2f}"))
    count = len(tracker.lengths)
    if count:
        rows.append(("finished", f"{count}: return {np.mean(tracker.returns):.2f}  length "
                                 f"{np.mean(tracker.lengths):.0f}  falls {100 * np.mean(tracker.falls):.0f}%"))
    else:
        rows.append(("finished", "0"))
    return rows


def run_viewer(env, agent, latent: str = "random", task_name: str | None = None,
               on_frame=None) -> dict[str, float]:
    """Interactive viewer on env 0: the camera frames and follows its humanoid (the user's zoom,
    turns and pans stay), the task's markers are drawn and the corner shows the task, the current
    episode and the statistics of finished episodes; every control step is shown at real time
    (also under a high-level policy); space pauses. `on_frame(viewer)` runs after each shown
    frame and may return False to close the viewer (tests). Returns the episode statistics."""
    import mujoco

    from ase_humanoid.utils.render import FollowViewer

    data = mujoco.MjData(env.mj_model)
    paused = {"value": False}
    task_name = task_name or type(env).__name__
    tracker = EpisodeTracker()
    stop = {"value": False}

    def on_key(keycode: int) -> None:
        if keycode == 32:  # space
            paused["value"] = not paused["value"]

    obs = env.reset()
    data.qpos[:] = env.render_state(0)
    mujoco.mj_forward(env.mj_model, data)
    with FollowViewer(env.mj_model, data, key_callback=on_key) as viewer:
        last = {"time": time.time()}

        def show() -> None:  # after every control step, also inside a high-level step
            if stop["value"] or not viewer.is_running():
                return
            data.qpos[:] = env.render_state(0)
            mujoco.mj_forward(env.mj_model, data)
            viewer.sync(viewer_texts(env, task_name, tracker), env.markers(0))
            if on_frame is not None and on_frame(viewer) is False:
                stop["value"] = True
            time.sleep(max(0.0, env.dt - (time.time() - last["time"])))
            last["time"] = time.time()

        previous_callback, env.step_callback = env.step_callback, show
        try:
            show()
            while viewer.is_running() and not stop["value"]:
                if paused["value"]:
                    show()  # keeps the camera and the user's moves alive
                    time.sleep(1.0 / 30.0)
                    continue
                actions = _policy_actions(agent, obs, env)
                obs, _, terminated, truncated, info = env.step(actions)
                if agent is not None:
                    _advance_latents(agent, terminated | truncated, latent)
                tracker.add(info, terminated, truncated)
        finally:
            env.step_callback = previous_callback
    if not tracker.lengths:
        return {}
    return tracker.pop_means()
