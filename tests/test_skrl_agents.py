"""The skrl integration (ase_humanoid/integrations): this project's AMP, ASE and hierarchical
agents as skrl agents, driven by skrl's SequentialTrainer on `gymnasium.make_vec` envs through
skrl's stock wrapper. Each trains a couple of updates on two envs and writes skrl's checkpoint;
the same seed gives the same weights under the project's Runner and under skrl's trainer; a
skrl-trained ASE controller is an `llc_checkpoint` for train.py. Skipped without skrl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium
import pytest
import torch
from project_scripts import PROJECT_ROOT, load_script

pytest.importorskip("skrl")

import ase_humanoid  # noqa: E402,F401  (registers the gymnasium ids)
from ase_humanoid.agents.amp import AMPAgent  # noqa: E402
from ase_humanoid.agents.ase import ASEAgent  # noqa: E402
from ase_humanoid.agents.config import AMPConfig, ASEConfig, from_dict  # noqa: E402
from ase_humanoid.agents.hrl import HRLAgent, HRLConfig, load_llc  # noqa: E402
from ase_humanoid.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:To copy construct from a tensor")  # skrl's wrapper re-wraps tensors

FAST_ENV = dict(num_threads=1, seed=0, max_episode_length=6)
SHIPPED_WALK = "pretrained/ase_llc_amp_humanoid_walk.pt"
# tiny networks and buffers; rollouts of 4 steps on 2 envs, two minibatches
TINY = dict(actor_units=[32], critic_units=[32], horizon_length=4, minibatch_size=4, seed=0)
TINY_AMP = dict(TINY, disc_units=[32], amp_obs_demo_buffer_size=32, amp_replay_buffer_size=32, amp_batch_size=16,
                amp_minibatch_size=8)
TINY_ASE = dict(TINY_AMP, style_units=[16])


def quiet(tmp_path, checkpoint_interval=0, write_interval=0) -> dict:
    return {"directory": str(tmp_path), "experiment_name": "run", "write_interval": write_interval,
            "checkpoint_interval": checkpoint_interval}


def trainer(env, agent, timesteps):
    from skrl.trainers.torch import SequentialTrainer

    return SequentialTrainer(env=env, agents=agent, cfg={"timesteps": timesteps, "headless": True,
                                                         "disable_progressbar": True,
                                                         "close_environment_at_exit": False})


def wrapped(task, **options):
    from skrl.envs.wrappers.torch import wrap_env

    return wrap_env(gymnasium.make_vec(f"ase_humanoid/{task}-v0", num_envs=2, **options), wrapper="gymnasium")


def equal_weights(a: dict, b: dict) -> list[str]:
    """Names of the tensors that differ between state dicts `a` and `b` (same keys)."""
    assert a.keys() == b.keys()
    return [k for k in a if not torch.equal(a[k], b[k])]


@pytest.fixture(scope="module")
def ase_run(tmp_path_factory):
    """examples/skrl_ase.py: two updates of SkrlASE on HumanoidASE, skrl checkpoint at step 8,
    the controller also written in the project's format."""
    out = tmp_path_factory.mktemp("skrl_ase")
    example = load_script("examples/skrl_ase.py")
    env, agent = example.train(num_envs=2, timesteps=8, rollouts=4, units=(32,), disc_units=(32,),
                               experiment_dir=str(out),
                               agent_cfg={k: v for k, v in TINY_ASE.items() if k != "horizon_length"},
                               write_interval=4, checkpoint_interval=8, llc_out=str(out / "llc.pt"), **FAST_ENV)
    yield env, agent, out
    env.close()


def test_ase_trains_under_skrls_trainer_and_writes_skrls_checkpoint(ase_run):
    from skrl.memories.torch import RandomMemory

    env, agent, out = ase_run
    ase = agent.project_agent
    assert isinstance(ase, ASEAgent) and ase.epoch == 2 and ase.env_steps == 16
    stats = agent.last_update_stats
    for key in ("disc_loss", "enc_loss", "diversity_loss", "enc_reward_mean", "actor_loss"):
        assert torch.isfinite(torch.tensor(stats[key])), key
    # skrl's checkpoint: views of the project networks plus the project agent's whole state
    checkpoint = Path(agent.experiment_dir) / "checkpoints" / "agent_8.pt"
    modules = torch.load(checkpoint, weights_only=False)
    assert {"policy", "value", "discriminator", "optimizer", "project_agent"} <= modules.keys()
    assert modules["project_agent"]["algo"] == "ASEAgent" and modules["project_agent"]["epoch"] == 2
    assert list(Path(agent.experiment_dir).glob("events.out.tfevents.*"))  # skrl's TensorBoard writer ran
    # act's outputs carry the latents; a fresh agent loads skrl's checkpoint back exactly
    _, outputs = agent.act(torch.zeros(2, env.observation_space.shape[0]), None, timestep=0, timesteps=0)
    assert outputs["latents"].shape == (2, 64) and outputs["log_prob"].shape == (2, 1)
    fresh = type(agent)(env=env, memory=RandomMemory(memory_size=4, num_envs=2),
                        cfg={**TINY_ASE, "seed": 1, "experiment": quiet(out / "fresh")})
    assert equal_weights(fresh.project_agent.model.state_dict(), ase.model.state_dict())  # seed 1 differs
    fresh.load(str(checkpoint))
    assert equal_weights(fresh.project_agent.model.state_dict(), ase.model.state_dict()) == []
    assert torch.equal(fresh.project_agent.latents, ase.latents) and fresh.project_agent.epoch == 2


