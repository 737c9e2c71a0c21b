"""Config composition: unknown keys and choices name the valid ones; auto values resolve."""

import pytest

from ase_humanoid.config import compose_config
from ase_humanoid.errors import ConfigError


def test_defaults_resolve_for_cpu():
    cfg = compose_config([])
    assert cfg.task.name == "HumanoidASE" and cfg.train.algo == "ase"
    assert cfg.device == "cpu" and cfg.sim.name == "mujoco" and cfg.robot.name == "amp_humanoid"
    assert isinstance(cfg.num_envs, int) and cfg.num_envs > 0
    assert isinstance(cfg.num_threads, int)


def test_task_picks_its_default_algorithm():
    assert compose_config(["task=HumanoidAMP"]).train.algo == "amp"
    assert compose_config(["task=HumanoidAMP", "train=ppo"]).train.algo == "ppo"


def test_robot_and_sim_groups():
    cfg = compose_config(["robot=sword_shield", "sim=mujoco"])
    assert cfg.robot.name == "sword_shield" and "sword" in cfg.robot.key_bodies
    assert cfg.sim.name == "mujoco"


def test_overrides_apply():
    cfg = compose_config(["num_envs=16", "max_epochs=3", "train.params.learning_rate=1e-4", "task.env.state_init=Start"])
    assert cfg.num_envs == 16 and cfg.max_epochs == 3
    assert cfg.train.params.learning_rate == pytest.approx(1e-4)
    assert cfg.task.env.state_init == "Start"


@pytest.mark.parametrize("override, message", [
    ("num_env=16", "unknown config key 'num_env'.*valid keys there:.*num_envs"),
    ("train.params.lr=1", "unknown config key 'train.params.lr'.*learning_rate"),
    ("task=HumanoidFly", "unknown task 'HumanoidFly'; valid choices:.*HumanoidAMP"),
    # a near miss is named; a far one is not guessed at
    ("task=HumanoidHeadin", r"unknown task 'HumanoidHeadin' \(did you mean 'HumanoidHeading'\?\); valid choices"),
    ("train.params.learning_rat=1e-4",
     r"'learning_rat' is not a key of train.params \(did you mean 'learning_rate'\?\); valid keys there"),
    ("train.params.lr=1", r"'lr' is not a key of train.params; valid keys there"),
    ("train=sac", "unknown train 'sac'; valid choices:.*ase"),
    ("sim=bullet", "unknown sim 'bullet'; valid choices: auto, isaacgym, mujoco, mujoco_warp"),
    ("robot=atlas", "unknown robot 'atlas'; valid choices: amp_humanoid, sword_shield"),
    ("num_envs=many", "num_envs"),
    ("+extra=1", "adding or deleting keys is not allowed"),
    ("num_envs", "not of the form key=value"),
])
def test_bad_overrides_name_the_key_and_valid_choices(override, message):
    with pytest.raises(ConfigError, match=message):
        compose_config([override])


# ----------------------------------------------------------------------------- training profiles


def test_cpu_backend_picks_the_cpu_profile_and_paper_keeps_the_release():
    cpu = compose_config(["task=HumanoidAMP", "sim=mujoco"])
    paper = compose_config(["task=HumanoidAMP", "sim=mujoco", "profile=paper"])
    assert cpu.profile == "cpu" and paper.profile == "paper"
    assert list(cpu.train.params.actor_units) == [256, 256] and cpu.task.env.num_amp_obs_steps == 2
    # paper: exactly cfg/train/amp.yaml and cfg/task/HumanoidAMP.yaml (the release's values)
    assert list(paper.train.params.actor_units) == [1024, 512] and paper.task.env.num_amp_obs_steps == 10
    assert paper.train.params.learning_rate == 2e-5 and paper.train.params.mini_epochs == 6


def test_command_line_keys_win_over_the_profile_and_the_start_up_line_says_so():
    from ase_humanoid.app import describe_profile

    cfg = compose_config(["task=HumanoidAMP", "sim=mujoco", "train.params.mini_epochs=7",
                          "task.env.num_amp_obs_steps=5"])
    assert cfg.train.params.mini_epochs == 7 and cfg.task.env.num_amp_obs_steps == 5
    assert cfg.train.params.learning_rate == 2e-4  # the profile's value where nothing was given
    line = describe_profile(cfg)
    assert "learning_rate=0.0002" in line
    assert "from the command line instead: num_amp_obs_steps=5, mini_epochs=7" in line
    assert "release" in describe_profile(compose_config(["profile=paper"]))
    assert "max_epochs=5000" in line


def test_paper_profile_sets_the_release_run_length_unless_given():
    from ase_humanoid.app import describe_profile

    assert compose_config(["sim=mujoco"]).max_epochs == 5000  # CPU profile: its own measured length
    for task, epochs in (("HumanoidASE", 100000), ("HumanoidAMP", 10000), ("HumanoidHeading", 10000)):
        cfg = compose_config([f"task={task}", "sim=mujoco", "profile=paper"])
        assert cfg.max_epochs == epochs
        assert f"max_epochs={epochs}" in describe_profile(cfg)
    cfg = compose_config(["sim=mujoco", "profile=paper", "max_epochs=7"])
    assert cfg.max_epochs == 7 and "from the command line instead: max_epochs=7" in describe_profile(cfg)


def test_unknown_profile_names_the_valid_ones():
    with pytest.raises(ConfigError, match="auto, paper, cpu"):
        compose_config(["profile=laptop"])


def test_profile_keys_per_algorithm():
    """Hierarchical tasks get high-level policy sizes but no AMP history (theirs comes from the
    low-level checkpoint)."""
    from ase_humanoid.config import profile_overrides

    hrl = profile_overrides("cpu", "hrl")
    assert hrl["train.params.actor_units"] == [256, 256] and hrl["train.params.mini_epochs"] == 4
    assert not any(key.startswith("task.") for key in hrl)
    assert profile_overrides("paper", "amp") == {"max_epochs": 10000}  # the paper profile sets only run lengths
    assert profile_overrides("paper", "ase") == {"max_epochs": 100000}
    assert "max_epochs" not in profile_overrides("cpu", "ase")  # the CPU profile keeps cfg/config.yaml's 5000
    assert profile_overrides("cpu", "ase")["task.env.num_amp_obs_steps"] == 2


def test_hierarchical_tasks_pick_the_hrl_section_and_paper_keeps_the_release():
    cpu = compose_config(["task=HumanoidHeading", "sim=mujoco"])
    paper = compose_config(["task=HumanoidHeading", "sim=mujoco", "profile=paper"])
    assert cpu.train.algo == "hrl" and cpu.profile == "cpu"
    assert list(cpu.train.params.actor_units) == [256, 256] and list(cpu.train.params.critic_units) == [256, 256]
    assert (cpu.train.params.mini_epochs, cpu.train.params.minibatch_size) == (4, "batch/2")
    assert cpu.train.params.learning_rate == 1e-4
    assert cpu.task.env.num_amp_obs_steps == paper.task.env.num_amp_obs_steps  # the task's; the LLC decides
    # paper: exactly cfg/train/hrl.yaml (the release's values)
    assert list(paper.train.params.actor_units) == [1024, 512] and paper.train.params.mini_epochs == 6
    assert paper.train.params.minibatch_size == "auto" and paper.train.params.learning_rate == 2e-5
