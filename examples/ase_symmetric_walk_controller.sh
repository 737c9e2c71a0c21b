#!/usr/bin/env bash
# The symmetric walking controller of docs/research-notes.md ("Mirror symmetry"; not shipped): from
# standing its latents walk at 1.2-1.7 m/s and turn both ways in mirrored pairs, about 1.5 hours
# and 9.6 M samples on 2 CPU cores. docs/research-notes.md says why each step is there and what each
# measured, and what Heading made of it.
#
#   bash examples/ase_symmetric_walk_controller.sh [RUNS_FOLDER]   # default runs/ase_walk_symmetric
#
# 1-2. The walking controller's two stages (examples/ase_walk_controller.sh) under the release's
#      PD clamp (robot.pd_damping=drive_implicit), with stage 1's style output layer drawn afresh
#      before stage 2 and stage 2 run 1000 epochs: its latents walk at 1.4-1.75 m/s and set off
#      in different directions, but hardly turn once under way.
# 3.   The actor made mirror-symmetric (train.params.symmetric_actor=true: mu(s, z) averaged with
#      the mirror image of mu(M s, P z)) on a dataset with every clip beside its mirror image
#      (motions/dataset_amp_humanoid_locomotion_symmetric.yaml), 200 epochs: for every latent
#      that turns one way there is one turning the other.
#
# Run it again after an interruption: a finished stage is skipped, an unfinished one resumed.
set -euo pipefail
set -f  # the overrides hold [..]: no globbing
cd "$(dirname "$0")/.."
RUNS="${1:-runs/ase_walk_symmetric}"
LAW="robot.pd_damping=drive_implicit"

REDRAW_STYLE=1 bash examples/ase_walk_controller.sh "$RUNS" amp_humanoid "$LAW"

NETS="train.params.actor_units=[256,256] train.params.critic_units=[256,256] train.params.disc_units=[256,128] train.params.learning_rate=2e-4"
source examples/stages.sh  # stage NAME EPOCHS ARGS...
stage stage3_symmetric 200 task=HumanoidASE robot=amp_humanoid checkpoint="$RUNS/stage2/epoch_001000.pt" \
  resume=false seed=42 motion_file=motions/dataset_amp_humanoid_locomotion_symmetric.yaml $NETS \
  task.env.fall_init_prob=0 task.env.recovery_episode_prob=0 "$LAW" train.params.symmetric_actor=true

CONTROLLER="$RUNS/stage3_symmetric/epoch_000200.pt"
echo "controller: $CONTROLLER"
echo "measure it: python benchmarks/ase_skills.py $CONTROLLER --mirror-pairs"
echo "train Heading on it: python train.py task=HumanoidHeading llc_checkpoint=$CONTROLLER"
