#!/usr/bin/env bash
# The shipped getup controller (pretrained/ase_llc_amp_humanoid_getup.pt): the six-clip
# controller of the default command (pretrained/ase_llc_amp_humanoid.pt) fine-tuned with the
# getup reward (task.env.getup_reward, not in the ASE release) in two stages, about 2.3 hours
# and 22.7 M samples on 2 CPU cores. docs/research-notes.md ("Getup without getup clips", "Squared getup
# reward") says why each setting is there and what each stage measured.
#
#   bash examples/ase_getup_controller.sh [RUNS_FOLDER] [START_CHECKPOINT]
#   # default runs/ase_getup pretrained/ase_llc_amp_humanoid.pt
#
# Run it again after an interruption: a finished stage is skipped, an unfinished one resumed.
# A rerun is not the shipped run step for step (that one was resumed across sittings), and the
# getup share moves by up to 0.2 from one checkpoint to the next: measure stage 2's checkpoints
# (the commands printed at the end) and keep the best, as docs/research-notes.md did (epoch 1500).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-runs/ase_getup}"
START="${2:-pretrained/ase_llc_amp_humanoid.pt}"

# More getup episodes (a third of the resets from the fall pool) with a grace period as long as
# the skill report's 3 s, and the getup reward weighed 2 against the style and encoder rewards (at
# 0.5 the head hardly rose). The action std stays the release's 0.055: the shipped run was started
# with train.params.init_log_std=-2.3, which a run from trained weights ignored until 2026-12-06.
GETUP="task=HumanoidASE task.env.getup_reward=true task.env.fall_init_prob=0.3 task.env.recovery_steps=90 train.params.task_reward_w=2.0"

source examples/stages.sh  # stage NAME EPOCHS ARGS...

# 1. The head's height as a share of its standing height: off the floor, to the knees, up.
stage share 4050 $GETUP checkpoint="$START" resume=false seed=42

# 2. The share squared: standing pays more than kneeling, so the last stretch gets quicker.
stage squared 1500 $GETUP task.env.getup_reward_power=2.0 checkpoint="$RUNS/share/epoch_004050.pt" \
  resume=false seed=43

echo "controller: $RUNS/squared/epoch_001500.pt (checkpoints every 50 epochs beside it)"
echo "measure one: python benchmarks/ase_skills.py CHECKPOINT --seed 0"
echo "  and its getup alone: python benchmarks/ase_skills.py CHECKPOINT --latents 64 --seconds 1 --getup-episodes 256 --seed 1"
