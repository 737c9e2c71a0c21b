"""Hydra config composition with strict validation and machine-dependent defaults.

`compose_config(["task=HumanoidASE", "num_envs=16"])` returns the resolved run config. Unknown
keys, unknown group choices and wrong value types raise ConfigError naming the key and the
valid choices (Hydra's own message for an unknown key does not list them).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ase_humanoid.errors import ConfigError, did_you_mean
from ase_humanoid.paths import CFG_DIR
from ase_humanoid.utils.checks import check_seed
from ase_humanoid.utils.cpu_threads import available_cores

CONFIG_GROUPS = ("task", "train", "robot", "sim", "terrain")
PROFILES = ("auto", "paper", "cpu")


def saved_value(config: dict | None, key: str):
    """`key` ("task.env.num_amp_obs_steps") of a run config as a checkpoint stores it (plain
    dicts); None where any part is missing."""
    node = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def trained_motion_file(saved: dict | None) -> str | None:
    """The motion file a saved run trained on: its `motion_file`, else its task's default for its
    robot as the run saved it (a task's defaults change between versions: a run saved with the
    six-clip default keeps it). None where the config says neither."""
    explicit = saved_value(saved, "motion_file")
    if explicit:
        return explicit
    defaults = saved_value(saved, "task.motion_file")
    if isinstance(defaults, str):
        return defaults
    if isinstance(defaults, dict):
        return defaults.get(saved_value(saved, "robot.name"))
    return None


def group_choices(group: str, cfg_dir: Path = CFG_DIR) -> list[str]:
    return sorted(p.stem for p in (cfg_dir / group).glob("*.yaml"))


# Keys whose values are file or folder paths: a path may hold spaces, commas, brackets or quotes,
# which Hydra's override grammar reads as syntax ("run_dir=my run (1)" is a lexer error), so such
# a value is quoted for the user.
PATH_KEYS = ("run_dir", "checkpoint", "llc_checkpoint", "motion_file", "video")


def hydra_quote(text: str) -> str:
    """`text` as a single-quoted Hydra override value that parses back to exactly `text`
    (a quote is escaped, and so is a run of backslashes before a quote or the closing quote)."""
    escaped = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, text)
    return "'" + escaped.replace("'", "\\'") + "'"


def _parse_override(key: str, value: str):
    """Hydra's parse of `key=value`; ConfigError naming the key, and how to quote, if it fails."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_override(f"{key}={value}")
    except Exception as exc:  # Hydra's OverrideParseException / HydraException
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"cannot read the value of config key '{key}' ({value!r}): {reason}. A value with spaces "
                          f"or any of , ( ) [ ] {{ }} = ' \" must be quoted for Hydra: {key}={hydra_quote(value)} "
                          f"(in a shell, quote the whole argument: \"{key}={hydra_quote(value)}\")") from None


def _quote_path_value(key: str, value: str) -> str:
    """`value` of path key `key`, quoted when Hydra would not read it as one plain string."""
    if key not in PATH_KEYS or value.strip()[:1] in ("'", '"'):
        return value
    try:
        override = _parse_override(key, value)
        if not override.is_sweep_override():  # "a,b" would be a sweep over two paths
            return value
    except ConfigError:
        pass
    quoted = hydra_quote(value)
    if _parse_override(key, quoted).value() != value:  # pragma: no cover - hydra_quote round-trips
        raise ConfigError(f"config key '{key}': cannot quote {value!r} for Hydra; rename the path")
    return quoted


def parse_override_value(key: str, value: str):
    """The value Hydra reads from `key=value` on a command line (a path quoted as compose_config
    quotes it); ConfigError if it cannot be read."""
    return _parse_override(key, _quote_path_value(key, value)).value()


def check_interpolations(cfg: DictConfig) -> None:
    """ConfigError naming the key whose `${...}` cannot be resolved (an unset environment
    variable in `${oc.env:NAME}`, a missing key), instead of OmegaConf's traceback wherever the
    key is first read."""
    from omegaconf.errors import OmegaConfBaseException

    try:
        OmegaConf.to_container(cfg, resolve=True)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "full_key", None) or "?"
        raw = saved_value(OmegaConf.to_container(cfg, resolve=False), key) if key != "?" else None
        reason = str(exc).strip().splitlines()[0]
        raise ConfigError(f"config key '{key}': cannot resolve {raw!r}: {reason}; set what it refers to (e.g. "
                          "export the environment variable) or give the value itself") from None


