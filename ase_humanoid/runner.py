"""The rollout/training loop, apart from the algorithms: env steps -> agent -> update -> log/save.

One epoch = `horizon_length` control steps in every env, then one agent update. After every epoch
`latest.pt` is written atomically; every `save_every` epochs also `epoch_<n>.pt`. A checkpoint
holds the agent (networks, optimisers, normalisers, buffers, latents), the env's state (physics
state of every world, episode counters, AMP history) and every RNG, so `resume=true` continues
exactly where the run stopped. The AMP replay buffer is the exception to "one file": with
`amp_replay_journal` (default) it lives in `run_dir/replay/` as an append-only journal that
latest.pt refers to (agents/replay_journal.py), so a checkpoint writes only the new rows.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ase_humanoid.agents.replay_journal import BufferJournal, restore_buffer
from ase_humanoid.envs.checkpointing import env_state_dict, load_env_state_dict
from ase_humanoid.envs.motion_quality import MotionQualityProbe
from ase_humanoid.errors import TrainingError
from ase_humanoid.utils.cpu_threads import UpdateThreadChooser
from ase_humanoid.utils.interrupts import interrupts_held
from ase_humanoid.errors import CheckpointError
from ase_humanoid.utils.checkpoint import RESUME_ENTRIES, load_checkpoint, require_entries, save_checkpoint
from ase_humanoid.utils.logger import TrainingLogger


def rng_state() -> dict[str, Any]:
    """Every RNG's state as plain data (tuples, numbers, tensors): checkpoints load weights-only."""
    kind, key, pos, has_gauss, gauss = np.random.get_state()
    return {"python": random.getstate(), "numpy": (kind, torch.from_numpy(key.astype(np.int64)), int(pos),
                                                   int(has_gauss), float(gauss)),
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    kind, key, pos, has_gauss, gauss = state["numpy"]
    key = key.cpu().numpy() if isinstance(key, torch.Tensor) else np.asarray(key)
    np.random.set_state((kind, key.astype(np.uint32), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"].cpu())
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


REPLAY_FOLDER = "replay"  # the AMP replay journal's folder inside a run folder


def split_journal_ref(agent_state: dict[str, Any]) -> tuple[dict[str, Any], dict | None]:
    """(agent state without its replay-journal reference, the reference or None)."""
    replay = agent_state.get("replay_buffer")
    if not isinstance(replay, dict) or "journal" not in replay:
        return agent_state, None
    rest = {key: value for key, value in replay.items() if key != "journal"}
    return {**agent_state, "replay_buffer": rest}, replay["journal"]


def fault_counters(env) -> dict[str, float]:
    """The env's cumulative fault counters, for the logs: envs reset for a non-finite physics
    state and env steps whose action held a NaN/inf."""
    out = {}
    for attr, key in (("nonfinite_resets", "env/nonfinite_resets"), ("nonfinite_actions", "env/nonfinite_actions")):
        value = getattr(env, attr, None)
        if value is not None:
            out[key] = float(value)
    return out


@torch.no_grad()
def encoder_agreement(agent, act_out: dict, info: dict, env_ids: torch.Tensor) -> torch.Tensor | None:
    """enc(amp_obs) . z `[len(env_ids)]` of an ASE agent this step: its encoder on the AMP
    observations of the states reached, against the latents that acted (the pairing its encoder
    reward uses); None for agents without an encoder. 1: the latent is fully recoverable."""
    if not hasattr(agent, "encode") or "latents" not in act_out or "amp_obs" not in info:
        return None
    enc = agent.encode(info["amp_obs"].index_select(0, env_ids))
    return (enc * act_out["latents"].index_select(0, env_ids)).sum(-1)


def check_update_finite(stats: dict[str, float], epoch: int) -> None:
    """Raise TrainingError naming the first non-finite update statistic: the weights it came
    from are NaN too, so stopping before `save()` keeps the last good checkpoint."""
    for name, value in stats.items():
        if not np.isfinite(float(value)):
            raise TrainingError(f"training diverged at epoch {epoch}: update statistic '{name}' is {float(value)} "
                                f"(nothing saved for this epoch; lower train.params.learning_rate or check the inputs)")


@dataclass
class EpisodeTracker:
    """Running means of finished episodes' return and length (for logs and evaluation)."""

    returns: list[float] = field(default_factory=list)
    lengths: list[float] = field(default_factory=list)
    falls: list[float] = field(default_factory=list)

    def add(self, info: dict, terminated: torch.Tensor, truncated: torch.Tensor) -> None:
        """`info["episode"]` holds return and length of the envs done this step, in env order."""
        done = terminated | truncated
        episode = info.get("episode")
        if not episode or not bool(done.any()):
            return
        self.returns.extend(episode["return"].tolist())
        self.lengths.extend(episode["length"].float().tolist())
        self.falls.extend(terminated[done].float().tolist())

    def pop_means(self) -> dict[str, float]:
        if not self.lengths:
            return {}
        out = {"episode/return": float(np.mean(self.returns)), "episode/length": float(np.mean(self.lengths)),
               "episode/fall_rate": float(np.mean(self.falls)), "episode/count": float(len(self.lengths))}
        self.returns, self.lengths, self.falls = [], [], []
        return out


class Runner:
    """Drives `env` and `agent` for training; owns checkpoints and logging.

    Args:
        env: a humanoid env (`reset`, `step`, `state_dict`/`load_state_dict`).
        agent: PPO/AMP/ASE/HRL agent (`act`, `record_transition`, `update`, `state_dict`).
        run_dir: folder for checkpoints, TensorBoard events and the resolved config.
        config: resolved run config (a plain dict), stored in every checkpoint.
        is_main: rank 0 of a distributed run (logs and saves); True when not distributed.
        quality_every: measure motion quality (`envs/motion_quality.py`) during the rollout of
            every this many epochs (the first included), on `quality_envs` worlds; 0: never.
            The same pass logs how those worlds differ (`skills/*`: distinct nearest clips,
            spread of root speed, ASE encoder agreement enc(amp_obs) . z).
        update_threads: torch threads of the update (None: leave torch's setting).
        adapt_update_threads: choose 1 or `update_threads` per update by measured time.
    """

    def __init__(self, env, agent, run_dir: str | Path, config: dict, max_epochs: int,
                 save_every: int = 50, checkpoint_every: int = 1, is_main: bool = True,
                 update_threads: int | None = None, quality_every: int = 5, quality_envs: int = 32,
                 adapt_update_threads: bool = False):
        self.env, self.agent = env, agent
        self.run_dir = Path(run_dir)
        self.config = config
        self.max_epochs = max_epochs
        self.save_every = save_every
        self.checkpoint_every = max(1, checkpoint_every)
        self._latest_epoch = -1
        self.update_threads = update_threads
        self.thread_chooser = (UpdateThreadChooser(update_threads)
                               if adapt_update_threads and update_threads is not None else None)
        self.last_update_threads = update_threads  # what the last update used (logged)
        self.is_main = is_main
        self.epoch = 0
        self.global_step = 0
        self.obs: torch.Tensor | None = None
        self.episodes = EpisodeTracker()
        self.quality_every = quality_every
        self.quality = (MotionQualityProbe(env, quality_envs)
                        if quality_every > 0 and MotionQualityProbe.available(env) else None)
        if is_main and getattr(agent.config, "amp_replay_journal", False) and hasattr(agent, "replay_journal"):
            agent.replay_journal = BufferJournal(self.run_dir / REPLAY_FOLDER)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self, include_buffers: bool | None = None) -> dict[str, Any]:
        return {
            "format": "ase_humanoid/1",
            "epoch": self.epoch,
            "global_step": self.global_step,
            "config": self.config,
            "agent": self.agent.state_dict(include_buffers),
            "env": env_state_dict(self.env),
            "obs": self.obs,
            "rng": rng_state(),
        }

    def load_state_dict(self, state: dict[str, Any], checkpoint_path: str | Path | None = None) -> None:
        """Restore a run checkpoint read from `checkpoint_path` (default run_dir/latest.pt): its
        replay journal lies in that file's folder."""
        agent_state, journal_ref = split_journal_ref(state["agent"])
        self.agent.load_state_dict(agent_state)
        if journal_ref is not None:
            self._restore_replay(journal_ref, Path(checkpoint_path or self.run_dir / "latest.pt"))
        load_env_state_dict(self.env, state["env"])
        self.obs = state["obs"].to(self.env.device) if state.get("obs") is not None else None
        self.epoch, self.global_step = state["epoch"], state["global_step"]
        set_rng_state(state["rng"])

    def _restore_replay(self, journal_ref: dict, checkpoint_path: Path) -> None:
        """Fill the replay buffer from the journal beside `checkpoint_path`; with
        checkpoint_amp_buffers=false a missing journal leaves it empty (inexact, as asked)."""
        folder = checkpoint_path.parent / REPLAY_FOLDER
        if not self.agent.config.checkpoint_amp_buffers and not (folder / str(journal_ref.get("file"))).is_file():
            print(f"note: no replay journal in {folder}; the AMP replay buffer starts empty "
                  "(checkpoint_amp_buffers=false)", flush=True)
            return
        restore_buffer(self.agent.replay_buffer, folder, journal_ref, checkpoint=checkpoint_path)
        journal = getattr(self.agent, "replay_journal", None)
        if journal is not None and journal.folder.resolve() == folder.resolve():
            journal.adopt(journal_ref)

    def save(self, force: bool = False) -> None:
        """`latest.pt` (everything for exact resume; the replay journal synced first) every
        `checkpoint_every` epochs; a numbered snapshot without the large AMP sample buffers
        every `save_every` epochs."""
        if not self.is_main:
            return
        try:
            self._save(force)
        except CheckpointError as exc:  # a full disk: one line saying what is intact and what to do
            if self._latest_epoch >= 0 or (self.run_dir / "latest.pt").is_file():
                then = "continue with resume=true once there is room"
                kept = f"the last checkpoint ({self.run_dir / 'latest.pt'}) is intact; "
            else:
                then = "the folder holds no checkpoint yet: free room and run the same command again"
                kept = ""
            raise CheckpointError(f"{exc}; {kept}{then}") from exc

    def _save(self, force: bool) -> None:
        with interrupts_held():  # Ctrl-C waits for the checkpoint and its journal commit
            if force or self.epoch % self.checkpoint_every == 0:
                save_checkpoint(self.state_dict(), self.run_dir / "latest.pt")
                self._latest_epoch = self.epoch
                if getattr(self.agent, "replay_journal", None) is not None:
                    self.agent.replay_journal.commit()  # latest.pt now refers to the current journal file
            if self.save_every > 0 and self.epoch % self.save_every == 0:
                save_checkpoint(self.state_dict(include_buffers=False),
                                self.run_dir / f"epoch_{self.epoch:06d}.pt")

    def resume(self, path: str | Path) -> None:
        path = Path(path) / "latest.pt" if Path(path).is_dir() else Path(path)
        state = load_checkpoint(path, map_location=self.env.device)
        require_entries(state, path, RESUME_ENTRIES, "to resume")
        self.load_state_dict(state, checkpoint_path=path)

    # ------------------------------------------------------------------ training
    def collect_rollout(self) -> dict[str, float]:
        """Step every env `horizon_length` times, recording transitions; returns timings."""
        timings = {"time/sim_and_obs": 0.0, "time/inference": 0.0, "time/record": 0.0}
        horizon = self.agent.config.horizon_length
        probe = self.quality if self.quality is not None and self.epoch % self.quality_every == 0 else None
        for _ in range(horizon):
            t0 = time.perf_counter()
            act_out = self.agent.act(self.obs)
            t1 = time.perf_counter()
            next_obs, reward, terminated, truncated, info = self.env.step(act_out["actions"])
            t2 = time.perf_counter()
            self.agent.record_transition(self.obs, act_out["actions"], reward, terminated, truncated,
                                         next_obs, info)
            self.episodes.add(info, terminated, truncated)
            if probe is not None:
                probe.observe(terminated | truncated, enc_z=encoder_agreement(self.agent, act_out, info, probe.env_ids))
            self.obs = next_obs
            t3 = time.perf_counter()
            timings["time/inference"] += t1 - t0
            timings["time/sim_and_obs"] += t2 - t1
            timings["time/record"] += t3 - t2
        self.global_step += horizon * self.env.num_envs
        return timings

    def update_agent(self) -> dict[str, float]:
        """agent.update() with `update_threads` torch threads: the physics threads are idle
        during the update, so it may use every core (rollouts keep fewer, see torch_threads).
        With adapt_update_threads the count is chosen per update between 1 and update_threads
        by measured time (utils/cpu_threads.py: beside other busy processes 1 thread is faster)."""
        if self.update_threads is None:
            return self.agent.update()
        threads = self.thread_chooser.next_threads() if self.thread_chooser else self.update_threads
        rollout_threads = torch.get_num_threads()
        torch.set_num_threads(threads)
        start = time.perf_counter()
        try:
            stats = self.agent.update()
        finally:
            torch.set_num_threads(rollout_threads)
        if self.thread_chooser is not None:
            self.thread_chooser.record(threads, time.perf_counter() - start)
        self.last_update_threads = threads
        return stats

    def _tell_env_the_epoch(self) -> None:
        """Envs that change with training progress (HumanoidASE's getup phase) learn how many
        epochs are done; what they say about a change is printed."""
        set_epoch = getattr(self.env, "set_training_epoch", None)
        message = set_epoch(self.epoch) if set_epoch is not None else None
        if message and self.is_main:
            print(message, flush=True)

    def learn(self, logger: TrainingLogger | None = None, time_budget_s: float | None = None) -> dict[str, float]:
        """Train until `max_epochs` (or until `time_budget_s` of wall clock has passed);
        returns the last epoch's statistics."""
        if self.obs is None:
            self.obs = self.env.reset()
        stats: dict[str, float] = {}
        deadline = None if time_budget_s is None else time.perf_counter() + time_budget_s
        while self.epoch < self.max_epochs and (deadline is None or time.perf_counter() < deadline):
            self._tell_env_the_epoch()
            t_start = time.perf_counter()
            timings = self.collect_rollout()
            t_update = time.perf_counter()
            stats = self.update_agent()
            t_end = time.perf_counter()
            self.epoch += 1
            update_stats = stats
            stats = {f"train/{k}": float(v) for k, v in stats.items()}
            stats.update(timings)
            episodes = self.episodes.pop_means()
            stats.update(episodes)
            if self.quality is not None:
                quality = self.quality.pop_means()
                if quality and "episode/fall_rate" in episodes:
                    quality["quality/fall_rate"] = episodes["episode/fall_rate"]
                stats.update(quality)
                stats.update(self.quality.pop_skill_stats())
            stats["time/update"] = t_end - t_update
            stats["perf/samples_per_s"] = self.agent.config.horizon_length * self.env.num_envs / (t_end - t_start)
            if self.update_threads is not None:
                stats["perf/update_threads"] = float(self.last_update_threads)
            stats.update(fault_counters(self.env))
            if hasattr(self.env, "terrain_metrics"):  # curriculum level, falls per tile kind
                stats.update(self.env.terrain_metrics())
            # Log before saving: a kill in between repeats this epoch after resume (its logs are
            # truncated to the checkpoint) instead of leaving it out of the logs for good.
            if logger is not None:
                logger.log(self.epoch, self.global_step, stats)
            # The diverged epoch is logged (its fault counters explain it) but never saved.
            check_update_finite(update_stats, self.epoch)
            self.save()
        if self._latest_epoch != self.epoch:
            self.save(force=True)  # the last epoch always lands in latest.pt
        return stats