@pytest.mark.parametrize("algo", ["amp", "ase", "hrl"])
def test_same_seed_same_updates_under_project_runner_and_skrl_trainer(algo, tmp_path):
    """Two updates through skrl's trainer and through the project's Runner from one seed: the
    same weights bit for bit (skrl's wrapper resets the env with seed skrl.config.torch.key, so
    the Runner's env is reseeded with it too)."""
    import skrl

    from ase_humanoid.runner import Runner  # the project's own loop (the package root's runner)

    from ase_humanoid.integrations import SkrlAMP, SkrlASE, SkrlHRL

    task, adapter, params = {"amp": ("HumanoidAMP", SkrlAMP, TINY_AMP), "ase": ("HumanoidASE", SkrlASE, TINY_ASE),
                             "hrl": ("HumanoidHeading", SkrlHRL, TINY)}[algo]
    options = dict(FAST_ENV, **({"llc_checkpoint": SHIPPED_WALK} if algo == "hrl" else {}))
    env = wrapped(task, **options)
    agent = adapter(env=env, cfg={**params, "experiment": quiet(tmp_path / "skrl", checkpoint_interval=8)})
    trainer(env, agent, timesteps=8).train()
    assert (Path(agent.experiment_dir) / "checkpoints" / "agent_8.pt").is_file()

    inner = gymnasium.make_vec(f"ase_humanoid/{task}-v0", num_envs=2, **options).env
    if algo == "hrl":
        config = from_dict(HRLConfig, {**params, "llc_steps": inner.llc_steps})
        project = HRLAgent.from_llc_checkpoint(None, inner, config)
    else:
        cls, config_cls = (AMPAgent, AMPConfig) if algo == "amp" else (ASEAgent, ASEConfig)
        project = cls(inner.num_obs, inner.num_actions, inner.amp_observation_space.shape[-1], 2,
                      inner.fetch_amp_obs_demo, from_dict(config_cls, params), inner.device, demo_keys=inner)
    inner.reseed(skrl.config.torch.key)
    runner = Runner(inner, project, tmp_path / "project", config={}, max_epochs=2, save_every=0, quality_every=0)
    stats = runner.learn()
    assert project.epoch == agent.project_agent.epoch == 2
    assert equal_weights(agent.project_agent.model.state_dict(), project.model.state_dict()) == []
    assert torch.equal(agent.project_agent.obs_norm.mean, project.obs_norm.mean)
    assert agent.last_update_stats["actor_loss"] == stats["train/actor_loss"]
    inner.close()
    env.close()


def test_hrl_example_trains_on_the_shipped_controller(tmp_path):
    example = load_script("examples/skrl_hrl_heading.py")
    env, agent = example.train(num_envs=2, timesteps=8, rollouts=4, units=(32,), experiment_dir=str(tmp_path),
                               agent_cfg={"mini_batches": 2, "seed": 0}, write_interval=0, checkpoint_interval=8,
                               **FAST_ENV)
    assert example.SHIPPED_WALK_LLC == SHIPPED_WALK
    assert agent.project_agent.epoch == 2 and agent.llc.source.endswith("ase_llc_amp_humanoid_walk.pt")
    assert env.action_space.shape == (64,) and agent.task_related_state_size == 5  # Heading's goal: 5 numbers
    assert torch.isfinite(torch.tensor(agent.last_update_stats["disc_reward_mean"]))  # the controller's style reward
    assert (Path(agent.experiment_dir) / "checkpoints" / "agent_8.pt").is_file()
    shipped = load_llc(PROJECT_ROOT / SHIPPED_WALK).state_dict()  # the controller stayed frozen
    assert equal_weights(agent.llc.state_dict(), shipped) == []
    # the project's format: an HRL checkpoint carries its controller
    saved = agent.save_project_checkpoint(tmp_path / "heading.pt")
    assert equal_weights(load_llc(saved).state_dict(), shipped) == []
    assert torch.load(saved, weights_only=True)["config"]["llc_checkpoint"] == agent.llc.source
    # rofunc's ASEHRLAgent arguments are accepted (the buffers stay unused: the style reward is the
    # frozen discriminator's) and checked
    rofunc = type(agent)(env=env, cfg={**TINY, "experiment": quiet(tmp_path)}, task_related_state_size=5,
                         amp_observation_space=env.amp_observation_space, motion_dataset=64, replay_buffer=64)
    assert rofunc.collect_reference_motions(3).shape == (3, env.amp_observation_space.shape[0])
    with pytest.raises(ConfigError, match="task_related_state_size=4"):
        type(agent)(env=env, cfg={**TINY, "experiment": quiet(tmp_path)}, task_related_state_size=4)
    env.close()


