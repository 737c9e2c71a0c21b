#!/usr/bin/env bash
# The shipped walking controller (pretrained/ase_llc_amp_humanoid_walk.pt) in two stages, about
# 35 minutes and 7.6 M samples on 2 CPU cores. docs/TASKS.md ("A walking controller in stages")
# says why each stage is there, what it measured, and the faster variants that a high-level
# policy could not steer.
#
#   bash examples/ase_walk_controller.sh [RUNS_FOLDER]      # default runs/ase_walk
#
# Run it again after an interruption: a finished stage is skipped, an unfinished one resumed.
# The result depends on the seed: stage 1 with seed 7 walked at 0.67 m/s where seed 42 walked
# at 1.06 (docs/TASKS.md); check each stage with benchmarks/ase_skills.py.
set -euo pipefail
set -f  # the overrides hold [..]: no globbing
cd "$(dirname "$0")/.."
RUNS="${1:-runs/ase_walk}"

# AMP's networks and learning rate inside ASE (the CPU profile's ASE sizes are 512-256, 1e-4).
NETS="train.params.actor_units=[256,256] train.params.critic_units=[256,256] train.params.disc_units=[256,128] train.params.learning_rate=2e-4"
NO_FALL_STARTS="task.env.fall_init_prob=0 task.env.recovery_episode_prob=0"

# stage NAME EPOCHS ARGS...: train RUNS/NAME to EPOCHS epochs (skip if done, resume if begun).
stage() {
  local name="$1" epochs="$2"; shift 2
  local dir="$RUNS/$name" last
  last="$(printf 'epoch_%06d.pt' "$epochs")"
  if [[ -f "$dir/$last" ]]; then
    echo "stage $name: done ($dir/$last)"
  elif [[ -f "$dir/latest.pt" ]]; then  # the run folder holds its start: drop checkpoint= and resume=
    local kept=() arg
    for arg in "$@"; do [[ "$arg" == checkpoint=* || "$arg" == resume=* ]] || kept+=("$arg"); done
    ./run python train.py resume=true run_dir="$dir" max_epochs="$epochs" "${kept[@]}"
  else
    ./run python train.py run_dir="$dir" max_epochs="$epochs" "$@"
  fi
}

# 1. Walk first: walk + run from reference states only, the style reward only (no encoder reward,
#    no diversity loss, no epsilon-greedy), the style network's output layer starting at zero so
#    the latent starts with no effect on the actor.
stage stage1 1150 task=HumanoidASE motion_file=motions/dataset_amp_humanoid_locomotion.yaml seed=42 \
  $NETS train.params.enc_reward_w=0 train.params.disc_reward_w=1.0 train.params.amp_diversity_bonus=0 \
  train.params.enable_eps_greedy=false train.params.style_init_scale=0 task.env.state_init=Random $NO_FALL_STARTS

# 2. Then ASE: the release's rewards (encoder 0.5, style 0.5, diversity loss, epsilon-greedy),
#    half the episodes starting standing (the task's Hybrid default), and CMU 131_01 added, which
#    stands, sets off, walks and stops. The latents learn to turn different ways.
stage stage2 700 task=HumanoidASE checkpoint="$RUNS/stage1/epoch_001150.pt" resume=false seed=42 \
  motion_file=motions/dataset_amp_humanoid_locomotion_starts.yaml $NETS $NO_FALL_STARTS

echo "controller: $RUNS/stage2/epoch_000700.pt"
echo "measure it: python benchmarks/ase_skills.py $RUNS/stage2/epoch_000700.pt"
echo "train Heading on it: python train.py task=HumanoidHeading llc_checkpoint=$RUNS/stage2/epoch_000700.pt"
