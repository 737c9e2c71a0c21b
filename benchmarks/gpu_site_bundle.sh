#!/usr/bin/env bash
# Pack the project's Python 3.12 dependencies for a lent GPU machine that has no network and takes
# at most 64 MiB of files per call (warp-lang's wheel alone is 149 MB):
#
#   benchmarks/gpu_site_bundle.sh            # writes .gs1/ .gs2/ .gs3/ ... (git-ignored via .git/info/exclude)
#
# Downloads the wheels torch's image lacks (mujoco, mujoco-warp, warp-lang, hydra, gymnasium, ...),
# installs them into one folder, drops warp's CPU compiler, examples and tests (CUDA needs none of
# them), compresses it with xz (about 94 MB) and splits it into chunks that fit one call beside the
# work tree. Then, one device call per chunk, back to back (the machine stays warm 30 s):
#   run(carry=[".gs1"], command="mkdir -p /tmp/ch && mv .gs1/* /tmp/ch/")          # and .gs2, ...
#   run(carry=[".gsN"], command="mv .gsN/* /tmp/ch/ && mkdir -p /tmp/site && cat /tmp/ch/* | xz -dc -T0 |
#       tar -C /tmp/site -xf - && PYTHONPATH=/tmp/site benchmarks/gpu_check.sh $OUT")
# (2026-12-04: three calls with a 27 MB work tree, about 1 minute of device time for the transfers.)
set -euo pipefail
cd "$(dirname "$0")/.."
# Each call carries the work tree too: a chunk gets 64 MiB minus the tracked files and 2 MB spare.
tree_bytes=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
CHUNK_BYTES="${CHUNK_BYTES:-$((67108864 - tree_bytes - 2000000))}"
WHEELS="$(mktemp -d)"
SITE="$(mktemp -d)"
trap 'rm -rf "$WHEELS" "$SITE"' EXIT
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$WHEELS" mujoco==4.0.1 mujoco-core==4.0.1 mujoco-warp==4.0.0 warp-lang==1.19.0 \
    hydra-core==1.3.8 omegaconf==2.3.0 gymnasium farama-notifications ufbx trimesh glfw pyopengl importlib_resources
python3 -m pip wheel -q --no-deps -w "$WHEELS" antlr4-python3-runtime==4.9.3  # sdist only on PyPI
python3 -m pip install -q --no-deps --no-compile --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" --target "$SITE" "$WHEELS"/*.whl
rm -rf "$SITE/warp/bin/warp-clang.so" "$SITE/warp/examples" "$SITE/warp/tests"
for n in $(seq 1 9); do rm -rf ".gs$n"; grep -qx "/.gs$n/" .git/info/exclude 2>/dev/null || echo "/.gs$n/" >>.git/info/exclude; done
tar -C "$SITE" -cf - . | xz -T0 -6 | split -b "$CHUNK_BYTES" -d - "$WHEELS/chunk."
n=0
for chunk in "$WHEELS"/chunk.*; do
    n=$((n + 1))
    mkdir -p ".gs$n"
    mv "$chunk" ".gs$n/"
done
echo "$n chunks: $(ls -d .gs* | tr '\n' ' ')"
