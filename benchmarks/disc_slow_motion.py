"""How much an AMP/ASE discriminator cares about speed: the style reward of each dataset clip
played at its own speed, slower, and frozen.

    python benchmarks/disc_slow_motion.py CHECKPOINT [--speeds 1 0.5 0.25 0] [--samples 2000] [--json]

For every clip, `--samples` demo AMP windows end at random times of the clip; at speed factor s
their frames lie s * dt apart (dt: the control step) and every velocity in them is scaled by s,
so s = 1 gives exactly the training's demo windows, 0.5 the clip in slow motion and 0 a frozen
pose. Printed per clip: the mean style reward (the checkpoint's own reward, unweighted) at each
factor, `frozen_share` = reward at the smallest factor / reward at the first, and for ASE checkpoints the
mean cosine between the encoder's outputs at s = 1 and at the next factor, and
`encoder_consistency` per factor: over `--spans` runs of `--span-steps` consecutive control steps
of the clip played at that factor, the length of the mean of the encoder's unit codes. That is the
most encoder reward per step (enc . z, z a unit latent) one fixed latent can earn doing that: 1
for a pose held still (every window alike), less the more the windows differ along the way.

Why: a discriminator that gives a clip's poses held still most of the reward of the clip itself
lets a policy earn its style reward by posing slowly, which is safer than moving (fewer falls).
The encoder reward pulls the same way: a latent whose windows stay alike is the easiest to recognise.
Measured on the CPU default's ASE controller, 2-frame windows: the frozen walk keeps 0.87 of the
walk's reward at epoch 1300 and 0.74 at epoch 7000, and its walk latents move at 0.3 m/s against
the clip's 1.5; docs/research-notes.md compares the release's 10-frame windows.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VELOCITY_FIELDS = ("root_lin_vel", "root_ang_vel", "dof_vel", "joint_vel")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="an AMP or ASE checkpoint (run file, epoch file or weights-only)")
    parser.add_argument("--speeds", type=float, nargs="+", default=[1.0, 0.5, 0.25, 0.0],
                        help="speed factors, the first one the reference (default: 1 0.5 0.25 0)")
    parser.add_argument("--samples", type=int, default=2000, help="demo windows per clip and factor")
    parser.add_argument("--spans", type=int, default=32, help="runs per clip and factor for encoder_consistency")
    parser.add_argument("--span-steps", type=int, default=75,
                        help="control steps per run (75: the mean time a latent is held in pre-training, 1-150 steps)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if any(s < 0 for s in args.speeds) or min(args.samples, args.spans, args.span_steps) < 1:
        parser.error("speed factors must be >= 0 and --samples, --spans, --span-steps >= 1")
    return args


def demo_windows_at_speed(env, motion_ids: torch.Tensor, end_times: torch.Tensor, speed: float) -> torch.Tensor:
    """Demo AMP observations `[n, steps * per_step]` of clips `motion_ids [n]` ending at
    `end_times [n]`, played at `speed` times their own speed: frames `speed * dt` apart (newest
    first, as the env's `amp_obs_demo_from_keys`), velocities scaled by `speed`."""
    steps = env.num_amp_obs_steps
    offsets = speed * env.control_dt * torch.arange(steps, dtype=end_times.dtype, device=end_times.device)
    times = (end_times.unsqueeze(-1) - offsets).reshape(-1)  # [n * steps]
    ids = motion_ids.unsqueeze(-1).expand(-1, steps).reshape(-1)
    state = env.motion_lib.get_motion_state(ids, times, body_states=False)
    state = dataclasses.replace(state, **{f: getattr(state, f) * speed for f in VELOCITY_FIELDS})
    return env.amp_obs_from_motion_state(state).reshape(motion_ids.shape[0], -1)


def encoder_consistency(env, agent, clip: int, speed: float, spans: int, span_steps: int,
                        generator: torch.Generator) -> float:
    """Mean over `spans` runs of |mean of the encoder's codes| along `span_steps` consecutive
    control steps of clip `clip` played at `speed` (window ends `speed * dt` apart). A run that
    would pass the clip's end is shortened to what fits (the clip is not looped: most are not
    cycles), so a short clip at full speed is measured over less than `span_steps`."""
    length = float(env.motion_lib.motion_lengths[clip])
    earliest = (env.num_amp_obs_steps - 1) * env.control_dt
    step = speed * env.control_dt
    steps = span_steps if step == 0 else max(1, min(span_steps, int((length - earliest) / step) + 1))
    room = max(length - earliest - step * (steps - 1), 0.0)
    starts = earliest + torch.rand(spans, generator=generator, dtype=torch.float64) * room  # [spans]
    ends = (starts.unsqueeze(-1) + step * torch.arange(steps, dtype=torch.float64)).reshape(-1)
    ids = torch.full(ends.shape, clip, dtype=torch.long, device=env.device)
    windows = demo_windows_at_speed(env, ids, ends.to(device=env.device, dtype=torch.float32), speed)
    codes = agent.encode(windows).reshape(spans, steps, -1)  # [spans, steps, latent_dim], unit rows
    return float(codes.mean(dim=1).norm(dim=-1).mean())


def measure(env, agent, speeds: list[float], samples: int, seed: int, spans: int = 32,
            span_steps: int = 75) -> dict:
    """Per clip: style reward per speed factor, frozen_share and (ASE) encoder cosine and
    encoder consistency."""
    lib = env.motion_lib
    generator = torch.Generator(device="cpu").manual_seed(seed)
    earliest = (env.num_amp_obs_steps - 1) * env.control_dt  # the window fits at speed 1
    clips = {}
    for clip, name in enumerate(lib.motion_names):
        length = float(lib.motion_lengths[clip])
        ends = (earliest + torch.rand(samples, generator=generator, dtype=torch.float64)
                * max(length - earliest, 0.0)).to(device=env.device, dtype=torch.float32)
        ids = torch.full((samples,), clip, dtype=torch.long, device=env.device)
        rewards, codes = [], []
        with torch.no_grad():
            for speed in speeds:
                windows = demo_windows_at_speed(env, ids, ends, speed)
                rewards.append(float(agent.calc_style_reward(windows).mean()))
                if hasattr(agent, "encode"):
                    codes.append(agent.encode(windows))
        entry = {"style_reward": dict(zip([str(s) for s in speeds], rewards)),
                 "frozen_share": rewards[speeds.index(min(speeds))] / rewards[0] if rewards[0] else None}
        if len(codes) > 1:
            entry["encoder_cosine"] = float((codes[0] * codes[1]).sum(-1).mean())
        if codes:
            with torch.no_grad():
                entry["encoder_consistency"] = {
                    str(s): encoder_consistency(env, agent, clip, s, spans, span_steps, generator) for s in speeds}
        clips[name] = entry
    return clips


def main(argv=None) -> dict:
    args = parse_args(argv)
    from ase_humanoid.errors import ConfigError
    from ase_humanoid.evaluate import checkpoint_test_config, load_policy

    cfg, _ = checkpoint_test_config(args.checkpoint, ["num_envs=1"])  # the dataset it was trained on
    task = cfg.task.name
    if task not in ("HumanoidAMP", "HumanoidASE"):
        raise ConfigError(f"{args.checkpoint}: a {task} checkpoint; this measures AMP and ASE discriminators")
    env, agent = load_policy(cfg)
    try:
        clips = measure(env, agent, args.speeds, args.samples, args.seed, args.spans, args.span_steps)
    finally:
        env.close()
    report = {"checkpoint": str(args.checkpoint), "task": task, "amp_steps": env.num_amp_obs_steps,
              "speeds": args.speeds, "samples": args.samples, "spans": args.spans,
              "span_steps": args.span_steps, "clips": clips}
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        print(f"{args.checkpoint}: {task}, {env.num_amp_obs_steps}-frame AMP windows; style reward at speed "
              + " / ".join(f"{s:g}" for s in args.speeds))
        for name, entry in clips.items():
            rewards = " / ".join(f"{r:.2f}" for r in entry["style_reward"].values())
            line = f"  {name:32s} {rewards}   slowest keeps {entry['frozen_share']:.2f}"
            if "encoder_cosine" in entry:
                line += f"; encoder cos({args.speeds[0]:g}, {args.speeds[1]:g}) {entry['encoder_cosine']:.2f}"
            if "encoder_consistency" in entry:
                line += "; encoder consistency " + " / ".join(f"{r:.2f}" for r in entry["encoder_consistency"].values())
            print(line)
    return report


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
