"""MotionLib benchmark: load time, memory, and get_motion_state throughput for AMP demo batches.

One AMP demo batch is 4096 motion ids with 10 times each (the 10 AMP observation steps, one
control step of 1/30 s apart), flattened to 40960 queries. Prints one JSON object.

    python benchmarks/motion_lib.py --json [--motion-file motions/dataset_amp_humanoid_all.yaml]
                                           [--device cuda] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ase_humanoid.motion.motion_lib import MotionLib  # noqa: E402
from ase_humanoid.robots import load_robot  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MOTION_FILE = PROJECT_ROOT / "motions" / "dataset_amp_humanoid_all.yaml"
CONTROL_DT = 1.0 / 30.0


def current_rss_mb() -> float:
    """Resident set size of this process now (Linux /proc), else the peak (getrusage)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def demo_batch(lib: MotionLib, num_ids: int, num_steps: int, generator: torch.Generator):
    """Motion ids and times [num_ids * num_steps]: each id at num_steps times CONTROL_DT apart."""
    ids = lib.sample_motions(num_ids, generator=generator)
    end_times = lib.sample_time(ids, truncate_time=CONTROL_DT * (num_steps - 1), generator=generator)
    offsets = CONTROL_DT * torch.arange(num_steps, dtype=lib.dtype, device=lib.device)
    times = end_times.unsqueeze(-1) + offsets  # [num_ids, num_steps]
    return ids.repeat_interleave(num_steps), times.reshape(-1)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def run(motion_file, robot_name: str, device: str, num_ids: int, num_steps: int, iters: int, warmup: int) -> dict:
    robot = load_robot(robot_name)
    rss_before = current_rss_mb()
    start = time.perf_counter()
    lib = MotionLib(motion_file, robot, device=device)
    synchronize(lib.device)
    load_s = time.perf_counter() - start
    rss_delta = current_rss_mb() - rss_before

    generator = torch.Generator(device=lib.device).manual_seed(0)
    ids, times = demo_batch(lib, num_ids, num_steps, generator)
    for _ in range(warmup):
        lib.get_motion_state(ids, times)
    synchronize(lib.device)
    start = time.perf_counter()
    for _ in range(iters):
        lib.get_motion_state(ids, times)
    synchronize(lib.device)
    elapsed = time.perf_counter() - start
    batch = ids.numel()
    return {
        "benchmark": "motion_lib",
        "motion_file": str(motion_file),
        "robot": robot_name,
        "device": str(lib.device),
        "torch_threads": torch.get_num_threads(),
        "num_motions": lib.num_motions,
        "num_frames": lib.num_frames,
        "total_duration_s": round(float(lib.motion_lengths.sum()), 3),
        "load_time_s": round(load_s, 4),
        "packed_tensors_mb": round(lib.packed_nbytes() / 2**20, 3),
        "rss_delta_mb": round(rss_delta, 1),
        "batch": f"{num_ids}x{num_steps}",
        "queries_per_batch": batch,
        "iterations": iters,
        "ms_per_batch": round(1000 * elapsed / iters, 2),
        "queries_per_s": round(batch * iters / elapsed),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object (the only output format)")
    parser.add_argument("--motion-file", default=str(DEFAULT_MOTION_FILE))
    parser.add_argument("--robot", default="amp_humanoid")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--num-ids", type=int, default=4096)
    parser.add_argument("--num-steps", type=int, default=10)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default: torch's choice); 1 avoids oversubscription on a busy machine")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    result = run(args.motion_file, args.robot, args.device, args.num_ids, args.num_steps, args.iters, args.warmup)
    print(json.dumps(result))


if __name__ == "__main__":
    from ase_humanoid.errors import run_command

    run_command(main)
