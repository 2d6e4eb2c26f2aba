"""LCH018 deepspeed-resource-filter: a deepspeed command whose --include/--exclude, --num_gpus or
hostfile the DeepSpeed launcher refuses before starting anything."""

from __future__ import annotations

import re
from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS, launches, related_at
from parallint.model.rule import Example, Rule

_COUNTS = ("num_gpus", "num_nodes")


def _node_specs(text: str):
    """(host, [slots] or None, problem) per NODE_SPEC of an --include/--exclude string, as
    deepspeed.launcher.runner.parse_resource_filter splits it."""
    for spec in text.split("@"):
        if ":" in spec:
            host, _, slots = spec.partition(":")
            if ":" in slots:
                yield host, None, f"{spec!r} has more than one ':'"
                continue
            out = []
            for s in slots.split(","):
                if not re.fullmatch(r"\s*[+-]?\d+\s*", s):
                    yield host, None, f"slot {s!r} of {spec!r} is not a number (slots are listed one by one: 0,1,2)"
                    break
                out.append(int(s))
            else:
                yield host, out, None
        else:
            yield spec, None, None


class DeepspeedResourceFilter(Rule):
    code = "LCH018"
    name = "deepspeed-resource-filter"
    severity = Severity.ERROR
    summary = "A deepspeed command whose --include/--exclude, --num_gpus/--num_nodes or hostfile the launcher refuses."
    kinds = LAUNCH_FILE_KINDS
    doc = """
    ## What it does
    Checks a `deepspeed` command's resource selection as DeepSpeed's launcher
    (`deepspeed.launcher.runner`) checks it before it starts a single process, and reports what it
    refuses:
    - `--include` (or `-i`) together with `--exclude` (`-e`);
    - `--num_gpus` or `--num_nodes` together with `--include` or `--exclude`;
    - a slot list that is not a list of numbers (`localhost:0-3`);
    - with a `--hostfile` that is in the repository: a line other than `NAME slots=N` (DeepSpeed
      wants exactly that, with no spaces around `=`), a host listed twice, a host of
      `--include`/`--exclude` the hostfile does not list, and a slot that host does not have.

    Values that are not literal (`--include localhost:$GPUS`) are not checked, and without a
    `--hostfile` the hosts are not checked (DeepSpeed then reads `/job/hostfile` if the machine has
    one, or uses the local GPUs).

    ## Why it matters
    Each of these raises `ValueError` in the launcher ("include_str and exclude_str are mutually
    exclusive", "Cannot specify num_nodes/gpus with include/exclude", "Hostname 'x' not found in
    hostfile", "No slot '4' specified on host 'x'", "Hostfile contains a bad entry"), so the job
    ends at once on the allocation it was given, and a batch queue may have waited hours for it.

    ## Example

    ## How to fix
    Select the GPUs one way only: either `--num_nodes`/`--num_gpus`, or `--include`/`--exclude`;
    name hosts and slots the hostfile lists (slots count from 0), and write each hostfile line as
    `NAME slots=N`.
    """
    valid = (
        Example("""
        #!/bin/bash
        deepspeed --include localhost:0,1,2,3 train.py --deepspeed ds.json
        """, filename="run.sh"),
        Example("""
        #!/bin/bash
        deepspeed --hostfile hostfile --include worker-1:0,1@worker-2 train.py
        """, filename="run.sh", files={"hostfile": "worker-1 slots=4\nworker-2 slots=4\n"}),
        Example("""
        #!/bin/bash
        deepspeed --hostfile hostfile --num_nodes 2 --num_gpus 8 train.py
        """, filename="run.sh", files={"hostfile": "# two nodes\nnode-a slots=8\nnode-b slots=8\n"}),
    )
    invalid = (
        Example("""
        #!/bin/bash
        deepspeed --num_gpus 2 --include localhost:0,1 train.py --deepspeed ds.json
        """, filename="run.sh", line=2, doc=True),
        Example("""
        #!/bin/bash
        deepspeed --include localhost:0,1 --exclude localhost:1 train.py
        """, filename="run.sh", line=2),
        Example("""
        #!/bin/bash
        deepspeed --hostfile hostfile --include worker-1:0,4@worker-3 train.py
        """, filename="run.sh", line=2, count=2, files={"hostfile": "worker-1 slots=4\nworker-2 slots=4\n"}),
        Example("""
        #!/bin/bash
        deepspeed --hostfile hostfile train.py
        """, filename="run.sh", line=2, count=2,
            files={"hostfile": "worker-1 slots = 8\nworker-2 slots=8\nworker-2 slots=8\n"}),
        Example("""
        #!/bin/bash
        deepspeed --include localhost:0-3 train.py
        """, filename="run.sh", line=2),
    )

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen = set()
        for la in launches(f):
            if la.launcher != "deepspeed" or id(la) in seen:
                continue
            seen.add(id(la))
            yield from self._check(la)

    def _check(self, la) -> Iterable[Diagnostic]:
        # the reader writes -i, -e and -H as include, exclude and hostfile
        inc_name, inc = "include", la.options.get("include")
        exc_name, exc = "exclude", la.options.get("exclude")
        if inc is not None and exc is not None:
            yield self.report(exc.span or la.span,
                              f"--{inc_name} and --{exc_name} together: DeepSpeed's launcher refuses them "
                              f"(include and exclude are mutually exclusive); remove one of them",
                              related=related_at(inc, f"--{inc_name}"))
        chosen = [(n, v) for n, v in ((inc_name, inc), (exc_name, exc)) if v is not None]
        for count in _COUNTS:
            cv = la.options.get(count)
            if cv is None or not chosen:
                continue
            n, v = chosen[0]
            yield self.report(cv.span or la.span,
                              f"--{count} with --{n}: DeepSpeed's launcher refuses the pair (\"Cannot specify "
                              f"num_nodes/gpus with include/exclude\"); drop --{count} and let --{n} choose "
                              f"the GPUs, or drop --{n}",
                              related=related_at(v, f"--{n}"))
        hosts = self._hostfile_hosts(la)
        hf = la.options.get("hostfile")
        if la.hostfile is not None and hf is not None:
            listed: dict[str, int] = {}
            for no, text, host, _slots in la.hostfile:
                if host is None:
                    yield self.report(hf.span or la.span,
                                      f"hostfile {hf.value} line {no} ({text!r}) is not `NAME slots=N`: DeepSpeed's "
                                      f"launcher stops on it (\"Hostfile contains a bad entry\"); change it to "
                                      f"`NAME slots=N`, with no spaces around '='")
                elif host in listed:
                    yield self.report(hf.span or la.span,
                                      f"hostfile {hf.value} lists {host} twice (lines {listed[host]} and {no}): "
                                      f"DeepSpeed's launcher stops on it; list each host once")
                else:
                    listed[host] = no
        for n, v in chosen:
            if not v.known or not isinstance(v.value, str):
                continue
            for host, slots, problem in _node_specs(v.value.strip().strip("'\"")):
                if problem is not None:
                    yield self.report(v.span or la.span,
                                      f"--{n} {v.value}: {problem}; DeepSpeed's launcher cannot read it; list "
                                      f"the slots as numbers separated by commas")
                    continue
                if hosts is None:
                    continue
                if host not in hosts:
                    yield self.report(v.span or la.span,
                                      f"--{n} names host {host!r}, which hostfile {hf.value if hf is not None else ''} does not "
                                      f"list ({', '.join(sorted(hosts)) or 'no host'}): DeepSpeed's launcher stops "
                                      f"(\"Hostname not found in hostfile\"); use a host the hostfile lists",
                                      related=related_at(hf, "--hostfile") if hf is not None else ())
                    continue
                for s in slots or ():
                    if not 0 <= s < hosts[host]:
                        yield self.report(v.span or la.span,
                                          f"--{n} names slot {s} of {host}, which has slots={hosts[host]} "
                                          f"(slots 0 to {hosts[host] - 1}): DeepSpeed's launcher stops (\"No slot "
                                          f"'{s}' specified on host\"); use a slot below {hosts[host]}",
                                          related=related_at(hf, "--hostfile") if hf is not None else ())
                        break

    @staticmethod
    def _hostfile_hosts(la) -> "dict[str, int] | None":
        """host -> slots of a hostfile read whole and clean (None when not read or not clean)."""
        if la.hostfile is None or not la.hostfile:
            return None
        out: dict[str, int] = {}
        for _no, _text, host, slots in la.hostfile:
            if host is None or slots is None or host in out:
                return None
            out[host] = slots
        return out