def test_skrl_trained_ase_controller_is_an_llc_checkpoint(ase_run, tmp_path):
    _, agent, out = ase_run
    path = out / "llc.pt"
    llc = load_llc(path)  # the project's HRL loader
    actor = {k[len("actor."):]: v for k, v in agent.project_agent.model.state_dict().items() if k.startswith("actor.")}
    assert llc.robot_name == "amp_humanoid" and equal_weights(llc.actor.state_dict(), actor) == []
    # train.py trains a hierarchical task on it
    run_dir = tmp_path / "heading"
    result = subprocess.run(
        [sys.executable, "train.py", "task=HumanoidHeading", f"llc_checkpoint={path}", f"run_dir={run_dir}",
         "num_envs=2", "device=cpu", "sim=mujoco", "num_threads=1", "save_every=0", "max_epochs=1",
         "train.params.actor_units=[32]", "train.params.critic_units=[32]", "train.params.horizon_length=2",
         "train.params.mini_epochs=1", "final_skill_report=0", "quality_every=0"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    state = torch.load(run_dir / "latest.pt", weights_only=True)
    assert state["agent"]["algo"] == "HRLAgent" and state["config"]["llc_checkpoint"] == str(path)


def test_rofunc_terms_and_reference_motions(tmp_path):
    from skrl.memories.torch import RandomMemory

    from ase_humanoid.integrations import SkrlAMP, SkrlHRL

    env = wrapped("HumanoidAMP", **FAST_ENV)
    amp_space = env.amp_observation_space
    demos = []

    def collect(n):  # the motion library's samples, as rofunc's env callable hands them over
        demos.append(env.fetch_amp_obs_demo(n))
        return demos[-1]

    agent = SkrlAMP(env=env, cfg={**TINY_AMP, "experiment": quiet(tmp_path)}, amp_observation_space=amp_space,
                    motion_dataset=RandomMemory(memory_size=48), replay_buffer=64, collect_reference_motions=collect,
                    task_related_state_size=0)
    project = agent.project_agent
    assert project.demo_buffer.capacity == 48 and project.replay_buffer.capacity == 64
    assert len(demos) == 3  # the demo buffer filled by amp_batch_size (16) samples at a time
    reference = agent.collect_reference_motions(5)
    assert reference.shape == (5, amp_space.shape[0]) and reference.abs().sum() > 0 and len(demos) == 4
    with pytest.raises(ConfigError, match="task_related_state_size=3"):
        SkrlAMP(env=env, cfg={**TINY_AMP, "experiment": quiet(tmp_path)}, task_related_state_size=3)
    with pytest.raises(ConfigError, match="pass models=None"):
        SkrlAMP({"policy": object()}, env=env, cfg={**TINY_AMP, "experiment": quiet(tmp_path)})
    with pytest.raises(ConfigError, match="is not hierarchical"):
        SkrlHRL(env=env, cfg={**TINY, "experiment": quiet(tmp_path)})
    with pytest.raises(ConfigError, match="'actor_unitz'"):
        SkrlAMP(env=env, cfg={**TINY_AMP, "actor_unitz": [8], "experiment": quiet(tmp_path)})
    env.close()


def test_without_skrl_the_error_names_the_extra(monkeypatch):
    import ase_humanoid.integrations as integrations

    monkeypatch.setitem(sys.modules, "skrl", None)  # what `import skrl` meets where it is not installed
    with pytest.raises(ImportError, match=r"pip install ase_humanoid\[skrl\]"):
        integrations.SkrlASE  # noqa: B018
    assert "SkrlHRL" in integrations.__all__  # the package itself imports without skrl
