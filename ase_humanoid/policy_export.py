"""Trained policies as self-contained inference models (ONNX, torch.export, TorchScript) for deployment.

A run checkpoint (or an agent checkpoint) becomes one module per policy, with the observation
normaliser folded in, so a game engine or robot feeds it the env's raw observation:

  AMP / PPO   obs [n, obs_dim]                     -> actions [n, A], pd_targets [n, A]
  ASE         obs [n, obs_dim], latent [n, 64]     -> actions [n, A], pd_targets [n, A]
              (the latent is normalised to unit length inside: skills live on the sphere)
  HRL         high level: obs [n, obs_dim]         -> latent [n, 64] (unit, as the LLC gets it)
              low level:  obs [n, llc_obs_dim], latent [n, 64] -> actions, pd_targets
              the low level runs every control step on the humanoid part of the observation
              (its first llc_obs_dim numbers), the high level every llc_steps steps.

`actions` is the deterministic action (the policy mean) as the env takes it; `pd_targets` the
PD position targets (radians, clipped actions through the robot's ASE mapping), present when
the robot is known (the run config's robot, or `robot=`). `export_checkpoint` writes the
files and a `.json` next to them naming inputs, outputs, sizes and rates.
"""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from ase_humanoid.agents.normalizer import RunningMeanStd
from ase_humanoid.errors import CheckpointError, ConfigError
from ase_humanoid.utils.checkpoint import load_checkpoint

FORMATS = {".onnx": "onnx", ".pt2": "exported_program", ".pt": "torchscript"}
POLICY_ALGOS = ("PPOAgent", "AMPAgent", "ASEAgent", "HRLAgent")


# ---------------------------------------------------------------------------- inference modules

class FoldedNormalizer(nn.Module):
    """`RunningMeanStd.normalize` with its statistics frozen as float32 constants.

    `forward(x [n, d]) -> (x - mean) / std`, clamped to +-clip; identity when `enabled` is False.
    """

    def __init__(self, norm: RunningMeanStd, enabled: bool = True):
        super().__init__()
        self.enabled = enabled
        self.clip = norm.clip
        # std in float64 first, then float32: the same rounding as the training code
        self.register_buffer("mean", norm.mean.detach().to(torch.float32).clone())
        self.register_buffer("std", torch.sqrt(norm.var.detach() + norm.eps).to(torch.float32))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.enabled:
            return x
        y = (x - self.mean) / self.std
        return y.clamp(-self.clip, self.clip) if self.clip is not None else y


class PDTargets(nn.Module):
    """Actions `[n, A]` -> PD position targets `[n, A]` (the robot's `action_to_pd_target`)."""

    def __init__(self, offset: torch.Tensor, scale: torch.Tensor):
        super().__init__()
        self.register_buffer("offset", offset.detach().to(torch.float32).clone())
        self.register_buffer("scale", scale.detach().to(torch.float32).clone())

    def forward(self, actions: torch.Tensor) -> torch.Tensor:
        return self.offset + self.scale * actions.clamp(-1.0, 1.0)


class FlatPolicy(nn.Module):
    """`forward(obs) -> actions` or `(actions, pd_targets)` (AMP / PPO actor)."""

    def __init__(self, normalizer: FoldedNormalizer, actor: nn.Module, pd: PDTargets | None):
        super().__init__()
        self.normalizer, self.actor, self.pd = normalizer, actor, pd

    def forward(self, obs: torch.Tensor):
        actions = self.actor(self.normalizer(obs))
        return actions if self.pd is None else (actions, self.pd(actions))


class LatentPolicy(nn.Module):
    """`forward(obs, latent) -> actions` or `(actions, pd_targets)` (ASE actor; unit latent)."""

    def __init__(self, normalizer: FoldedNormalizer, actor: nn.Module, pd: PDTargets | None):
        super().__init__()
        self.normalizer, self.actor, self.pd = normalizer, actor, pd

    def forward(self, obs: torch.Tensor, latent: torch.Tensor):
        actions = self.actor(self.normalizer(obs), F.normalize(latent, dim=-1))
        return actions if self.pd is None else (actions, self.pd(actions))


class HighLevelPolicy(nn.Module):
    """`forward(obs) -> latent [n, D]`: the HRL policy's tanh mean, normalised as the
    hierarchical env normalises it before the low-level controller sees it."""

    def __init__(self, normalizer: FoldedNormalizer, actor: nn.Module):
        super().__init__()
        self.normalizer, self.actor = normalizer, actor

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.actor(self.normalizer(obs)), dim=-1)


@dataclass
class ExportedModel:
    """One module to write, with the names and sizes of its inputs and outputs."""

    name: str  # "policy", or "high_level" / "low_level" for HRL
    module: nn.Module
    inputs: dict[str, int]  # input name -> feature size (batch dim is free)
    outputs: dict[str, int]
    notes: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------------------- from checkpoints

