#!/usr/bin/env bash
# GPU check of the MuJoCo Warp path in one run of under 8 minutes; all results in one JSON file.
#
#   benchmarks/gpu_check.sh [OUT_DIR]     # default: $OUT if set, else runs/gpu_check
#
# Writes OUT_DIR/gpu_check.json (and learn_amp_walk.json/.png of the AMP stage). Stages, each under
# its own time limit so that the script always ends within GPU_CHECK_BUDGET_S (default 470 s) and
# always writes the JSON; a failed or timed-out stage is recorded with its exit code and log tail:
#   1. equivalence  GPU MuJoCo Warp vs CPU MuJoCo on the test scenario (benchmarks/_warp_bench.py);
#                   the first stage also compiles warp's CUDA kernels (cached for the later stages)
#   2. sim_<N>      sim_throughput.py --sim mujoco_warp at N = 1024, 4096, 16384 envs (backend vs
#                   bare MuJoCo Warp)
#   3. env_<N>      env_throughput.py --task HumanoidASE --sim mujoco_warp at the same N (env vs raw
#                   CPU rollout on all cores)
#   4. train_ase    python train.py task=HumanoidASE sim=mujoco_warp num_envs=4096 max_epochs=4;
#                   samples/s read from its TensorBoard log (epochs after the first)
#   5. amp_walk     benchmarks/learn_amp_walk.py --minutes 5 --sim mujoco_warp --envs 4096, shortened
#                   to the time left if earlier stages ran long (the minutes run are recorded)
#
# Needs a CUDA torch and the project's dependencies with the 'gpu' extra (mujoco, mujoco-warp,
# warp-lang, hydra-core, omegaconf, gymnasium, tensorboard, matplotlib, ufbx). Where they are not
# installed, wheels in ./.whl are installed into /tmp/site first (for the lent H200 machine, which
# has no network; note that warp-lang's wheel alone exceeds one device call's 64 MiB transfer:
# benchmarks/gpu_site_bundle.sh packs everything into xz'd chunks carried over several calls).
# PYTHON selects the interpreter (default python3). No part of this runs in CI. For a smoke run of
# the script itself without a GPU: GPU_CHECK_DEVICE=cpu GPU_CHECK_SIZES=4 GPU_CHECK_ENVS=4
# AMP_MINUTES=0.5 benchmarks/gpu_check.sh /tmp/gpu_check_smoke (warp's CPU device, slow).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT_DIR="${1:-${OUT:-runs/gpu_check}}"
PY="${PYTHON:-python3}"
BUDGET_S="${GPU_CHECK_BUDGET_S:-470}"
AMP_MINUTES="${AMP_MINUTES:-5}"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
read -r -a SIZES <<<"${GPU_CHECK_SIZES:-1024 4096 16384}"
ENVS="${GPU_CHECK_ENVS:-4096}"  # envs of the training stages
START=$(date +%s)
DEADLINE=$((START + BUDGET_S))
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
mkdir -p "$OUT_DIR"
export PYTHONUNBUFFERED=1 MUJOCO_GL="${MUJOCO_GL:-egl}"

if [ -d .whl ] && compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >"$WORK/wheels.log" 2>&1 || echo "wheel install failed" >>"$WORK/wheels.log"
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi

# No stage renders; a machine without libEGL (the lent H200 had none) cannot even import mujoco
# with MUJOCO_GL=egl, so fall back to no rendering backend there.
if ! MUJOCO_GL="$MUJOCO_GL" "$PY" -c "import mujoco" >/dev/null 2>&1 && MUJOCO_GL=disable "$PY" -c "import mujoco" >/dev/null 2>&1; then
    export MUJOCO_GL=disable
fi

STAGES=()

# run_stage NAME LIMIT_S CMD...: runs CMD with stdout+stderr to $WORK/NAME.log, under the smaller of
# LIMIT_S and the time left; records exit code and seconds.
run_stage() {
    local name="$1" limit="$2"
    shift 2
    local left=$((DEADLINE - $(date +%s) - 5))
    [ "$limit" -gt "$left" ] && limit=$left
    STAGES+=("$name")
    if [ "$limit" -lt 10 ]; then
        echo "skipped: no time left in the ${BUDGET_S}s budget" >"$WORK/$name.log"
        echo "skipped" >"$WORK/$name.rc"
        echo 0 >"$WORK/$name.seconds"
        return
    fi
    echo "[gpu_check] $name (limit ${limit}s): $*" >&2
    local t0=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" >"$WORK/$name.log" 2>&1
    echo $? >"$WORK/$name.rc"
    echo $(($(date +%s) - t0)) >"$WORK/$name.seconds"
}

"$PY" - >"$WORK/preflight.json" 2>"$WORK/preflight.log" <<'EOF'
import json, platform
info = {"python": platform.python_version()}
import torch
info.update(torch=torch.__version__, cuda=torch.cuda.is_available())
if torch.cuda.is_available():
    info["gpu"] = torch.cuda.get_device_name(0)
import mujoco, warp, mujoco_warp
info.update(mujoco=mujoco.__version__, warp=warp.__version__, mujoco_warp=getattr(mujoco_warp, "__version__", "?"))
print(json.dumps(info))
EOF
PREFLIGHT_RC=$?

