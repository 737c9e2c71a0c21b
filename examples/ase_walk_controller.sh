#!/usr/bin/env bash
# The shipped walking controller (pretrained/ase_llc_amp_humanoid_walk.pt) in two stages, about
# 35 minutes and 7.6 M samples on 2 CPU cores. docs/research-notes.md ("A walking controller in stages")
# says why each stage is there, what it measured, and the faster variants that a high-level
# policy could not steer.
#
#   bash examples/ase_walk_controller.sh [RUNS_FOLDER] [ROBOT]   # default runs/ase_walk amp_humanoid
#   bash examples/ase_walk_controller.sh runs/ase_walk_ss sword_shield
#   bash examples/ase_walk_controller.sh runs/ase_walk_di amp_humanoid robot.pd_damping=drive_implicit
#
# Overrides after ROBOT go to both stages' train.py commands.
#
# ROBOT amp_humanoid made pretrained/ase_llc_amp_humanoid_walk.pt, sword_shield made
# pretrained/ase_llc_sword_shield_walk.pt (the same stages on the sword-and-shield humanoid's
# retargeted CMU walks and run, motions/dataset_sword_shield_locomotion*.yaml, with its style
# layer drawn afresh between them: stage 2 below).
#
# Run it again after an interruption: a finished stage is skipped, an unfinished one resumed.
# The result depends on the seed: stage 1 with seed 7 walked at 0.67 m/s where seed 42 walked
# at 1.06 (docs/research-notes.md); check each stage with benchmarks/ase_skills.py.
set -euo pipefail
set -f  # the overrides hold [..]: no globbing
cd "$(dirname "$0")/.."
RUNS="${1:-runs/ase_walk}"
ROBOT="${2:-amp_humanoid}"
shift $(( $# < 2 ? $# : 2 ))
EXTRA=("$@")

# AMP's networks and learning rate inside ASE (the CPU profile's ASE sizes are 512-256, 1e-4).
NETS="train.params.actor_units=[256,256] train.params.critic_units=[256,256] train.params.disc_units=[256,128] train.params.learning_rate=2e-4"
NO_FALL_STARTS="task.env.fall_init_prob=0 task.env.recovery_episode_prob=0"

source examples/stages.sh  # stage NAME EPOCHS ARGS...

# 1. Walk first: walk + run from reference states only, the style reward only (no encoder reward,
#    no diversity loss, no epsilon-greedy), the style network's output layer starting at zero so
#    the latent starts with no effect on the actor.
stage stage1 1150 task=HumanoidASE robot="$ROBOT" motion_file="motions/dataset_${ROBOT}_locomotion.yaml" seed=42 \
  $NETS train.params.enc_reward_w=0 train.params.disc_reward_w=1.0 train.params.amp_diversity_bonus=0 \
  train.params.enable_eps_greedy=false train.params.style_init_scale=0 task.env.state_init=Random $NO_FALL_STARTS "${EXTRA[@]}"

# 2. Then ASE: the release's rewards (encoder 0.5, style 0.5, diversity loss, epsilon-greedy),
#    half the episodes starting standing (the task's Hybrid default), and CMU 131_01 added, which
#    stands, sets off, walks and stops. The latents learn to turn different ways.
#    sword_shield: from stage 1 as it is, every latent of this stage turned left alike (0.24-0.36
#    rad/s, directions of travel spanning 32 degrees), so its style output layer, which stage 1
#    leaves near zero, is drawn afresh first (tools/redraw_style_layer.py) and the stage runs
#    1000 epochs: directions spanning 156 degrees at 1.40 m/s (docs/research-notes.md).
#    REDRAW_STYLE=1 does the same on the AMP humanoid (examples/ase_symmetric_walk_controller.sh).
if [[ "$ROBOT" == sword_shield || "${REDRAW_STYLE:-0}" == 1 ]]; then
  [[ -f "$RUNS/stage1_redrawn.pt" ]] || \
    ./run python tools/redraw_style_layer.py "$RUNS/stage1/epoch_001150.pt" "$RUNS/stage1_redrawn.pt"
  STAGE2_FROM="$RUNS/stage1_redrawn.pt" STAGE2_EPOCHS=1000
else
  STAGE2_FROM="$RUNS/stage1/epoch_001150.pt" STAGE2_EPOCHS=700
fi
stage stage2 "$STAGE2_EPOCHS" task=HumanoidASE robot="$ROBOT" checkpoint="$STAGE2_FROM" resume=false seed=42 \
  motion_file="motions/dataset_${ROBOT}_locomotion_starts.yaml" $NETS $NO_FALL_STARTS "${EXTRA[@]}"

CONTROLLER="$RUNS/stage2/$(printf 'epoch_%06d.pt' "$STAGE2_EPOCHS")"
echo "controller: $CONTROLLER"
echo "measure it: python benchmarks/ase_skills.py $CONTROLLER"
echo "train Heading on it: python train.py task=HumanoidHeading robot=$ROBOT llc_checkpoint=$CONTROLLER"
