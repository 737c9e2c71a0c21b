"""torch.distributed training on CPU with gloo: two ranks stay identical after updates."""

import json
import os
import subprocess
import sys

from ase_humanoid import PROJECT_ROOT

TINY = ["task=HumanoidASE", "num_envs=4", "train.params.actor_units=[32,32]", "train.params.critic_units=[32,32]",
        "train.params.disc_units=[32,32]", "train.params.style_units=[32,16]", "train.params.mini_epochs=2",
        "train.params.amp_obs_demo_buffer_size=1024", "train.params.amp_replay_buffer_size=1024",
        "task.env.fall_pool_size=8", "task.env.fall_steps=10", "num_threads=1",
        "final_skill_report=0"]


def torchrun(*args, timeout=300):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", *args]
    return subprocess.run(cmd, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_two_ranks_keep_identical_parameters(tmp_path):
    out = tmp_path / "result.json"
    result = torchrun(str(PROJECT_ROOT / "tests" / "dist_check.py"), str(out), *TINY)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(out.read_text())
    assert summary["world_size"] == 2 and summary["epochs"] == 2
    assert summary["obs_differ"], "ranks should step different envs (different seeds)"
    assert summary["max_param_diff"] == 0.0
    # destroy_process_group freed the group: no gloo thread is left to race the exit
    assert summary["threads_after_shutdown"] <= summary["threads_before_init"], summary


def test_torchrun_train_cli_rank0_saves(tmp_path):
    run_dir = tmp_path / "run"
    result = torchrun(str(PROJECT_ROOT / "train.py"), *TINY, "max_epochs=1", f"run_dir={run_dir}")
    assert result.returncode == 0, result.stderr[-4000:]
    assert "world_size=2" in result.stdout
    assert (run_dir / "latest.pt").is_file() and (run_dir / "metrics.jsonl").is_file()
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) == 1  # rank 0 logs alone