if [ "$PREFLIGHT_RC" -eq 0 ] && { [ "$DEVICE" = cpu ] || grep -q '"cuda": true' "$WORK/preflight.json"; }; then
    run_stage equivalence 200 "$PY" benchmarks/_warp_bench.py equivalence --device "$DEVICE" --envs 8
    for n in "${SIZES[@]}"; do
        run_stage "sim_$n" 45 "$PY" benchmarks/sim_throughput.py --sim mujoco_warp --device "$DEVICE" \
            --envs "$n" --seconds 3 --json
    done
    for n in "${SIZES[@]}"; do
        run_stage "env_$n" 60 "$PY" benchmarks/env_throughput.py --task HumanoidASE --sim mujoco_warp \
            --device "$DEVICE" --envs "$n" --threads "$(nproc)" --seconds 3 --json
    done
    run_stage train_ase 120 "$PY" train.py task=HumanoidASE sim=mujoco_warp "device=$DEVICE" \
        "num_envs=$ENVS" max_epochs=4 "run_dir=$WORK/train_ase"
    # The AMP run gets AMP_MINUTES or what is left; start-up (motion data, demo buffer, first
    # epoch) and the final write get 75 s on top.
    left=$((DEADLINE - $(date +%s) - 75))
    amp_s=$(awk "BEGIN { printf \"%d\", $AMP_MINUTES * 60 }")
    [ "$amp_s" -gt "$left" ] && amp_s=$left
    [ "$amp_s" -lt 30 ] && amp_s=0
    amp_minutes=$(awk "BEGIN { printf \"%.2f\", $amp_s / 60 }")
    echo "$amp_minutes" >"$WORK/amp_minutes"
    if [ "$amp_s" -gt 0 ]; then
        run_stage amp_walk $((amp_s + 75)) "$PY" benchmarks/learn_amp_walk.py --minutes "$amp_minutes" \
            --sim mujoco_warp --device "$DEVICE" --envs "$ENVS" --out "$WORK/amp_walk"
        cp "$WORK/amp_walk/learn_amp_walk.json" "$WORK/amp_walk/learn_amp_walk.png" "$OUT_DIR/" 2>/dev/null
    fi
fi

WORK="$WORK" OUT_DIR="$OUT_DIR" START="$START" DEVICE="$DEVICE" ENVS="$ENVS" PREFLIGHT_RC="$PREFLIGHT_RC" STAGES="${STAGES[*]:-}" \
"$PY" - <<'EOF'
"""Collect every stage's JSON line, exit code, time and log tail into OUT_DIR/gpu_check.json."""
import json, os, time
from pathlib import Path

work, out = Path(os.environ["WORK"]), Path(os.environ["OUT_DIR"])


def read(path, default=None):
    return path.read_text().strip() if path.exists() else default


def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def tensorboard_samples_per_s(run_dir):
    """Mean perf/samples_per_s of train.py's epochs after the first (TensorBoard scalars)."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        return None
    values = []
    for events in Path(run_dir).rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events.parent))
        acc.Reload()
        if "perf/samples_per_s" in acc.Tags().get("scalars", []):
            values = [e.value for e in acc.Scalars("perf/samples_per_s")]
    if not values:
        return None
    timed = values[1:] or values
    return {"samples_per_s": sum(timed) / len(timed), "per_epoch": values}


report = {"preflight": last_json(read(work / "preflight.json", "") or ""),
          "preflight_log": (read(work / "preflight.log", "") or "")[-2000:] or None,
          "stages": {}}
if os.environ["PREFLIGHT_RC"] != "0" or (os.environ["DEVICE"] != "cpu" and not (report["preflight"] or {}).get("cuda")):
    report["error"] = "no CUDA torch or missing packages (see preflight_log); nothing was run"
for name in os.environ["STAGES"].split():
    log = read(work / f"{name}.log", "") or ""
    rc = read(work / f"{name}.rc", "")
    stage = {"exit_code": int(rc) if rc.lstrip("-").isdigit() else rc,
             "seconds": int(read(work / f"{name}.seconds", "0") or 0),
             "result": last_json(log)}
    if rc == "124":
        stage["timed_out"] = True
    if stage["exit_code"] != 0 or stage["result"] is None:
        stage["log_tail"] = log[-3000:]
    if name == "train_ase":
        stage["result"] = tensorboard_samples_per_s(work / "train_ase")
        stage["command"] = (f"python train.py task=HumanoidASE sim=mujoco_warp device={os.environ['DEVICE']} "
                            f"num_envs={os.environ['ENVS']} max_epochs=4")
    if name == "amp_walk":
        stage["minutes"] = float(read(work / "amp_minutes", "0"))
    report["stages"][name] = stage
report["total_seconds"] = int(time.time()) - int(os.environ["START"])
(out / "gpu_check.json").write_text(json.dumps(report, indent=1))
print(json.dumps({"gpu_check": str(out / "gpu_check.json"), "total_seconds": report["total_seconds"],
                  "failed": [n for n, s in report["stages"].items() if s["exit_code"] != 0]}))
EOF
