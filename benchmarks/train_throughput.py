"""Training throughput: samples per second of a full epoch (rollout + update) and where the time
goes (simulation, observations/rewards, policy inference, recording, update), against stepping
the same env alone (random actions, no agent) measured in the same run.

    python benchmarks/train_throughput.py --json                       # HumanoidASE, 256 envs, CPU
    python benchmarks/train_throughput.py --task HumanoidAMP --json                  # CPU profile
    python benchmarks/train_throughput.py --task HumanoidAMP --json profile=paper    # the release's sizes
    python benchmarks/train_throughput.py --task HumanoidHeading --envs 128 --compare-amp-env-only --json
    python benchmarks/train_throughput.py --task HumanoidAMP --busy 1 --json         # beside a busy process
    python benchmarks/train_throughput.py --task HumanoidAMP --beside-training --json  # beside a 2nd training

Prints one JSON object: samples_per_s, env_only_samples_per_s and their ratio, update_share (the
update's fraction of the epoch time), the CPU's model and cores. The first epoch (warm-up) is
excluded from the averages. A hierarchical task (train=hrl) without `llc_checkpoint=...` runs on a
freshly initialised LLC (see below); its samples are high-level ones (`llc_steps` control steps).

`--busy N` / `--beside-training`: the same measurements idle and beside a load, in one run: N
single-threaded busy processes (`while True: pass`), or a second training of the same task and
settings (`train.py` in a temporary run_dir; the timing starts once it has logged its first epoch).
The load is stopped (SIGSTOP) for idle measurements and let run (SIGCONT) for loaded ones; the
timed epochs alternate idle, loaded, idle, ... so that drift affects both alike. Adds `loaded`
(the same figures under load), `loaded_to_idle` (samples/s) and `env_only_loaded_to_idle`. The
load's processes are killed at the end, on errors and Ctrl-C too (benchmarks/_load.py).

`--update-split`: adds `update_split`, the update's seconds per epoch by part, wall and process
CPU time, measured in-run (see `UpdateSplit`): forward, penalty_grad, backward, optimiser, other.
`--compare-reference-update`: the timed epochs alternate between the agent's reference update
(`agent.use_reference_update(True)`: plain Adam, full backward, full gathers) and its fast one,
which learn the same (tests/test_update_equivalence.py); adds `reference` (the same figures for
the reference update) and `update_speedup`. Best with `--update-threads N`, so that both paths
run on the same thread count.

`--idle-rounds R` (the plain idle mode): R rounds of env-only stepping then the timed epochs,
instead of one env-only measurement before all epochs; adds `rounds` (each round's figures) and
`ratio_to_env_only_median`, so a slow or fast moment of the machine (their ratio moves by +-0.03
between single runs on a 2-core cloud machine) weighs on one round only.

`--from-weights CKPT`: the agent starts from a checkpoint's networks and normalisers (a run's
latest.pt or a shipped model of the same task and sizes) instead of fresh ones: what a long run
times. `--compare-denormals` (with it): the same measurement in child processes with denormal
floats kept (`ASE_HUMANOID_KEEP_DENORMALS=1`) and flushed (the default, utils/denormals.py),
alternating `--rounds` times; adds `denormals` with both medians and `flush_speedup`.

    python benchmarks/train_throughput.py --envs 128 --from-weights pretrained/ase_llc_amp_humanoid.pt \
        --compare-denormals --rounds 2 --json

`--compare-amp-env-only` (hierarchical tasks): control steps per second of hierarchical training
(rollout + update; one high-level sample is `llc_steps` control steps) against plain HumanoidAMP
env-only stepping with the same number of envs (the target) and the hierarchical env's own
env-only stepping (LLC included), in interleaved rounds so that load from other processes affects
all three alike; reports medians over the rounds and the median of the per-round ratios. Without
`llc_checkpoint=...` the LLC is a freshly initialised ASE controller of the profile's sizes (a
speed measurement needs no trained one; a trained one falls less, so it resets less).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/_load.py, also when imported

import ase_humanoid  # noqa: E402,F401  (first: sets the OpenMP wait policy before torch loads, as train.py)
from _load import BackgroundLoad  # noqa: E402  (benchmarks/_load.py)

from ase_humanoid.utils.cpu_threads import UpdateThreadChooser, available_cores  # noqa: E402

# Untimed epochs per condition in which the update's thread choice settles (warm-up, then each
# of the two counts once: utils/cpu_threads.py).
ADAPT_EPOCHS = 3


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="HumanoidASE")
    parser.add_argument("--envs", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3,
                        help="timed epochs (per condition with a load) after one warm-up epoch")
    parser.add_argument("--sim", default="mujoco")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="MuJoCo threads (default: all cores)")
    parser.add_argument("--torch-threads", type=int, default=None, help="torch threads while stepping envs")
    parser.add_argument("--update-threads", type=int, default=None, help="torch threads during the update")
    load_group = parser.add_mutually_exclusive_group()
    load_group.add_argument("--busy", type=int, default=0, metavar="N",
                            help="also measure beside N single-threaded busy processes (idle and loaded "
                                 "epochs interleaved)")
    load_group.add_argument("--beside-training", action="store_true",
                            help="also measure beside a second training of the same task and settings "
                                 "(train.py in a temporary run_dir)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--update-split", action="store_true",
                        help="time the update's parts (forward, penalty_grad, backward, optimiser, other)")
    parser.add_argument("--compare-reference-update", action="store_true",
                        help="alternate timed epochs between the reference and the fast update")
    parser.add_argument("--compare-amp-env-only", action="store_true",
                        help="hierarchical task: training control steps/s against HumanoidAMP env-only")
    parser.add_argument("--rounds", type=int, default=5,
                        help="--compare-amp-env-only / --compare-denormals: interleaved rounds")
    parser.add_argument("--idle-rounds", type=int, default=1, metavar="R",
                        help="plain idle mode: R rounds of env-only stepping + timed epochs (median ratio)")
    parser.add_argument("--from-weights", metavar="CKPT", default=None,
                        help="start from a checkpoint's networks and normalisers (a trained agent)")
    parser.add_argument("--compare-denormals", action="store_true",
                        help="denormals kept against flushed, in alternating child processes")
    parser.add_argument("overrides", nargs="*", help="extra train.py overrides, e.g. train.params.mini_epochs=2")
    args = parser.parse_args(argv)
    if args.busy < 0:
        parser.error("--busy needs a count >= 0")
    if args.compare_amp_env_only and (args.busy or args.beside_training):
        parser.error("--busy / --beside-training measure the plain mode, not --compare-amp-env-only")
    if args.compare_reference_update and (args.busy or args.beside_training or args.compare_amp_env_only):
        parser.error("--compare-reference-update measures the plain idle mode")
    if args.compare_denormals and (args.busy or args.beside_training or args.compare_amp_env_only
                                   or args.compare_reference_update):
        parser.error("--compare-denormals measures the plain idle mode")
    if args.idle_rounds < 1:
        parser.error("--idle-rounds needs a count >= 1")
    if args.idle_rounds > 1 and (args.busy or args.beside_training or args.compare_amp_env_only
                                 or args.compare_reference_update or args.compare_denormals):
        parser.error("--idle-rounds measures the plain idle mode")
    if args.compare_denormals:
        return compare_denormals(args, argv if argv is not None else sys.argv[1:])

    overrides = [f"task={args.task}", f"num_envs={args.envs}", f"sim={args.sim}", f"device={args.device}",
                 *args.overrides]
    if args.threads:
        overrides.append(f"num_threads={args.threads}")
    if args.compare_amp_env_only:
        return compare_with_amp_env_only(args, overrides)
    with tempfile.TemporaryDirectory() as tmp:
        overrides = with_fresh_llc_if_hierarchical(overrides, Path(tmp))
        with start_load(args, overrides, Path(tmp)) as load:
            result = measure(args, overrides, load)
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def start_load(args, overrides: list[str], folder: Path):
    """The load the command line asks for (a `BackgroundLoad`, see benchmarks/_load.py), or None
    in a context that does nothing."""
    if args.busy:
        return BackgroundLoad.busy(args.busy)
    if args.beside_training:
        # The same settings as the measured training, --torch-threads / --update-threads included.
        extra = [f"{key}={value}" for key, value in (("torch_threads", args.torch_threads),
                                                     ("update_threads", args.update_threads)) if value]
        return BackgroundLoad.training([*overrides, *extra], folder)
    return contextlib.nullcontext()


def measure(args, overrides: list[str], load: BackgroundLoad | None) -> dict:
    """Warm-up epoch, env-only stepping, then `args.epochs` timed epochs; with a load, each
    measurement idle (load stopped) and loaded, the epochs interleaved."""
    import torch

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config(overrides)
    # As train.py does, unless --torch-threads says otherwise.
    torch.set_num_threads(args.torch_threads or int(cfg.torch_threads))
    env = build_env(cfg)
    agent = build_agent(cfg, env)
    if args.from_weights:
        from ase_humanoid.utils.checkpoint import load_checkpoint

        agent.load_policy_state_dict(load_checkpoint(args.from_weights)["agent"])
    sim_time = time_the_physics(env)
    split = UpdateSplit(agent) if args.update_split or args.compare_reference_update else None
    conditions = ["idle", "loaded"] if load is not None else ["idle"]
    if args.compare_reference_update:
        conditions = ["reference", "idle"]  # "idle": the fast update, as in a plain run
    if load is not None:
        load.wait_ready()  # a second training: past its start-up and first epoch
        load.set_active(False)
    horizon = agent.config.horizon_length
    with tempfile.TemporaryDirectory() as run_dir:
        # As train.py: the update's thread count adapts to the load unless --update-threads fixes it.
        adapt = args.update_threads is None and bool(cfg.adapt_update_threads)
        runner = Runner(env, agent, run_dir, config={}, max_epochs=1, save_every=0, is_main=False,
                        update_threads=args.update_threads or int(cfg.update_threads),
                        adapt_update_threads=adapt)
        runner.learn()  # one warm-up epoch (first-call allocations, demo buffer already filled)
        if args.idle_rounds > 1:
            return idle_rounds(args, cfg, env, runner, sim_time, split, adapt)
        env_only = {}
        for condition in conditions:
            set_condition(load, condition)
            if condition == "reference":  # the same env: one env-only figure for both updates
                continue
            env_only[condition] = env_only_samples_per_s(env, args.epochs * horizon)
        env_only.setdefault("reference", env_only["idle"])
        runner.obs = env.reset()  # the env-only steps moved the worlds on
        epochs: dict[str, list[dict]] = {condition: [] for condition in conditions}
        if adapt and not args.compare_reference_update:
            # The thread choice follows the load over a few epochs, so each condition is measured
            # as a block after the chooser has timed both counts under it (as a long run would).
            for condition in conditions:
                set_condition(load, condition)
                runner.thread_chooser = UpdateThreadChooser(runner.update_threads)
                for _ in range(ADAPT_EPOCHS):
                    timed_epoch(runner, sim_time)
                epochs[condition] = [timed_epoch(runner, sim_time, split) for _ in range(args.epochs)]
        else:
            for _ in range(args.epochs):
                for condition in conditions:
                    set_condition(load, condition)
                    agent.use_reference_update(condition == "reference")
                    epochs[condition].append(timed_epoch(runner, sim_time, split))
            agent.use_reference_update(False)
    if split is not None:
        split.remove()
    env.close()
    samples_per_epoch = horizon * env.num_envs
    result = {**run_description(args, cfg, env, runner),
              **summarize(epochs["idle"], samples_per_epoch, env_only["idle"])}
    if split is not None:
        result["update_split"] = mean_split(epochs["idle"])
    if args.compare_reference_update:
        result["reference"] = {**summarize(epochs["reference"], samples_per_epoch, env_only["reference"]),
                               "update_split": mean_split(epochs["reference"])}
        result["update_speedup"] = (result["reference"]["update_split"]["wall"]["update"]
                                    / result["update_split"]["wall"]["update"])
    if load is not None:
        loaded = summarize(epochs["loaded"], samples_per_epoch, env_only["loaded"])
        result.update({
            "load": load.description, "loaded": loaded,
            "loaded_to_idle": loaded["samples_per_s"] / result["samples_per_s"],
            "env_only_loaded_to_idle": env_only["loaded"] / env_only["idle"],
        })
    add_control_steps(result, cfg, env)
    return result


def run_description(args, cfg, env, runner) -> dict:
    """What was measured, and on what: the head of the result."""
    import torch

    return {"task": args.task, "algo": cfg.train.algo, "envs": env.num_envs, "sim": cfg.sim.name,
            "device": str(cfg.device), "epochs": args.epochs,
            "horizon_length": runner.agent.config.horizon_length, "profile": str(cfg.profile),
            "torch_threads": torch.get_num_threads(), "update_threads": runner.update_threads,
            "mujoco_threads": int(cfg.num_threads), "cpu": cpu_description()}


def add_control_steps(result: dict, cfg, env) -> None:
    """Hierarchical tasks: one high-level sample is llc_steps control steps."""
    if cfg.train.algo != "hrl":
        return
    result["llc_steps"] = env.llc_steps
    for figures in (result, result.get("loaded", {})):
        if figures:
            figures["control_steps_per_s"] = figures["samples_per_s"] * env.llc_steps


def idle_rounds(args, cfg, env, runner, sim_time: float, split, adapt: bool) -> dict:
    """`--idle-rounds`: env-only stepping then `args.epochs` timed epochs, `args.idle_rounds`
    times; the figures of all epochs against the median env-only rate, and each round's own."""
    import statistics

    horizon = runner.agent.config.horizon_length
    samples_per_epoch = horizon * env.num_envs
    rounds, epochs = [], []
    for _ in range(args.idle_rounds):
        env_only = env_only_samples_per_s(env, args.epochs * horizon)
        runner.obs = env.reset()
        if adapt:  # as in measure(): the thread choice settles before the timed epochs
            runner.thread_chooser = UpdateThreadChooser(runner.update_threads)
            for _ in range(ADAPT_EPOCHS):
                timed_epoch(runner, sim_time)
        round_epochs = [timed_epoch(runner, sim_time, split) for _ in range(args.epochs)]
        epochs.extend(round_epochs)
        figures = summarize(round_epochs, samples_per_epoch, env_only)
        rounds.append({key: figures[key] for key in ("samples_per_s", "env_only_samples_per_s",
                                                     "ratio_to_env_only", "update_share")})
    if split is not None:
        split.remove()
    env.close()
    env_only_median = statistics.median(r["env_only_samples_per_s"] for r in rounds)
    result = {**run_description(args, cfg, env, runner),
              **summarize(epochs, samples_per_epoch, env_only_median),
              "ratio_to_env_only_median": statistics.median(r["ratio_to_env_only"] for r in rounds),
              "rounds": rounds}
    if split is not None:
        result["update_split"] = mean_split(epochs)
    add_control_steps(result, cfg, env)
    return result


