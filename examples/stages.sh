# Sourced by the examples/ase_*_controller.sh scripts (needs the project root as cwd and RUNS set).
#
# stage NAME EPOCHS ARGS...: train RUNS/NAME to EPOCHS epochs with `./run python train.py ARGS`;
# skipped if that epoch's checkpoint exists, resumed (with ARGS but checkpoint= and resume=) if
# the run folder holds a latest.pt, so a script run again after an interruption goes on where
# it stopped.
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