def _split_override(override: str) -> tuple[str, str]:
    if "=" not in override:
        raise ConfigError(f"override '{override}' is not of the form key=value (a value with spaces that the shell "
                          "split? quote the whole argument: \"key='my value'\")")
    key, value = override.split("=", 1)
    key = key.strip()
    if key.startswith(("+", "~")):
        raise ConfigError(f"override '{override}': adding or deleting keys is not allowed; use an existing key")
    return key, value


def _flat_keys(node, prefix: str = "") -> list[str]:
    keys = []
    if isinstance(node, DictConfig):
        for k in node.keys():
            path = f"{prefix}{k}"
            keys.append(path)
            keys.extend(_flat_keys(node._get_node(k), path + "."))
    return keys


def _check_key(key: str, cfg: DictConfig) -> None:
    parts = key.split(".")
    node = cfg
    for depth, part in enumerate(parts):
        if not isinstance(node, DictConfig) or part not in node:
            where = ".".join(parts[:depth]) or "the top level"
            valid = sorted(node.keys()) if isinstance(node, DictConfig) else []
            raise ConfigError(f"unknown config key '{key}': '{part}' is not a key of {where}{did_you_mean(part, valid)}; "
                              f"valid keys there: {', '.join(map(str, valid))}")
        node = node._get_node(part)


