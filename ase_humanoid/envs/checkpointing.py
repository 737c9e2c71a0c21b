"""Save and restore an env's full state for exact resume, without each env listing its buffers.

Every tensor, torch.Generator and plain scalar attribute of the env (episode counters, AMP
history, task goals, fall pools, ...) plus the simulator backend's own state goes into the
checkpoint; restoring puts them back in place, so a task env added later is covered too.
"""

from __future__ import annotations

from typing import Any

import torch

from ase_humanoid.errors import CheckpointError

_SCALARS = (bool, int, float)


def env_state_dict(env) -> dict[str, Any]:
    tensors, generators, scalars = {}, {}, {}
    for name, value in vars(env).items():
        if isinstance(value, torch.Tensor):
            tensors[name] = value.detach().clone()
        elif isinstance(value, torch.Generator):
            generators[name] = value.get_state()
        elif isinstance(value, _SCALARS):
            scalars[name] = value
    return {"env_class": type(env).__name__, "tensors": tensors, "generators": generators,
            "scalars": scalars, "sim": env.sim.state_dict()}


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
    env.sim.load_state_dict(state["sim"])