def set_condition(load: BackgroundLoad | None, condition: str) -> None:
    if load is not None:
        load.set_active(condition == "loaded")


class UpdateSplit:
    """Seconds of the update's parts, wall and process CPU (all threads), measured in-run by
    wrapping what the update calls:

        forward       the loss of each minibatch (`agent._loss`), less penalty_grad
        penalty_grad  torch.autograd.grad inside the loss (the discriminator's input gradients
                      of its gradient penalty, built for double backward)
        backward      torch.autograd.backward (loss.backward())
        optimiser     optimizer.step
        other         the rest of agent.update: rewards, GAE, batch gathers, normaliser and
                      buffer updates, zero_grad, statistics

    `take()` returns the seconds since the last `take()` and starts over; `remove()` unwraps.
    """

    PARTS = ("forward", "penalty_grad", "backward", "optimiser", "other")

    def __init__(self, agent):
        import torch

        self._seconds = {"wall": {}, "cpu": {}}
        self._undo = []
        self._wrap(agent, "update", "update")
        self._wrap(agent, "_loss", "loss")
        self._wrap(agent.optimizer, "step", "optimiser")
        self._wrap(torch.autograd, "backward", "backward")  # Tensor.backward looks it up per call
        self._wrap(torch.autograd, "grad", "penalty_grad")

    def _wrap(self, owner, name: str, part: str) -> None:
        original = getattr(owner, name)
        had_own = name in vars(owner)  # a module function, or an instance attribute already

        def timed(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                for clock, start, now in (("wall", wall, time.perf_counter()), ("cpu", cpu, time.process_time())):
                    self._seconds[clock][part] = self._seconds[clock].get(part, 0.0) + now - start

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original) if had_own else delattr(owner, name))

    def take(self) -> dict[str, dict[str, float]]:
        result = {}
        for clock, seconds in self._seconds.items():
            get = lambda part: seconds.get(part, 0.0)  # noqa: E731
            result[clock] = {
                "forward": get("loss") - get("penalty_grad"), "penalty_grad": get("penalty_grad"),
                "backward": get("backward"), "optimiser": get("optimiser"),
                "other": get("update") - get("loss") - get("backward") - get("optimiser"),
                "update": get("update"),
            }
            seconds.clear()
        return result

    def remove(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


def mean_split(epochs: list[dict]) -> dict:
    """Mean seconds per epoch of each update part (wall and cpu), and each part's share of the
    update's wall time."""
    splits = [epoch["update_split"] for epoch in epochs]
    mean = {clock: {part: sum(s[clock][part] for s in splits) / len(splits) for part in splits[0][clock]}
            for clock in ("wall", "cpu")}
    mean["wall_share"] = {part: mean["wall"][part] / mean["wall"]["update"] for part in UpdateSplit.PARTS}
    return mean


def time_the_physics(env) -> dict[str, float]:
    """Wrap `env.sim.step` to add its wall time to the returned dict's "s" (the physics apart
    from the rest of env.step: observations, rewards, resets)."""
    sim_time = {"s": 0.0}
    sim_step = env.sim.step

    def timed_step(*a, **k):
        t0 = time.perf_counter()
        sim_step(*a, **k)
        sim_time["s"] += time.perf_counter() - t0

    env.sim.step = timed_step
    return sim_time


def timed_epoch(runner, sim_time: dict[str, float], split: UpdateSplit | None = None) -> dict:
    """One epoch (rollout + update): seconds in total and per part (with `split`: also the
    update's parts, "update_split")."""
    sim_time["s"] = 0.0
    if split is not None:
        split.take()  # drop what earlier, untimed epochs left
    t0 = time.perf_counter()
    timings = runner.collect_rollout()
    t1 = time.perf_counter()
    runner.update_agent()
    t2 = time.perf_counter()
    epoch = {"sim": sim_time["s"], "obs_reward_reset": timings["time/sim_and_obs"] - sim_time["s"],
             "inference": timings["time/inference"], "record": timings["time/record"], "update": t2 - t1,
             "total": t2 - t0, "update_threads": runner.last_update_threads or 0}
    if split is not None:
        epoch["update_split"] = split.take()
    return epoch


def summarize(epochs: list[dict], samples_per_epoch: int, env_only: float) -> dict:
    """Throughput of timed epochs, against env-only stepping, and the shares of their time."""
    elapsed = sum(epoch["total"] for epoch in epochs)
    samples_per_s = samples_per_epoch * len(epochs) / elapsed
    share = {part: sum(epoch[part] for epoch in epochs) / elapsed for part in epochs[0]
             if part not in ("total", "update_threads", "update_split")}
    return {
        "samples_per_s": samples_per_s, "env_only_samples_per_s": env_only,
        "ratio_to_env_only": samples_per_s / env_only, "seconds_per_epoch": elapsed / len(epochs),
        "update_share": share["update"], "share": share,
        "per_epoch_samples_per_s": [samples_per_epoch / epoch["total"] for epoch in epochs],
        "per_epoch_update_threads": [int(epoch["update_threads"]) for epoch in epochs],
    }


def compare_denormals(args, argv: list[str]) -> int:
    """This benchmark without --compare-denormals in child processes, denormals kept and flushed
    in alternating rounds (the flag is fixed per thread when the thread starts, so one process
    cannot measure both); prints medians of samples/s and update seconds per epoch."""
    import statistics
    import subprocess

    from ase_humanoid.utils.denormals import KEEP_ENV_VAR

    child_argv = [a for a in argv if a not in ("--compare-denormals", "--json")] + ["--json"]
    runs: dict[str, list[dict]] = {"kept": [], "flushed": []}
    for _ in range(max(args.rounds, 1)):
        for condition in runs:
            env = {k: v for k, v in os.environ.items() if k != KEEP_ENV_VAR}
            if condition == "kept":
                env[KEEP_ENV_VAR] = "1"
            out = subprocess.run([sys.executable, __file__, *child_argv], env=env, check=True,
                                 capture_output=True, text=True).stdout
            runs[condition].append(json.loads(out.strip().splitlines()[-1]))

    def medians(results: list[dict]) -> dict:
        return {"samples_per_s": statistics.median(r["samples_per_s"] for r in results),
                "update_s_per_epoch": statistics.median(r["seconds_per_epoch"] * r["update_share"]
                                                        for r in results),
                "update_share": statistics.median(r["update_share"] for r in results),
                "ratio_to_env_only": statistics.median(r["ratio_to_env_only"] for r in results),
                "per_round_samples_per_s": [r["samples_per_s"] for r in results]}

    kept, flushed = medians(runs["kept"]), medians(runs["flushed"])
    first = runs["flushed"][0]
    result = {key: first[key] for key in ("task", "algo", "envs", "sim", "device", "epochs", "profile", "cpu")}
    result.update({"from_weights": args.from_weights, "rounds": args.rounds,
                   "denormals": {"kept": kept, "flushed": flushed},
                   "flush_speedup": flushed["samples_per_s"] / kept["samples_per_s"],
                   "update_speedup": kept["update_s_per_epoch"] / flushed["update_s_per_epoch"]})
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def cpu_description() -> dict:
    """The CPU's model name (/proc/cpuinfo; platform.processor() elsewhere) and core counts."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    return {"model": model, "cores": os.cpu_count(), "usable_cores": available_cores()}


def with_fresh_llc_if_hierarchical(overrides: list[str], folder: Path) -> list[str]:
    """A hierarchical task without `llc_checkpoint=` gets a freshly initialised LLC (see
    `fresh_llc_checkpoint`), written to `folder`."""
    from ase_humanoid.config import compose_config

    cfg = compose_config(overrides)
    if cfg.train.algo != "hrl" or cfg.llc_checkpoint:
        return overrides
    return [*overrides, f"llc_checkpoint={fresh_llc_checkpoint(overrides, folder)}"]


def env_only_samples_per_s(env, steps: int) -> float:
    """Samples per second of `env.step` alone: actions ~ N(0, 0.3) (random-policy-like falls and
    resets), so the ratio to training throughput shows what the agent costs."""
    import torch

    generator = torch.Generator(device=env.device).manual_seed(0)
    shape = (env.num_envs, env.action_space.shape[-1])
    env.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        env.step(0.3 * torch.randn(shape, generator=generator, device=env.device))
    return steps * env.num_envs / (time.perf_counter() - t0)


def compare_with_amp_env_only(args, overrides: list[str]) -> int:
    """Hierarchical training against plain HumanoidAMP env-only stepping (see module docstring)."""
    import statistics

    import torch

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config
    from ase_humanoid.runner import Runner

    cfg = compose_config(overrides)
    if cfg.train.algo != "hrl":
        raise SystemExit(f"--compare-amp-env-only needs a hierarchical task (train=hrl), not {cfg.train.algo}")
    with tempfile.TemporaryDirectory() as tmp:
        if not cfg.llc_checkpoint:
            overrides = [*overrides, f"llc_checkpoint={fresh_llc_checkpoint(overrides, Path(tmp))}"]
            cfg = compose_config(overrides)
        torch.set_num_threads(args.torch_threads or int(cfg.torch_threads))
        env = build_env(cfg)
        agent = build_agent(cfg, env)
        # Plain AMP with the same envs, simulator and threads (and the same profile).
        amp_cfg = compose_config([o for o in overrides if o.split("=", 1)[0] in
                                  ("num_envs", "sim", "device", "num_threads", "profile", "seed", "robot")]
                                 + ["task=HumanoidAMP"])
        amp_env = build_env(amp_cfg)
        llc_steps = env.llc_steps
        horizon = agent.config.horizon_length
        control_steps = horizon * llc_steps  # per env and epoch
        runner = Runner(env, agent, tmp, config={}, max_epochs=1, save_every=0, is_main=False,
                        update_threads=args.update_threads or int(cfg.update_threads), quality_every=0,
                        adapt_update_threads=args.update_threads is None and bool(cfg.adapt_update_threads))
        runner.learn()  # warm-up epoch
        env_only_samples_per_s(amp_env, llc_steps)  # warm-up steps
        rates: dict[str, list[float]] = {"train": [], "amp_env_only": [], "hrl_env_only": []}
        update_share = []
        for _ in range(args.rounds):
            runner.obs = env.reset()  # the env-only steps moved the worlds on
            t0 = time.perf_counter()
            runner.collect_rollout()
            t1 = time.perf_counter()
            runner.update_agent()
            t2 = time.perf_counter()
            rates["train"].append(control_steps * env.num_envs / (t2 - t0))
            update_share.append((t2 - t1) / (t2 - t0))
            rates["amp_env_only"].append(env_only_samples_per_s(amp_env, control_steps))
            rates["hrl_env_only"].append(llc_steps * env_only_samples_per_s(env, horizon))
    env.close()
    amp_env.close()
    median = {k: statistics.median(v) for k, v in rates.items()}
    result = {
        "task": args.task, "envs": env.num_envs, "profile": str(cfg.profile), "rounds": args.rounds,
        "llc": {"actor_units": list(env.llc.ase_config.actor_units), "disc_units": list(env.llc.ase_config.disc_units),
                "num_amp_obs_steps": int(env.num_amp_obs_steps), "llc_steps": llc_steps},
        "high_level": {k: agent.config.to_dict()[k] for k in ("actor_units", "critic_units", "mini_epochs",
                                                                "minibatch_size", "horizon_length")},
        "train_control_steps_per_s": median["train"],
        "train_high_level_samples_per_s": median["train"] / llc_steps,
        "hrl_env_only_control_steps_per_s": median["hrl_env_only"],
        "amp_env_only_control_steps_per_s": median["amp_env_only"],
        "ratio_train_to_amp_env_only": statistics.median(
            t / a for t, a in zip(rates["train"], rates["amp_env_only"])),
        "ratio_hrl_env_only_to_amp_env_only": statistics.median(
            h / a for h, a in zip(rates["hrl_env_only"], rates["amp_env_only"])),
        "update_share": statistics.median(update_share),
        "per_round": rates,
        "torch_threads": torch.get_num_threads(), "update_threads": runner.update_threads,
        "mujoco_threads": int(cfg.num_threads),
    }
    print(json.dumps(result) if args.json else json.dumps(result, indent=2))
    return 0


def fresh_llc_checkpoint(overrides: list[str], folder: Path) -> Path:
    """An untrained ASE controller's run checkpoint (`folder/llc.pt`) with the sizes the profile in
    `overrides` gives ASE pre-training (CPU profile: 512-256, 2-frame AMP history; paper: the
    release's), as `train.py task=HumanoidASE` would write it at epoch 0."""
    import torch
    from omegaconf import OmegaConf

    from ase_humanoid.builders import build_agent, build_env
    from ase_humanoid.config import compose_config

    keep = ("sim", "device", "num_threads", "profile", "robot")
    cfg = compose_config([o for o in overrides if o.split("=", 1)[0] in keep]
                         + ["task=HumanoidASE", "num_envs=2", "task.env.fall_pool_size=2",
                            "train.params.horizon_length=2", "train.params.amp_obs_demo_buffer_size=64",
                            "train.params.amp_replay_buffer_size=64", "train.params.amp_batch_size=16"])
    env = build_env(cfg)
    state = {"agent": build_agent(cfg, env).state_dict(), "config": OmegaConf.to_container(cfg, resolve=True)}
    env.close()
    path = folder / "llc.pt"
    torch.save(state, path)
    return path


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