def compose_config(overrides: list[str] | tuple[str, ...] = (), cfg_dir: Path = CFG_DIR) -> DictConfig:
    """Compose cfg/config.yaml with `overrides`, validate, and resolve `auto` values."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    pairs = [_split_override(o) for o in overrides]
    pairs = [(key, _quote_path_value(key, value)) for key, value in pairs]
    for key, value in pairs:
        if key not in CONFIG_GROUPS:
            _parse_override(key, value)  # a parse error names the key and says how to quote
    group_overrides = {k: v for k, v in pairs if k in CONFIG_GROUPS}
    for group, choice in group_overrides.items():
        valid = group_choices(group, cfg_dir)
        if choice not in valid:
            raise ConfigError(f"unknown {group} '{choice}'{did_you_mean(choice, valid)}; valid choices: {', '.join(valid)}")

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(cfg_dir), version_base=None):
        base = compose(config_name="config", overrides=[f"{k}={v}" for k, v in group_overrides.items()])
        if "train" not in group_overrides:
            # Each task names the algorithm it trains with by default (ASE for HumanoidASE, ...).
            default_train = base.task.get("default_train")
            if default_train:
                group_overrides["train"] = default_train
                base = compose(config_name="config", overrides=[f"{k}={v}" for k, v in group_overrides.items()])
        for key, _ in pairs:
            if key not in CONFIG_GROUPS:
                _check_key(key, base)
        try:
            cfg = compose(config_name="config", overrides=[f"{k}={v}" for k, v in pairs if k not in CONFIG_GROUPS]
                          + [f"{k}={v}" for k, v in group_overrides.items()])
        except Exception as exc:  # Hydra/OmegaConf type errors
            raise ConfigError(f"invalid override: {exc}") from exc
    GlobalHydra.instance().clear()
    OmegaConf.set_struct(cfg, False)
    check_interpolations(cfg)
    check_hierarchical_task(cfg)
    resolve_auto(cfg)
    apply_profile(cfg, explicit_keys={k for k, _ in pairs}, cfg_dir=cfg_dir)
    check_machine_limits(cfg)  # after the profile: it sets the AMP buffer sizes
    OmegaConf.set_struct(cfg, True)
    return cfg


def check_hierarchical_task(cfg: DictConfig) -> None:
    """train=hrl needs a task with a goal (envs/tasks/): on HumanoidAMP it would otherwise fail
    later asking for an llc_checkpoint, which is not what is wrong."""
    if cfg.train.algo != "hrl":
        return
    from ase_humanoid.envs import env_class, task_names
    from ase_humanoid.envs.tasks.common import HumanoidTask

    if issubclass(env_class(cfg.task.name), HumanoidTask):
        return
    hierarchical = [name for name in task_names() if issubclass(env_class(name), HumanoidTask)]
    own = cfg.task.get("default_train")
    raise ConfigError(f"train=hrl: task {cfg.task.name} is not hierarchical (it has no task goal for a high-level "
                      f"policy); hierarchical tasks: {', '.join(hierarchical)}"
                      + (f"; {cfg.task.name} trains with train={own}" if own else ""))


def profile_overrides(profile: str, algo: str, cfg_dir: Path = CFG_DIR) -> dict:
    """The keys `profile` sets for `algo` (dotted command-line keys -> values), from
    cfg/profiles/<profile>.yaml (paper: only the release's run length, its other values are the
    train and task configs' own)."""
    table = OmegaConf.to_container(OmegaConf.load(cfg_dir / "profiles" / f"{profile}.yaml"))
    return dict(table.get(algo) or {})


def apply_profile(cfg: DictConfig, explicit_keys: set[str], cfg_dir: Path = CFG_DIR) -> dict:
    """Resolve `cfg.profile` (auto: cpu on the CPU backend, else paper) and set the profile's
    keys for the run's algorithm, except those given on the command line. Returns what it set."""
    if cfg.profile not in PROFILES:
        raise ConfigError(f"config key 'profile': '{cfg.profile}' is not one of {', '.join(PROFILES)}")
    if cfg.profile == "auto":
        cfg.profile = "cpu" if cfg.sim.name == "mujoco" else "paper"
    applied = {}
    for key, value in profile_overrides(cfg.profile, cfg.train.algo, cfg_dir).items():
        _check_key(key, cfg)
        if key not in explicit_keys:
            OmegaConf.update(cfg, key, value, merge=False)
            applied[key] = value
    return applied


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def torch_default_threads() -> int:
    import torch

    return torch.get_num_threads()


def _warp_installed() -> bool:
    try:
        import mujoco_warp  # noqa: F401
        import warp  # noqa: F401
    except Exception:
        return False
    return True


def _cuda_device_count() -> int:
    import torch

    return torch.cuda.device_count()


def check_device(device: str) -> None:
    """ConfigError unless `device` is cpu, or cuda / cuda:N with that GPU present."""
    match = re.fullmatch(r"cuda(?::(\d+))?", device)
    if device == "cpu":
        return
    if match is None:
        raise ConfigError(f"config key 'device': '{device}' is not one of auto, cpu, cuda, cuda:N")
    count = _cuda_device_count() if _cuda_available() else 0
    if count == 0:
        raise ConfigError(f"config key 'device': '{device}' but torch sees no CUDA GPU here; use device=cpu "
                          "(or device=auto)")
    index = int(match.group(1) or 0)
    if index >= count:
        raise ConfigError(f"config key 'device': '{device}' but there are {count} CUDA GPU(s): cuda:0..cuda:{count - 1}")


def _require_int(cfg: DictConfig, key: str, minimum: int, zero_means: str = "", maximum: int | None = None) -> None:
    value = cfg[key]
    if (not isinstance(value, int) or isinstance(value, bool) or value < minimum
            or (maximum is not None and value > maximum)):
        meaning = f" (0: {zero_means})" if zero_means else ""
        allowed = f">= {minimum}" + (f" and <= {maximum}" if maximum is not None else "")
        raise ConfigError(f"config key '{key}' must be an integer {allowed}{meaning}, got {value!r}")


# Bounds on counts: a typo such as num_threads=100000 must be an error, not 100000 threads (fork()
# then failed machine-wide) or an allocation that drives the machine out of memory.
THREADS_PER_CPU = 4            # more threads than this per core only slow a run down
MAX_TEST_EPISODES = 1_000_000
# Least memory one item can take; a count whose items cannot all fit in the machine's memory is
# refused. An env with its rollout storage: >= 32 KiB (HumanoidAMP on CPU measured 73 KB). An
# AMP sample: >= 64 float32 per observation step (105 for amp_humanoid). A reset/fall pool
# state: >= 512 bytes (amp_humanoid's qpos + qvel are 69 float64).
ENV_BYTES = 32 * 1024
AMP_STEP_BYTES = 64 * 4
POOL_STATE_BYTES = 512
MEMORY_BOUNDED_KEYS = {
    "num_envs": ("envs", ENV_BYTES),
    "quality_envs": ("envs", ENV_BYTES),
    "train.params.amp_obs_demo_buffer_size": ("AMP samples", AMP_STEP_BYTES),  # x num_amp_obs_steps
    "train.params.amp_replay_buffer_size": ("AMP samples", AMP_STEP_BYTES),
    "task.env.reset_pool_size": ("pooled states", POOL_STATE_BYTES),
    "task.env.fall_pool_size": ("pooled states", POOL_STATE_BYTES),
}


def machine_memory_bytes() -> int:
    """Physical memory of this machine; 1 TiB where the OS does not say (no os.sysconf)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 2**40


def check_machine_limits(cfg: DictConfig) -> None:
    """ConfigError for a thread count above THREADS_PER_CPU x the cores, or a count of envs,
    samples or states whose least memory (MEMORY_BOUNDED_KEYS) exceeds the machine's."""
    cpus = available_cores()
    for key in ("num_threads", "torch_threads", "update_threads"):
        if cfg[key] > THREADS_PER_CPU * cpus:  # an integer >= 1 here (resolve_auto)
            raise ConfigError(f"config key '{key}' is {cfg[key]}: at most {THREADS_PER_CPU * cpus} threads "
                              f"({THREADS_PER_CPU} per CPU core, {cpus} cores here); more only slow the run "
                              "and can exhaust the machine's processes")
    memory = machine_memory_bytes()
    amp_steps = OmegaConf.select(cfg, "task.env.num_amp_obs_steps", default=1)
    amp_steps = amp_steps if isinstance(amp_steps, int) and amp_steps > 0 else 1
    for key, (what, item_bytes) in MEMORY_BOUNDED_KEYS.items():
        value = OmegaConf.select(cfg, key, default=None)
        if not isinstance(value, int) or isinstance(value, bool):
            continue  # absent for this task/algorithm, null, or a type error reported where it is used
        item_bytes *= amp_steps if what == "AMP samples" else 1
        check_fits_memory(f"config key '{key}'", value, what, item_bytes, memory)


def check_fits_memory(where: str, count: int, what: str, item_bytes: int, memory: int | None = None) -> None:
    """ConfigError naming `where` (a config key, a tool's option) when `count` items of at least
    `item_bytes` each cannot fit in the machine's memory: the run would be killed for memory
    after minutes of setup instead of stopping at once."""
    memory = machine_memory_bytes() if memory is None else memory
    if count * item_bytes > memory:
        raise ConfigError(f"{where}: {count:,} {what} need at least {count * item_bytes / 1e9:,.1f} GB "
                          f"({item_bytes:,} bytes each) but this machine has {memory / 1e9:,.1f} GB of memory; "
                          f"give at most {memory // item_bytes:,}")


def check_run_keys(cfg: DictConfig) -> None:
    """Cadences and counts that must be positive (0 or less would be silently ignored), and a
    run_dir that names a folder."""
    if isinstance(cfg.run_dir, str) and not cfg.run_dir.strip():
        # Path("") is the current folder: the run's files would land wherever train.py was started.
        raise ConfigError(f"config key 'run_dir' is empty ({cfg.run_dir!r}); give a folder path, or null for "
                          "runs/<task>_<date>_<time>")
    _require_int(cfg, "checkpoint_every", 1)
    _require_int(cfg, "test_episodes", 1, maximum=MAX_TEST_EPISODES)
    _require_int(cfg, "save_every", 0, "no numbered snapshots")
    _require_int(cfg, "quality_every", 0, "no motion-quality measurement")
    _require_int(cfg, "quality_envs", 0)
    if not isinstance(cfg.adapt_update_threads, bool):
        raise ConfigError(f"config key 'adapt_update_threads' must be true or false, got {cfg.adapt_update_threads!r}")
    seconds = cfg.video_seconds
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
        raise ConfigError(f"config key 'video_seconds' must be a positive number, got {seconds!r}")


def resolve_auto(cfg: DictConfig) -> None:
    """Fill `auto` values: GPU + MuJoCo Warp -> mujoco_warp with 4096 envs, else CPU MuJoCo."""
    gpu = _cuda_available()
    if cfg.device == "auto":
        cfg.device = "cuda" if gpu else "cpu"
    check_device(str(cfg.device))
    check_run_keys(cfg)
    if cfg.sim.name == "auto":
        cfg.sim.name = "mujoco_warp" if (str(cfg.device).startswith("cuda") and _warp_installed()) else "mujoco"
    if cfg.num_threads == "auto":
        cfg.num_threads = available_cores()
    if cfg.torch_threads == "auto":
        # On CPU the physics threads and torch alternate; on small machines two torch threads
        # fighting the MuJoCo pool (or anything else) are several times slower than one.
        cfg.torch_threads = max(1, available_cores() // 2) if str(cfg.device) == "cpu" else torch_default_threads()
    if cfg.update_threads == "auto":
        # The physics threads are idle during the update, so it gets every core: on 2 cores the
        # CPU profile's update measured 0.3 s with 2 threads against 0.6 s with 1.
        cfg.update_threads = available_cores() if str(cfg.device) == "cpu" else cfg.torch_threads
    if cfg.num_envs == "auto":
        if cfg.sim.name == "mujoco_warp" and str(cfg.device).startswith("cuda"):
            cfg.num_envs = 4096
        else:
            # About 64 worlds per core keeps the C threads busy without starving the update.
            cfg.num_envs = int(min(512, 64 * available_cores()))
    for key in ("num_envs", "num_threads", "torch_threads", "update_threads", "seed", "max_epochs"):
        value = cfg[key]
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"config key '{key}' must be an integer, got {value!r}")
        if key != "seed" and value <= 0:
            raise ConfigError(f"config key '{key}' must be positive, got {value}")
    check_seed(cfg.seed)  # the range train.py, the gymnasium entry and reset(seed=...) share