def read_policy_state(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(agent state, run config or {}) of a run checkpoint, an agent checkpoint or a run folder."""
    state = load_checkpoint(path)
    agent_state = state["agent"] if isinstance(state.get("agent"), dict) else state
    if "model" not in agent_state or agent_state.get("algo") not in POLICY_ALGOS:
        raise CheckpointError(f"checkpoint '{path}' holds no policy (algo {agent_state.get('algo')!r}); "
                              f"exportable agents: {', '.join(POLICY_ALGOS)}")
    return agent_state, state.get("config") or {}


def robot_name_of(run_config: dict[str, Any]) -> str | None:
    robot = run_config.get("robot")
    return robot.get("name") if isinstance(robot, dict) else robot


def pd_targets_for(robot_name: str | None) -> PDTargets | None:
    if robot_name is None:
        return None
    from ase_humanoid.robots.description import load_robot

    robot = load_robot(robot_name)
    return PDTargets(robot.pd_action_offset, robot.pd_action_scale)


def check_robot_fits(pd: PDTargets | None, robot_name: str | None, action_dim: int, source: str) -> None:
    """CheckpointError unless `robot_name`'s actuators match the policy's actions (an AMP run of
    amp_humanoid exported with robot=sword_shield: 28 actions, 31 actuators)."""
    if pd is not None and pd.offset.numel() != action_dim:
        raise CheckpointError(f"{source}: the policy has {action_dim} actions but robot '{robot_name}' has "
                              f"{pd.offset.numel()} actuators; give the robot the policy was trained on (omit "
                              "--robot to use the run config's)")


def _submodule_state(model_state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    return {k[len(prefix):]: v for k, v in model_state.items() if k.startswith(prefix)}


def _gaussian_actor(agent_state: dict[str, Any], actor_class, config_class) -> tuple[nn.Module, Any]:
    from ase_humanoid.agents.config import from_dict

    cfg = from_dict(config_class, agent_state["config"])
    dims = agent_state["dims"]
    actor = actor_class(dims["obs_dim"], dims["action_dim"], cfg.actor_units, cfg.activation,
                        cfg.init_log_std, cfg.learn_log_std)
    try:
        actor.load_state_dict(_submodule_state(agent_state["model"], "actor."))
    except RuntimeError as err:
        raise CheckpointError(f"actor weights do not fit the checkpoint's own config: {err}") from err
    return actor, cfg


def _normalizer(norm_state: dict[str, torch.Tensor], size: int, clip: float, enabled: bool) -> FoldedNormalizer:
    norm = RunningMeanStd(size, clip=clip)
    norm.load_state_dict(norm_state)
    return FoldedNormalizer(norm, enabled)


def _low_level_model(llc, pd: PDTargets | None, name: str) -> ExportedModel:
    """ExportedModel of a `LowLevelController` (an ASE actor with its normaliser)."""
    module = LatentPolicy(FoldedNormalizer(llc.obs_norm, llc.ase_config.normalize_input), llc.actor, pd)
    outputs = {"actions": llc.action_dim, **({"pd_targets": llc.action_dim} if pd is not None else {})}
    return ExportedModel(name, module, {"obs": llc.obs_dim, "latent": llc.latent_dim}, outputs)


def policy_models(agent_state: dict[str, Any], robot_name: str | None = None,
                  source: str = "<memory>") -> list[ExportedModel]:
    """The inference modules of an agent state (`PPOAgent.state_dict()` and subclasses)."""
    from ase_humanoid.agents.config import AMPConfig, PPOConfig
    from ase_humanoid.agents.hrl import HRLConfig, LowLevelController, TanhGaussianActor
    from ase_humanoid.agents.networks import GaussianActor

    algo, dims = agent_state.get("algo"), agent_state.get("dims", {})
    pd = pd_targets_for(robot_name)
    if isinstance(dims.get("action_dim"), int) and algo != "HRLAgent":  # HRL: latent actions, checked below
        check_robot_fits(pd, robot_name, dims["action_dim"], source)
    if algo in ("PPOAgent", "AMPAgent"):
        actor, cfg = _gaussian_actor(agent_state, GaussianActor, AMPConfig if algo == "AMPAgent" else PPOConfig)
        norm = _normalizer(agent_state["obs_norm"], dims["obs_dim"], cfg.obs_clip, cfg.normalize_input)
        outputs = {"actions": dims["action_dim"], **({"pd_targets": dims["action_dim"]} if pd is not None else {})}
        return [ExportedModel("policy", FlatPolicy(norm, actor, pd), {"obs": dims["obs_dim"]}, outputs)]
    if algo == "ASEAgent":
        llc = LowLevelController.from_ase_state(agent_state, robot_name, source)
        return [_low_level_model(llc, pd, "policy")]
    if algo == "HRLAgent":
        actor, cfg = _gaussian_actor(agent_state, TanhGaussianActor, HRLConfig)
        norm = _normalizer(agent_state["obs_norm"], dims["obs_dim"], cfg.obs_clip, cfg.normalize_input)
        llc = LowLevelController.from_export(agent_state["llc"], source=source)
        high = ExportedModel("high_level", HighLevelPolicy(norm, actor), {"obs": dims["obs_dim"]},
                             {"latent": dims["action_dim"]}, {"llc_steps": cfg.llc_steps})
        low_pd = pd_targets_for(robot_name or llc.robot_name)
        check_robot_fits(low_pd, robot_name or llc.robot_name, llc.action_dim, source)
        low = _low_level_model(llc, low_pd, "low_level")
        low.notes["obs"] = f"the first {llc.obs_dim} numbers of the task observation (the humanoid's)"
        return [high, low]
    raise CheckpointError(f"{source}: cannot export a {algo!r} agent; exportable: {', '.join(POLICY_ALGOS)}")


# ---------------------------------------------------------------------------- writing files

def example_inputs(model: ExportedModel, batch: int = 2) -> tuple[torch.Tensor, ...]:
    return tuple(torch.randn(batch, size) for size in model.inputs.values())


def write_onnx(model: ExportedModel, path: Path) -> None:
    """ONNX through torch's exporter (`torch.onnx.export(dynamo=True)`, needs onnxscript);
    the batch dimension of every input and output is dynamic."""
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) < (2, 5):
        raise ConfigError(f"ONNX export needs torch >= 2.5 (torch.onnx.export(dynamo=True)), found {torch.__version__}; "
                          "TorchScript (--out policy.pt) works with any torch 2")
    try:
        import onnxscript  # noqa: F401
    except ImportError as err:
        raise ConfigError("ONNX export needs the onnx and onnxscript packages: pip install 'ase_humanoid[export]'") from err
    batch = torch.export.Dim("batch")
    onnx_log = logging.getLogger("torch.onnx")
    level = onnx_log.level
    onnx_log.setLevel(logging.ERROR)  # the exporter logs every torchvision op it cannot find
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # exporter chatter (pytree deprecations)
            torch.onnx.export(model.module.eval(), example_inputs(model), str(path), dynamo=True,
                              input_names=list(model.inputs), output_names=list(model.outputs),
                              dynamic_shapes=tuple({0: batch} for _ in model.inputs), external_data=False,
                              verbose=False)
    finally:
        onnx_log.setLevel(level)


def write_exported_program(model: ExportedModel, path: Path) -> None:
    """torch.export's ExportedProgram (`torch.export.save`; the successor of TorchScript, loaded
    with `torch.export.load(path).module()`); the batch dimension of every input is dynamic."""
    batch = torch.export.Dim("batch")
    program = torch.export.export(model.module.eval(), example_inputs(model),
                                  dynamic_shapes=tuple({0: batch} for _ in model.inputs))
    torch.export.save(program, str(path))


def write_torchscript(model: ExportedModel, path: Path) -> None:
    """TorchScript by tracing (loadable from LibTorch C++; torch marks TorchScript deprecated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(model.module.eval(), example_inputs(model))
        traced.save(str(path))


def output_paths(out: Path, models: list[ExportedModel]) -> list[Path]:
    """`out` for a single model; `<stem>_<name><suffix>` for each of several (HRL)."""
    if len(models) == 1:
        return [out]
    return [out.with_name(f"{out.stem}_{m.name}{out.suffix}") for m in models]


def export_checkpoint(checkpoint: str | Path, out: str | Path, robot: str | None = None) -> list[Path]:
    """Write the policy of `checkpoint` to `out` (.onnx, .pt2 or .pt) plus `out` with .json (what each
    file takes and returns); returns the model paths."""
    out = Path(out)
    if out.suffix not in FORMATS:
        raise ConfigError(f"output '{out}': the file name must end in one of {', '.join(FORMATS)} "
                          f"({', '.join(f'{k} = {v}' for k, v in FORMATS.items())})")
    agent_state, run_config = read_policy_state(checkpoint)
    robot_name = robot or robot_name_of(run_config)
    models = policy_models(agent_state, robot_name, str(checkpoint))
    paths = output_paths(out, models)
    out.parent.mkdir(parents=True, exist_ok=True)
    write = {"onnx": write_onnx, "exported_program": write_exported_program,
             "torchscript": write_torchscript}[FORMATS[out.suffix]]
    for model, path in zip(models, paths):
        with torch.no_grad():
            write(model, path)
    out.with_suffix(".json").write_text(json.dumps(describe(agent_state, run_config, robot_name, models, paths),
                                                   indent=2) + "\n")
    return paths


def describe(agent_state: dict[str, Any], run_config: dict[str, Any], robot_name: str | None,
             models: list[ExportedModel], paths: list[Path]) -> dict[str, Any]:
    """The sidecar description: algorithm, robot, control rate, and each file's inputs/outputs."""
    env_cfg = (run_config.get("task") or {}).get("env") or {}
    substeps = env_cfg.get("control_substeps", 4)
    return {
        "algo": agent_state.get("algo"),
        "task": (run_config.get("task") or {}).get("name"),
        "robot": robot_name,
        "control_dt": substeps / 120.0,  # physics at 120 Hz
        "local_root_obs": env_cfg.get("local_root_obs", True),
        "models": [{"file": path.name, "name": m.name, "inputs": m.inputs, "outputs": m.outputs, **m.notes}
                   for m, path in zip(models, paths)],
    }
