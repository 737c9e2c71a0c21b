"""Learning algorithms: PPO, AMP and ASE agents, their networks, buffers and configs."""

from ase_humanoid.agents.amp import AMPAgent
from ase_humanoid.agents.ase import ASEAgent
from ase_humanoid.agents.config import AMPConfig, ASEConfig, PPOConfig, from_dict
from ase_humanoid.agents.ppo import PPOAgent

__all__ = ["PPOAgent", "AMPAgent", "ASEAgent", "PPOConfig", "AMPConfig", "ASEConfig", "from_dict"]
