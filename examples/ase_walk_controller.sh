#!/usr/bin/env bash
# The shipped walking controller (pretrained/ase_llc_amp_humanoid_walk.pt) in three stages, about
# 45 minutes and 9.2 M samples on 2 CPU cores. docs/TASKS.md ("A walking controller in three
# stages") says why each stage is there and what it measured.
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
# Style reward only: no encoder reward, no diversity loss, no epsilon-greedy exploration.
STYLE_ONLY="train.params.enc_reward_w=0 train.params.disc_reward_w=1.0 train.params.amp_diversity_bonus=0 train.params.enable_eps_greedy=false"
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

# 1. Walk from reference states on walk + run, style reward only, the style network's output
#    layer starting at zero (the latent starts with no effect on the actor).
stage stage1 1150 task=HumanoidASE motion_file=motions/dataset_amp_humanoid_locomotion.yaml seed=42 \
  $NETS $STYLE_ONLY train.params.style_init_scale=0 task.env.state_init=Random $NO_FALL_STARTS

# 2. Learn to set off: half the episodes start standing (Hybrid), and the data gains CMU 131_01,
#    which stands, sets off, walks and stops.
stage stage2 400 task=HumanoidASE checkpoint="$RUNS/stage1/epoch_001150.pt" resume=false seed=42 \
  motion_file=motions/dataset_amp_humanoid_locomotion_starts.yaml $NETS $STYLE_ONLY $NO_FALL_STARTS

# 3. Give the latents their say: a small encoder reward (0.1 against style 1.0), the release's
#    diversity loss and epsilon-greedy back on.
stage stage3 700 task=HumanoidASE checkpoint="$RUNS/stage2/epoch_000400.pt" resume=false seed=42 \
  motion_file=motions/dataset_amp_humanoid_locomotion_starts.yaml $NETS $NO_FALL_STARTS \
  train.params.enc_reward_w=0.1 train.params.disc_reward_w=1.0

echo "controller: $RUNS/stage3/epoch_000700.pt"
echo "measure it: python benchmarks/ase_skills.py $RUNS/stage3/epoch_000700.pt"
