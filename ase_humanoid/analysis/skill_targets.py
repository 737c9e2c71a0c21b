"""When is an ASE controller usable for the hierarchical tasks? The targets of a skill report
(`analysis.skill_report.build_report`) and the verdict, never advice."""

from __future__ import annotations


USABLE_TARGETS = {"fall_rate": 0.10, "key_body_error_cm": 10.0, "clip_coverage": 8, "getup_success_rate": 0.70}
"""What makes a controller usable for the hierarchical tasks (issue 54): at most this fall rate
and key-body distance (cm), at least this many clips covered (all of them, in a dataset of
fewer), a latent for each kind of skill in `SKILL_KINDS` the dataset holds, and at least this
getup success."""
# Kinds of skill a usable controller covers, by words in the clips' names; a kind the dataset
# has no clip of is not asked for.
SKILL_KINDS = {"run": ("run", "jog"), "turn": ("turn", "veer"), "strike": ("punch", "kick", "boxing", "sword")}
LOCOMOTION_WORDS = ("walk", "run", "jog")


def covered_and_locomotion_clips(report: dict) -> tuple[set[str], list[str]]:
    """The clips that are some latent's skill, and the dataset's locomotion clips."""
    covered = {name for name, count in report["clip_counts"].items() if count > 0}
    locomotion = [name for name in report["clip_counts"] if any(w in name for w in LOCOMOTION_WORDS)]
    return covered, locomotion


def skill_kinds_covered(report: dict) -> dict[str, bool]:
    """{kind: some latent's skill is a clip of that kind}, for the kinds of SKILL_KINDS the
    dataset holds."""
    covered = {name for name, count in report["clip_counts"].items() if count > 0}
    kinds = {}
    for kind, words in SKILL_KINDS.items():
        of_kind = [name for name in report["clip_counts"] if any(w in name for w in words)]
        if of_kind:
            kinds[kind] = any(name in covered for name in of_kind)
    return kinds


def coverage_target(report: dict) -> int:
    return min(USABLE_TARGETS["clip_coverage"], len(report["clip_counts"]))


def usability(report: dict) -> dict[str, bool]:
    """Which of `USABLE_TARGETS` (and the skill kinds) `report` meets."""
    t = USABLE_TARGETS
    error, getup = report["key_body_error_cm"], report["getup"]["success_rate"]
    kinds = skill_kinds_covered(report)
    return {
        "fall_rate": report["fall_rate"] <= t["fall_rate"],
        "key_body_error_cm": error is not None and error <= t["key_body_error_cm"],
        "clip_coverage": report["clip_coverage"] >= coverage_target(report),
        "skill_kinds": bool(kinds) and all(kinds.values()),
        "getup_success_rate": getup is not None and getup >= t["getup_success_rate"],
    }


def format_usability(report: dict) -> str:
    """One line per target: measured, target, met or not; then the verdict (never advice)."""
    met, t = usability(report), USABLE_TARGETS
    getup = report["getup"]["success_rate"]
    error = report["key_body_error_cm"]
    kinds = skill_kinds_covered(report)
    rows = [
        ("fall rate", f"{report['fall_rate']:.2f} (target <= {t['fall_rate']:.2f})", met["fall_rate"]),
        ("key-body distance", f"{error:.1f} cm (target <= {t['key_body_error_cm']:.0f} cm)" if error is not None
         else "not measured", met["key_body_error_cm"]),
        ("clips covered", f"{report['clip_coverage']} of {len(report['clip_counts'])} (target >= "
                          f"{coverage_target(report)})", met["clip_coverage"]),
        ("kinds of skill", ", ".join(f"{kind} {'yes' if ok else 'no'}" for kind, ok in kinds.items())
         or "none in the dataset", met["skill_kinds"]),
        ("getup in 3 s", f"{getup:.2f} (target >= {t['getup_success_rate']:.2f})" if getup is not None
         else "not measured",
         met["getup_success_rate"]),
    ]
    lines = ["usable controller? (the targets of docs/research-notes.md, ASE pre-training)"]
    lines += [f"  {name}: {value}: {'met' if ok else 'NOT met'}" for name, value, ok in rows]
    lines.append("  verdict: usable for the hierarchical tasks" if all(met.values()) else
                 f"  verdict: not yet ({sum(not ok for ok in met.values())} of {len(met)} targets missed)")
    return "\n".join(lines)


def is_usable(report: dict) -> bool:
    return all(usability(report).values())
