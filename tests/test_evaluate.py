"""Evaluation: a checkpoint trained with non-default network sizes evaluates and records video."""

import imageio.v3 as iio

from ase_humanoid.app import run

TINY = ["task=HumanoidAMP", "num_envs=4", "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
        "train.params.disc_units=[32,32]", "train.params.mini_epochs=1",
        "train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024"]


def test_evaluate_uses_checkpoint_network_sizes_and_records_video(tmp_path, capsys):
    run([*TINY, "max_epochs=1", f"run_dir={tmp_path / 'run'}"])
    video = tmp_path / "eval.mp4"
    # No network-size overrides here: evaluation reads them from the checkpoint's config.
    run(["task=HumanoidAMP", "test=true", f"checkpoint={tmp_path / 'run'}", "num_envs=2", "test_episodes=2",
         "task.env.max_episode_length=15", f"video={video}", "video_seconds=0.5",
         "train.params.amp_obs_demo_buffer_size=1024"])
    out = capsys.readouterr().out
    assert "episode/length=" in out and "episode/fall_rate=" in out
    frames = iio.imread(video)
    assert len(frames) == 15 and frames[0].std() > 10


def test_random_latents_follow_the_schedule_in_evaluation():
    """latent=random keeps resampling skills on the training schedule without recording."""
    import torch

    from ase_humanoid.agents.ase import ASEAgent
    from ase_humanoid.agents.config import ASEConfig
    from ase_humanoid.evaluate import _advance_latents

    config = ASEConfig(actor_units=[8], critic_units=[8], disc_units=[8], style_units=[8, 8],
                       amp_obs_demo_buffer_size=16, amp_replay_buffer_size=16, amp_batch_size=16,
                       minibatch_size=32, horizon_length=8, seed=0)
    agent = ASEAgent(5, 3, 4, 4, lambda n: torch.zeros(n, 4), config)
    before = agent.latents.clone()
    no_dones = torch.zeros(4, dtype=torch.bool)
    for _ in range(config.latent_steps_max):
        _advance_latents(agent, no_dones, "random")
    assert not torch.equal(agent.latents, before)  # every env's hold time has run out by now
    held = agent.latents.clone()
    _advance_latents(agent, torch.ones(4, dtype=torch.bool), "fixed")
    assert torch.equal(agent.latents, held)


def test_evaluation_uses_the_dataset_the_checkpoint_trained_on(tmp_path, capsys):
    """With no motion_file given, test=true measures quality/* against the checkpoint's own
    dataset (walk + run here), not the task's default (the walk clip); a given one is kept."""
    run([*TINY, "max_epochs=1", "motion_file=motions/dataset_amp_humanoid_locomotion.yaml",
         f"run_dir={tmp_path / 'run'}"])
    capsys.readouterr()
    evaluate = ["task=HumanoidAMP", "test=true", f"checkpoint={tmp_path / 'run'}", "num_envs=4", "test_episodes=4",
                "task.env.max_episode_length=15", "train.params.amp_obs_demo_buffer_size=1024"]
    run(evaluate)
    captured = capsys.readouterr()
    assert "motion_file=motions/dataset_amp_humanoid_locomotion.yaml: the checkpoint was trained with it" in captured.err
    clips = {part.split("=")[0] for part in captured.out.split() if part.startswith("quality/nearest_clip/")}
    assert clips and clips <= {"quality/nearest_clip/walk", "quality/nearest_clip/run"}

    run([*evaluate, "motion_file=motions/amp_humanoid/amp_humanoid_cartwheel.npy"])
    captured = capsys.readouterr()
    assert "the checkpoint was trained with it" not in captured.err
    clips = {part.split("=")[0] for part in captured.out.split() if part.startswith("quality/nearest_clip/")}
    assert clips == {"quality/nearest_clip/cartwheel"}


def test_a_task_trained_flat_evaluates_without_naming_its_train_config(tmp_path, capsys):
    """Heading's default train config is hrl; a policy trained with train=amp_task is evaluated
    as it was trained (flat, its task metrics), not wrapped around a controller it never had."""
    run(["task=HumanoidHeading", "train=amp_task", *TINY[1:], "max_epochs=1", f"run_dir={tmp_path / 'run'}"])
    capsys.readouterr()
    run(["task=HumanoidHeading", "test=true", f"checkpoint={tmp_path / 'run'}", "num_envs=2", "test_episodes=2",
         "task.env.max_episode_length=15"])
    out = capsys.readouterr().out
    assert "task/direction_error=" in out and "task/speed_error=" in out


def test_results_name_their_units_the_controller_and_the_baseline(capsys):
    from ase_humanoid.app import run

    run(["test=true", "checkpoint=pretrained/heading_amp_humanoid.pt", "test_episodes=1", "num_envs=1",
         "num_threads=1", "task.env.max_episode_length=5"])
    out = capsys.readouterr().out
    assert "on the controller saved with it" in out
    assert "task/direction_error" in out and " rad" in out and " m/s" in out
    assert "random latents on the same controller: python benchmarks/task_policy.py" in out
