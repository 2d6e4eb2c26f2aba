"""LCH021 processes-exceed-slots: horovodrun or mpirun asks for more processes (-np) than the hosts, the hostfile or the MPIJob offer slots"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Severity
from parallint.model.launches import LAUNCH_FILE_KINDS, launches, related_at
from parallint.model.rule import Example, Rule
from parallint.rules.lch._common import _int_text


def _host_slots(text: str) -> list[tuple[str, int]] | None:
    """``node1:8,node2:8`` as (host, slots) pairs (a host without ``:N`` has one slot); None when a
    part is not of that shape."""
    out = []
    for part in text.strip().strip("'\"").split(","):
        host, _, slots = part.strip().partition(":")
        if not host or (slots and (not slots.isdigit() or len(slots) > 6)):
            return None
        out.append((host, int(slots) if slots else 1))
    return out or None


def _chain(la):
    while la is not None:
        yield la
        la = la.wrapper


def _mpijob(slots: int, np: int) -> str:
    """Kubeflow's MPIJob recipe (two workers, ``slotsPerWorker`` each) whose launcher runs ``mpirun -np``."""
    return f"""apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: tensorflow-mnist
spec:
  slotsPerWorker: {slots}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: horovod/horovod:0.28.1
            name: mpi-launcher
            command: ["mpirun", "-np", "{np}", "-bind-to", "none", "python", "tensorflow_mnist.py"]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: horovod/horovod:0.28.1
            name: mpi-worker
"""


class ProcessesExceedSlots(Rule):
    code = "LCH021"
    name = "processes-exceed-slots"
    severity = Severity.ERROR
    summary = "horovodrun or mpirun asks for more processes (-np) than the hosts, the hostfile or the MPIJob offer slots"
    kinds = LAUNCH_FILE_KINDS
    facts = frozenset({"parallel.nodes"})
    doc = """
    ## What it does
    Adds up the slots a Horovod or MPI launch can place processes in and compares them with its
    `-np`: `horovodrun -H host:slots,...` (a host without `:N` has one slot), a `--hostfile`
    in the repository whose every line says `slots=N`, and, for `mpirun` (or `horovodrun`
    without hosts) in the Launcher of a Kubeflow MPIJob, `Worker.replicas × slotsPerWorker`
    (the hostfile the operator writes; `slotsPerWorker` defaults to 1). Silent with
    `--oversubscribe`, and when a count is not a literal.

    ## Why it matters
    Neither launcher starts more processes than slots: horovodrun stops before starting
    anything ("not enough slots"), and Open MPI's mpirun refuses with "There are not enough slots
    available in the system". In an MPIJob the job fails after the worker pods were scheduled
    and their GPUs allocated.

    ## Example

    ## How to fix
    Lower `-np` to the slots, add hosts, or raise `slotsPerWorker` / the Worker replicas of the
    MPIJob so that replicas × slots covers `-np`.
    """
    valid = [
        Example("horovodrun -np 16 -H server1:4,server2:4,server3:4,server4:4 python train.py\n", filename="run.sh"),
        Example(files={
            "run.sh": "horovodrun -np 8 --hostfile myhostfile python train.py\n",
            "myhostfile": "server1 slots=4\nserver2 slots=4\n",
        }),
        Example(_mpijob(slots=1, np=2), filename="mpijob.yaml"),
    ]
    invalid = [
        Example("horovodrun -np 32 -H node1:8,node2:8 python train.py\n", filename="run.sh", line=1),
        Example(files={
            "run.sh": "horovodrun -np 16 --hostfile myhostfile python train.py\n",
            "myhostfile": "server1 slots=4\nserver2 slots=4\n",
        }, line=1),
        Example(_mpijob(slots=4, np=16), filename="mpijob.yaml", line=15),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for la in launches(f):
            for w in _chain(la):
                if id(w) in seen or w.launcher not in ("horovodrun", "mpirun"):
                    continue
                seen.add(id(w))
                yield from self._check(w)

    def _check(self, w) -> Iterable[Diagnostic]:
        o = w.options
        if "opaque" in o or any(k in o for k in ("oversubscribe", "use_hwthread_cpus", "host_discovery_script",
                                                "min_np", "max_np")):
            return
        npv = next((o[k] for k in ("np", "num_proc", "n", "c") if k in o), None)
        np_ = _int_text(npv)
        if np_ is None or npv is None:
            return
        who = f"{w.launcher} -np {np_}"
        hosts = next((o[k] for k in ("H", "hosts", "host") if k in o), None)
        if hosts is not None:
            if not hosts.known or not isinstance(hosts.value, str):
                return
            pairs = _host_slots(hosts.value)
            if w.launcher == "mpirun" and pairs is not None and all(":" not in h for h in hosts.value.split(",")):
                return  # mpirun -H a,b: Open MPI counts slots by its own rules (cores, hostfile)
            if pairs is None:
                return
            total = sum(n for _, n in pairs)
            if np_ > total:
                shown = ", ".join(f"{h}:{n}" for h, n in pairs[:6]) + (", ..." if len(pairs) > 6 else "")
                yield self.report(
                    npv.span or w.span,
                    f"{who} but -H offers {total} slots ({shown}): {w.launcher} refuses to start with more "
                    f"processes than slots; lower -np to {total} or add hosts",
                    related=related_at(hosts, "-H"),
                )
            return
        if "hostfile" in o or "machinefile" in o:
            hf = w.hostfile
            if not hf or any(slots is None for _no, _text, _host, slots in hf):
                return
            total = sum(slots for _no, _text, _host, slots in hf if slots is not None)
            if np_ > total:
                yield self.report(
                    npv.span or w.span,
                    f"{who} but the hostfile offers {total} slots on {len(hf)} hosts: {w.launcher} refuses to "
                    f"start with more processes than slots; lower -np to {total} or add hosts",
                    related=related_at(o["hostfile"], "--hostfile"),
                )
            return
        job = next((x for x in _chain(w.wrapper) if x.launcher == "mpijob"), None)
        if job is None or w.launcher != "mpirun":
            return
        nodes = job.facts.get("parallel.nodes")
        workers = _int_text(nodes)
        spw_v = job.options.get("slots_per_worker")
        spw = 1 if spw_v is None else _int_text(spw_v)
        if workers is None or spw is None or nodes is None:
            return
        total = workers * spw
        if np_ > total:
            spw_text = f"slotsPerWorker {spw}" if spw_v is not None else "slotsPerWorker 1 (its default)"
            yield self.report(
                npv.span or w.span,
                f"{who} but the MPIJob offers {total} slots (Worker.replicas {workers} × {spw_text}): mpirun "
                f"refuses to start with more processes than slots; lower -np to {total} or raise "
                "slotsPerWorker or the Worker replicas",
                related=related_at(nodes, "Worker.replicas") + (related_at(spw_v, "slotsPerWorker") if spw_v is not None else ()),
            )
