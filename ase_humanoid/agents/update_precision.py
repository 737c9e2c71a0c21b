"""The precision the PPO update's hidden layers run in (config `update_precision`): bfloat16
where this CPU has bfloat16 matrix instructions, float32 elsewhere; and whether Adam's fused
kernel runs on the device."""

from __future__ import annotations

import torch


def fused_adam_runs_on(device_type: str) -> bool:
    """Whether this torch has Adam's fused kernel for `device_type` (CPU: torch >= 2.4)."""
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    except ImportError:
        return False
    return device_type in _get_fused_kernels_supported_devices()


def cpu_bfloat16_matmul() -> str | None:
    """This CPU's bfloat16 matrix instructions, if it has any: "AMX" (tiles; Intel Xeon 4th
    generation and later) or "AVX512-BF16" (dot products; AMD Zen 4 and later, some Intel Xeons).
    Matrix products run in bfloat16 about 2x (AVX512-BF16) to several times (AMX) faster than in
    float32 there, and at float32's speed or slower elsewhere. None: neither."""
    for name, check in (("AMX", "_is_amx_tile_supported"), ("AVX512-BF16", "_is_avx512_bf16_supported")):
        supported = getattr(torch.cpu, check, None)
        if supported is not None and supported():
            return name
    return None


def update_autocast_dtype(precision: str, device: torch.device) -> torch.dtype | None:
    """The dtype the update's hidden layers run in for config `update_precision`; None: float32."""
    if precision == "bfloat16" or (precision == "auto" and device.type == "cpu" and cpu_bfloat16_matmul()):
        return torch.bfloat16
    return None
