"""What the orchestrator readers (SkyPilot tasks, Ray jobs) share: the task's own facts become the
outer launch layer, and the shell text the task runs on every node is evaluated under it."""

from __future__ import annotations

from pathlib import Path

from parallint.model.facts import FactMap, Value
from parallint.model.launch import Launch
from parallint.model.origin import How, Origin
from parallint.util.record import replace


def as_outer_layer(job: Launch) -> None:
    """The task's facts come from an orchestrator that starts the command on every node: the
    outer ("kube") launch layer, so LCH rules compare them with the launcher's own."""
    fm = FactMap()
    for key, vs in job.facts.items():
        for v in vs:
            how = v.origin.how if v.origin.how is not How.LITERAL or "default" not in v.source else How.DEFAULT
            fm.add(key, replace(v, origin=Origin(how, "kube")))
    job.facts = fm


def shell_launches(node, env: dict[str, Value], wrapper: Launch, path: str, abspath: Path) -> list[Launch]:
    """The launches of the shell text in YAML scalar ``node`` (positions kept), each started by
    ``wrapper`` (the innermost launch of a chain gets it as its wrapper)."""
    from parallint.readers import shell

    sp = node.span
    text = node.value
    line_off, col_off = sp.line - 1, sp.column
    if "\n" in text:  # a block scalar starts on the next line
        line_off, col_off = sp.line, 0
    ev = shell.evaluate(text, path, abspath, env=env, line_offset=line_off, col_offset=col_off,
                        scheduler_facts=wrapper.facts)
    out = []
    for la in ev.launches:
        inner = la
        while inner.wrapper is not None:
            inner = inner.wrapper
        if inner is not wrapper:
            inner.wrapper = wrapper
        out.append(la)
    return out
