"""``parallint show``: each job as YAML in the normalized job-spec shape, every value annotated with
where it came from. The output is itself a valid job-spec file (the annotations are comments)."""

from __future__ import annotations

import json
from typing import Iterable

from parallint.facts import Value

SECTIONS = ("model", "parallel", "training", "hardware")


def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    s = str(v)
    return json.dumps(s) if (not s or any(c in s for c in ":#{}[],&*!|>'\"%@`") or s.strip() != s
                             or s.lower() in ("yes", "no", "true", "false", "null", "on", "off", "~")
                             or s[0].isdigit()) else s


def _where(v: Value) -> str:
    loc = f"{v.span.path}:{v.span.line}" if v.span else "?"
    return f"{loc} {v.source}".strip()


def _value_line(key: str, values: list[Value]) -> str:
    known = [v for v in values if v.known]
    if known:
        first = known[0]
        note = _where(first)
        others = [v for v in known[1:] if v.value != first.value]
        if others:
            note += "; also " + "; ".join(f"{_scalar(o.value)} at {_where(o)}" for o in others)
        return f"  {key}: {_scalar(first.value)}  # {note}"
    u = values[0]
    return f"  {key}: null  # unknown: {u.why or 'not resolved'} ({_where(u)})"


def render_job(job) -> str:
    lines = [f"# job: {job.name}"]
    if job.launch is not None:
        lines.append(f"# launcher: {job.launch.launcher}")
    lines.append("# files: " + ", ".join(f.path for f in job.files))
    fw = job.facts.all("framework")
    if fw:
        lines.append(_value_line("framework", fw).strip())
    for section in SECTIONS:
        keys = sorted(k for k in job.facts.keys() if k.startswith(section + "."))
        if not keys:
            continue
        lines.append(f"{section}:")
        for k in keys:
            lines.append(_value_line(k.split(".", 1)[1], job.facts.all(k)))
    ws = job.world_size()
    if ws is not None and "parallel.world_size" not in job.facts.keys():
        lines.append(f"# world size: {ws.value} ({ws.source})")
    return "\n".join(lines) + "\n"


def render_jobs(jobs: Iterable) -> str:
    docs = [render_job(j) for j in jobs]
    if not docs:
        return "# no jobs: none of the files is a training script, launch file or config parallint reads\n"
    return "---\n".join(docs)
