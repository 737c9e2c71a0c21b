"""Save and restore an env's full state for exact resume, without each env listing its buffers.

Every tensor, torch.Generator and plain scalar attribute of the env (episode counters, AMP
history, task goals, fall pools, ...), every dataclass of tensors (precomputed kinematics), every
other attribute with `state_dict` / `load_state_dict` methods (draws made ahead) and the simulator
backend's own state go into the checkpoint; restoring puts them back in place, so a task env
added later is covered too.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ase_humanoid.errors import CheckpointError

_SCALARS = (bool, int, float)


def env_state_dict(env) -> dict[str, Any]:
    tensors, generators, scalars, components, records = {}, {}, {}, {}, {}
    for name, value in vars(env).items():
        if name == "sim":
            continue
        if _is_component(value):
            components[name] = value.state_dict()
        elif isinstance(value, torch.Tensor):
            tensors[name] = value.detach().clone()
        elif _is_tensor_record(value):
            records[name] = {f.name: getattr(value, f.name).detach().clone() for f in dataclasses.fields(value)}
        elif isinstance(value, torch.Generator):
            generators[name] = value.get_state()
        elif isinstance(value, _SCALARS):
            scalars[name] = value
    return {"env_class": type(env).__name__, "tensors": tensors, "generators": generators,
            "scalars": scalars, "components": components,
            "records": records, "sim": env.sim.state_dict()}


def load_env_state_dict(env, state: dict[str, Any]) -> None:
    if state.get("env_class") != type(env).__name__:
        raise CheckpointError(f"checkpoint holds the state of a {state.get('env_class')} env, not {type(env).__name__}")
    current = vars(env)
    for name, value in state["tensors"].items():
        old = current.get(name)
        if not isinstance(old, torch.Tensor):
            raise CheckpointError(f"checkpoint env buffer '{name}' does not exist in {type(env).__name__}")
        if old.shape != value.shape:
            raise CheckpointError(f"checkpoint env buffer '{name}' has shape {list(value.shape)}, "
                                  f"this env {list(old.shape)} (different num_envs or robot?)")
        setattr(env, name, value.to(device=old.device, dtype=old.dtype))
    for name, gen_state in state["generators"].items():
        current[name].set_state(gen_state)
    for name, value in state["scalars"].items():
        setattr(env, name, value)
    for name, fields in state.get("records", {}).items():
        old = current.get(name)
        if not _is_tensor_record(old):
            raise CheckpointError(f"checkpoint env record '{name}' does not exist in {type(env).__name__}")
        setattr(env, name, dataclasses.replace(old, **{
            key: value.to(device=getattr(old, key).device, dtype=getattr(old, key).dtype)
            for key, value in fields.items()}))
    for name, component_state in state.get("components", {}).items():
        component = current.get(name)
        if not _is_component(component):
            raise CheckpointError(f"checkpoint env component '{name}' does not exist in {type(env).__name__}")
        component.load_state_dict(component_state)
    env.sim.load_state_dict(state["sim"])


def _is_component(value) -> bool:
    """An attribute holding state of its own (not a tensor, not the simulator)."""
    return (not isinstance(value, (torch.Tensor, torch.nn.Module)) and callable(getattr(value, "state_dict", None))
            and callable(getattr(value, "load_state_dict", None)))


def _is_tensor_record(value) -> bool:
    """A dataclass instance whose fields are all tensors (e.g. an ArticulationState)."""
    return (dataclasses.is_dataclass(value) and not isinstance(value, type)
            and all(isinstance(getattr(value, f.name), torch.Tensor) for f in dataclasses.fields(value)))
