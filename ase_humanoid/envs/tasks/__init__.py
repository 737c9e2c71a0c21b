"""Goal-directed tasks on the humanoid (registered in `ase_humanoid.envs.TASKS`):

  heading.py   HumanoidHeading   travel direction, speed and facing
  location.py  HumanoidLocation  walk to a ground position
  reach.py     HumanoidReach     hand (sword tip) to a 3-D target
  strike.py    HumanoidStrike    knock over a standing box (a real rigid body)

`common.py` holds their shared base (goal timers, metrics, markers); `rewards.py` the reward and
observation formulas as pure functions. Trained flat (`train=amp_task`) or hierarchically on a
frozen ASE controller (`train=hrl`, `ase_humanoid/agents/hrl.py`); see docs/research-notes.md.
"""
