"""``parallint show``: each job as YAML in the normalized job-spec shape, every value annotated with
where it came from. The output is itself a valid job-spec file (``schemas/job.schema.json``; the
annotations are comments), and ``parallint estimate`` on it gives the numbers it gives on the job's
files: the fields are those the estimator uses (``parallint.estimator.spec.spec_fields``), derived
ones included with how they were derived. Facts that are not job-spec fields (processes per node,
HSDP degrees...) are shown as comments."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Iterable

from parallint.model.facts import Value
from parallint.model import vocab

SECTIONS = vocab.SECTIONS


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


@lru_cache(maxsize=None)
def _validator(key: str):
    import jsonschema

    from parallint.estimator.spec import _schema_text

    schema = json.loads(_schema_text())
    section, _, name = key.rpartition(".")
    prop = schema["properties"][section]["properties"][name] if section else schema["properties"][name]
    return jsonschema.Draft202012Validator(prop)


def _schema_ok(key: str, value) -> bool:
    """Whether ``value`` is allowed for job-spec field ``key`` by schemas/job.schema.json."""
    return bool(_validator(key).is_valid(value))


def _spec_line(key: str, value, values: list[Value], note: str | None, indent: str = "  ") -> str:
    """One job-spec field: the value, and where it came from (or how it was derived)."""
    name = key.rsplit(".", 1)[-1]
    if not _schema_ok(key, value):
        where = _where(values[0]) if values else note
        return f"{indent}# {name}: {_scalar(value)}  # not a job-spec value ({where})"
    if note is not None:
        return f"{indent}{name}: {_scalar(value)}  # {note}"
    line = _value_line(name, values)
    return line if indent else line.strip()


def render_job(job, config: dict | None = None) -> str:
    from parallint.estimator.spec import spec_fields

    lines = [f"# job: {job.name}"]
    if job.launch is not None:
        lines.append(f"# launcher: {job.launch.launcher}")
    lines.append("# files: " + ", ".join(f.path for f in job.files))
    notes: dict[str, str] = {}
    spec = spec_fields(job.facts, config, notes)
    if "framework" in spec:
        lines.append(_spec_line("framework", spec["framework"], job.facts.known("framework"), None, ""))
    for section in SECTIONS:
        fields = spec.get(section) or {}
        keys = sorted({k for k in job.facts.keys() if k.startswith(section + ".")}
                      | {f"{section}.{k}" for k in fields})
        body = []
        for key in keys:
            name = key.split(".", 1)[1]
            fact = vocab.BY_KEY.get(key)
            values = job.facts.all(key)
            if name in fields:
                body.append(_spec_line(key, fields[name], values, notes.get(key)))
            elif fact is not None and fact.spec:  # stated, but unknown or dropped
                if key in notes:
                    body.append(f"  # {name}: {_scalar(values[0].value)}  # {notes[key]}")
                elif not any(v.known for v in values):
                    body.append(_value_line(name, values))
                else:  # known as null
                    body.append("  # " + _value_line(name, values).strip())
            else:  # a fact that is not a job-spec field: for the reader, not for `estimate`
                body.append("  # " + _value_line(name, values).strip() + "  (not a job-spec field)")
        if body or section == "model":
            empty = all(b.lstrip().startswith("#") for b in body)
            lines.append(f"{section}:" + (" {}" if empty else ""))
            lines.extend(body)
    for key in sorted(k for k in job.facts.keys() if k != "framework" and k.split(".", 1)[0] not in SECTIONS):
        lines.append("# " + _value_line(key, job.facts.all(key)).strip() + "  (not a job-spec field)")
    ws = job.world_size()
    if ws is not None and "parallel.world_size" not in job.facts.keys():
        lines.append(f"# world size: {ws.value} ({ws.source})")
    return "\n".join(lines) + "\n"


def render_jobs(jobs: Iterable, config: dict | None = None) -> str:
    docs = [render_job(j, config) for j in jobs]
    if not docs:
        return "# no jobs: none of the files is a training script, launch file or config parallint reads\n"
    return "---\n".join(docs)
