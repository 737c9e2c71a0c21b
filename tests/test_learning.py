"""Does training learn? A short, seeded AMP walk run on the real env must learn to stay up longer.

The suite's other tests check the machinery (losses, shapes, resume); this one fails when the
learning itself breaks (a sign error in an advantage, a discriminator that stops rewarding the
demo style, a mask that drops every sample), which the machinery tests cannot see.
"""

from __future__ import annotations

import json
import statistics

import pytest

from ase_humanoid.app import run

# Chosen so that the run is short on 2 cores and the margin is clear for every seed tried
# (seeds 0-4; see the numbers in the assertion message when it fails).
LEARNING_RUN = ["task=HumanoidAMP", "motion_file=motions/amp_humanoid/amp_humanoid_walk.npy",
                "profile=cpu", "num_envs=128", "max_epochs=LEARNING_EPOCHS",
                "train.params.amp_obs_demo_buffer_size=20000", "train.params.amp_replay_buffer_size=20000",
                "checkpoint_every=1000", "save_every=0", "quality_every=0"]
LEARNING_EPOCHS = 120
BASELINE_EPOCHS = slice(5, 15)  # the untrained policy (epochs 1-5 see only the episodes that end early)


def episode_lengths(run_dir) -> list[float]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [row["episode/length"] for row in rows if "episode/length" in row]


@pytest.mark.parametrize("seed", [0])
def test_amp_walk_learns_to_stay_up(tmp_path, seed):
    overrides = [o.replace("LEARNING_EPOCHS", str(LEARNING_EPOCHS)) for o in LEARNING_RUN]
    run([*overrides, f"seed={seed}", f"run_dir={tmp_path / 'walk'}"])
    lengths = episode_lengths(tmp_path / "walk")
    untrained = statistics.mean(lengths[BASELINE_EPOCHS])
    trained = statistics.mean(lengths[-10:])
    assert trained > 1.3 * untrained, (
        f"mean episode length {untrained:.1f} (epochs 6-15) -> {trained:.1f} (last 10 of "
        f"{LEARNING_EPOCHS}): the policy did not learn to stay up")
