"""Kubernetes training jobs: Kubeflow PyTorchJob (v1), Kubeflow Trainer TrainJob, MPIJob, TFJob and
Volcano Job. Multi-document YAML through :func:`parallint.readers.yamlpos.load_all`.

Each job becomes a wrapper :class:`Launch` (``pytorchjob`` / ``trainjob`` / ``mpijob`` /
``volcano`` / ``tfjob``) whose facts are what the manifest states: nodes (replicas), processes per node
(``nprocPerNode``, ``numProcPerNode``, ``slotsPerWorker``), GPUs requested per node
(``nvidia.com/gpu``) and the GPU model (``nvidia.com/gpu.product`` node selectors). A TFJob's
replicas (Chief, Worker, PS, Evaluator) are its options ``replicas.<type>`` (TensorFlow processes,
not torch ranks: no ``parallel.*`` fact), each replica type's GPUs ``gpus.<type>``. The container
command is parsed like a shell command line (``sh -c "..."`` scripts through the shell evaluator);
a launcher found there is returned with the job as its ``wrapper``. Environment variables the
operator injects (``MASTER_ADDR``, ``PET_NNODES``, ``WORLD_SIZE`` ...) are unknown.
"""

from __future__ import annotations

import re
from pathlib import Path

from parallint.readers import cmdline
from parallint.readers.cmdline import Word
from parallint.model.diagnostics import Span
from parallint.model.facts import FileFacts, Value
from parallint.model.launch import GpuRequest, Launch
from parallint.model.launches import OPERATOR_ENV  # what the operator sets (the ENV rules read it too)
from parallint.readers.kubepod import (  # noqa: F401 - re-exported for the readers that used them here
    _containers,
    _gpu_from_label,
    _gpu_product,
    _gpu_request,
    _int,
    _main_container,
    _pod_spec,
)
from parallint.readers.shell import syn001
from parallint.util.record import EqRecord

K8S_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


def gpu_resource_pairs(doc) -> list[tuple[str, Value | None, Value | None]]:
    """Every ``resources`` block of a manifest that names a GPU resource: ``(resource, limits value,
    requests value)``, values as integers where they are (iterative walk, linear in the document)."""
    out = []
    stack = [doc]
    while stack:
        node = stack.pop()
        if node.is_map:
            for key, child in node.items():
                if key == "resources" and child.is_map:
                    lim, req = child.get("limits"), child.get("requests")
                    for res in GPU_RESOURCES:
                        ln = lim.get(res) if lim is not None and lim.is_map else None
                        rn = req.get(res) if req is not None and req.is_map else None
                        if ln is not None or rn is not None:
                            out.append((res, _int(ln, f"resources.limits.{res}"),
                                        _int(rn, f"resources.requests.{res}")))
                if child.is_map or child.is_seq:
                    stack.append(child)
        elif node.is_seq:
            stack.extend(c for c in node.value if c.is_map or c.is_seq)
    return out


def _gpu_facts(job: Launch, pod_spec, container, source: str) -> bool:
    """Add the GPUs a container requests and the GPU model its pod selects; True when it requests GPUs."""
    g = _gpu_request(container, source)
    if g is not None:
        job.facts.add("hardware.gpus_per_node_requested", g)
    prod = _gpu_product(pod_spec)
    if prod is not None:
        job.facts.add("hardware.gpu", prod)
    return g is not None


def _procs_per_node(job: Launch, node, option: str, source: str) -> None:
    """A job's processes per node (``nprocPerNode`` & co.): an option of the job and a fact."""
    v = _int(node, source)
    job.options[option] = v
    job.facts.add("parallel.procs_per_node", v)


def _spec(doc):
    """A manifest's ``spec`` mapping, or None."""
    spec = doc.get("spec")
    return spec if spec is not None and spec.is_map else None


def _env(container) -> dict[str, Value]:
    env: dict[str, Value] = {}
    node = container.get("env") if container is not None else None
    if node is None or not node.is_seq:
        return env
    for item in node.value:
        if not item.is_map:
            continue
        name = item.get("name")
        if name is None or not isinstance(name.value, str):
            continue
        val = item.get("value")
        if val is not None and val.value is not None and not isinstance(val.value, (dict, list)):
            text = str(val.value) if not isinstance(val.value, bool) else str(val.value).lower()
            env[name.value] = Value(text, item.span, True, "", name.value)
        else:
            env[name.value] = Value.unknown(f"{name.value} comes from valueFrom", item.span, name.value)
    return env


def _command_words(container, env: dict[str, Value]) -> tuple[list[Word], list, Span | None]:
    """The container's command + args as words; the YAML nodes too (for `sh -c` scripts)."""
    nodes = []
    for key in ("command", "args"):
        n = container.get(key)
        if n is None:
            continue
        if n.is_seq:
            nodes.extend(n.value)
        elif isinstance(n.value, str):
            nodes.append(n)
    words: list[Word] = []
    for n in nodes:
        if isinstance(n.value, (dict, list)) or n.value is None:
            words.append(Word.unknown("not a string", n.span))
            continue
        text = str(n.value)
        words.append(_k8s_word(text, n.span, env))
    first = nodes[0].span if nodes else None
    return words, nodes, first


def _k8s_word(text: str, span: Span, env: dict[str, Value]) -> Word:
    """Kubernetes expands $(VAR) from the container's env in command and args."""
    if "$(" not in text:
        return Word.lit(text, span)
    out = ""
    segs = []
    pos = 0
    for m in K8S_VAR.finditer(text):
        if m.start() > pos:
            a = len(out)
            out += text[pos:m.start()]
            segs.append(cmdline.Seg(a, len(out), span))
        name = m.group(1)
        v = env.get(name)
        a = len(out)
        if v is not None and v.known:
            out += str(v.value)
            segs.append(cmdline.Seg(a, len(out), v.span))
        else:
            out += cmdline.UNKNOWN
            segs.append(cmdline.Seg(a, len(out), span, False, f"{name} is set at run time"))
        pos = m.end()
    if pos < len(text):
        a = len(out)
        out += text[pos:]
        segs.append(cmdline.Seg(a, len(out), span))
    return Word(out, span, segs)


#: the variables each operator sets in every pod, after the container's own env (the later entry of
#: a name wins in Kubernetes): Kubeflow's PyTorchJob (MASTER_ADDR, WORLD_SIZE, RANK and the elastic
#: PET_* ones), Kubeflow Trainer's TrainJob (PET_*), the MPI operator, Volcano's pytorch plugin
OPERATOR_SETS: dict[str, tuple[str, ...]] = {
    "pytorchjob": ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "PET_NNODES", "PET_NPROC_PER_NODE",
                   "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT", "PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND"),
    "trainjob": ("PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"),
    "mpijob": ("OMPI_MCA_orte_default_hostfile", "K_MPI_JOB_ROLE"),
    "volcano": ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"),
    "tfjob": ("TF_CONFIG",),
}


def _launches_of_container(container, wrapper: Launch, path: str, abspath: Path) -> list[Launch]:
    env = _env(container)
    operator = _outermost(wrapper).launcher
    for name in OPERATOR_SETS.get(operator, ()):
        if name in env:  # the operator appends its own value after the container's: its value wins
            env[name] = Value.unknown(f"{name} is set by the {operator} operator (it overrides the container's "
                                      f"{name})", env[name].span, name)
    words, nodes, first = _command_words(container, env)
    if not words:
        return []
    run_env = {k: Value.unknown(f"{k} is set by the operator", None, k) for k in OPERATOR_ENV}
    run_env.update(env)
    wrapper.env = dict(run_env)
    ctx = cmdline.Context(env=run_env, scheduler={}, scheduler_facts=wrapper.facts)
    # `sh -c "script"` / `bash -lc "script"`: evaluate the script
    w0 = words[0].text if words[0].known else ""
    if w0.rsplit("/", 1)[-1] in ("sh", "bash", "zsh", "dash") and len(words) >= 3:
        flag_i = next((i for i, w in enumerate(words[1:3], 1) if w.known and w.text.startswith("-")
                       and "c" in w.text), None)
        if flag_i is not None and flag_i + 1 < len(nodes):
            node = nodes[flag_i + 1]
            if isinstance(node.value, str):
                return _shell_launches(node, run_env, wrapper, path, abspath)
    la = cmdline.parse_command(words, ctx, first)
    if la is None:
        return []
    _rewrap(la, wrapper)
    return [la]


def _outermost(la: Launch) -> Launch:
    while la.wrapper is not None:
        la = la.wrapper
    return la


def _rewrap(la: Launch, wrapper: Launch) -> None:
    """Make the job the outermost wrapper of a parsed launch chain."""
    inner = la
    while inner.wrapper is not None:
        inner = inner.wrapper
    if inner is not wrapper:
        inner.wrapper = wrapper


def _shell_launches(node, env: dict[str, Value], wrapper: Launch, path: str, abspath: Path) -> list[Launch]:
    from parallint.readers import shell

    text = node.value
    sp = node.span
    # block scalars start on the next line; quoted strings one column in
    line_off, col_off = sp.line - 1, sp.column
    if "\n" in text:
        line_off = sp.line
        col_off = 0
    ev = shell.evaluate(text, path, abspath, env=env, line_offset=line_off, col_offset=col_off,
                        scheduler_facts=wrapper.facts)
    out = []
    for la in ev.launches:
        _rewrap(la, wrapper)
        out.append(la)
    return out


def _pytorchjob(doc, path: str, abspath: Path) -> list[Launch]:
    spec = _spec(doc)
    if spec is None:
        return []
    replicas = spec.get("pytorchReplicaSpecs")
    if replicas is None or not replicas.is_map:
        return []
    job = Launch("pytorchjob", doc.span)
    counts = []
    for rtype, rspec in replicas.items():
        if not rspec.is_map:
            continue
        r = rspec.get("replicas")
        v = _int(r, f"pytorchReplicaSpecs.{rtype}.replicas") if r is not None else Value(1, rspec.span, True, "", f"pytorchReplicaSpecs.{rtype} (default 1)")
        job.options[f"replicas.{rtype}"] = v
        counts.append(v)
    elastic = spec.get("elasticPolicy")
    elastic_range = False
    if elastic is not None and elastic.is_map:
        mn, mx = elastic.get("minReplicas"), elastic.get("maxReplicas")
        if mn is not None or mx is not None:
            if not (mn is not None and mx is not None and mn.value == mx.value):
                elastic_range = True
    if counts and not elastic_range:
        if all(c.known for c in counts):
            total = sum(c.value for c in counts)
            job.facts.add("parallel.nodes", Value(total, counts[0].span, True, "",
                                                  "PyTorchJob replicas (Master + Worker)"))
    nproc = spec.get("nprocPerNode")
    if nproc is None and elastic is not None and elastic.is_map:
        nproc = elastic.get("nProcPerNode")
    if nproc is not None:
        _procs_per_node(job, nproc, "nproc_per_node", "PyTorchJob nprocPerNode")
    out: list[Launch] = []
    seen_cmds: set[str] = set()
    gpus_added = False
    # every replica type's GPU request (each pod runs nprocPerNode processes): `gpus.<type>`
    for rtype, rspec in replicas.items():
        if rspec.is_map:
            g = _gpu_request(_main_container(_pod_spec(rspec.get("template"))), rtype)
            if g is not None:
                job.options[f"gpus.{rtype}"] = g
    for rtype in ("Master", "Worker"):
        rspec = replicas.get(rtype)
        if rspec is None or not rspec.is_map:
            continue
        pod = _pod_spec(rspec.get("template"))
        c = _main_container(pod)
        if c is None:
            continue
        if not gpus_added:
            gpus_added = _gpu_facts(job, pod, c, rtype)
        key = repr([c.get("command") and c.get("command").plain(), c.get("args") and c.get("args").plain()])
        if key in seen_cmds:
            continue
        seen_cmds.add(key)
        out.extend(_launches_of_container(c, job, path, abspath))
    return out or [job]


def _trainjob(doc, path: str, abspath: Path) -> list[Launch]:
    spec = _spec(doc)
    if spec is None:
        return []
    trainer = spec.get("trainer")
    job = Launch("trainjob", doc.span)
    if trainer is None or not trainer.is_map:
        return [job]
    n = trainer.get("numNodes")
    if n is not None:
        job.facts.add("parallel.nodes", _int(n, "TrainJob trainer.numNodes"))
    p = trainer.get("numProcPerNode")
    if p is not None:
        _procs_per_node(job, p, "nproc_per_node", "TrainJob trainer.numProcPerNode")
    res = trainer.get("resourcesPerNode")
    if res is not None:
        _gpu_facts(job, None, _Wrap(res), "trainer")
    out = _launches_of_container(trainer, job, path, abspath)
    return out or [job]


class _Wrap:
    """Lets _gpu_request read a bare `resourcesPerNode` mapping."""

    def __init__(self, res) -> None:
        self.res = res

    def get(self, key):
        return self.res if key == "resources" else None


def _mpijob(doc, path: str, abspath: Path) -> list[Launch]:
    spec = _spec(doc)
    if spec is None:
        return []
    replicas = spec.get("mpiReplicaSpecs")
    job = Launch("mpijob", doc.span)
    if replicas is None or not replicas.is_map:
        return [job]
    worker = replicas.get("Worker")
    if worker is not None and worker.is_map:
        r = worker.get("replicas")
        if r is not None:
            job.facts.add("parallel.nodes", _int(r, "MPIJob Worker.replicas"))
        pod = _pod_spec(worker.get("template"))
        _gpu_facts(job, pod, _main_container(pod), "Worker")
    spw = spec.get("slotsPerWorker")
    if spw is not None:
        _procs_per_node(job, spw, "slots_per_worker", "MPIJob slotsPerWorker")
    out: list[Launch] = []
    launcher = replicas.get("Launcher")
    if launcher is not None and launcher.is_map:
        c = _main_container(_pod_spec(launcher.get("template")))
        if c is not None:
            out.extend(_launches_of_container(c, job, path, abspath))
    return out or [job]


#: the replica types of a TFJob whose pods train (the Evaluator only reads checkpoints)
TFJOB_TRAINING = ("Chief", "Master", "Worker", "PS")


def _tfjob(doc, path: str, abspath: Path) -> list[Launch]:
    """Kubeflow's TFJob: ``tfReplicaSpecs`` of Chief (or the older Master), Worker, PS and Evaluator
    replicas; the operator gives every pod a ``TF_CONFIG`` naming the whole cluster. The replica
    counts and each type's GPUs are the job's options; the GPUs of the first training replica type
    that asks for them are its ``hardware.gpus_per_node_requested`` (each pod runs one TensorFlow
    process, which sees all of its pod's GPUs)."""
    spec = _spec(doc)
    if spec is None:
        return []
    replicas = spec.get("tfReplicaSpecs")
    job = Launch("tfjob", doc.span)
    if replicas is None or not replicas.is_map:
        return [job]
    for rtype, rspec in replicas.items():
        if not rspec.is_map or not isinstance(rtype, str):
            continue
        r = rspec.get("replicas")
        job.options[f"replicas.{rtype}"] = (
            _int(r, f"TFJob {rtype}.replicas") if r is not None
            else Value(1, rspec.span, True, "", f"TFJob {rtype} (default 1 replica)"))
        g = _gpu_request(_main_container(_pod_spec(rspec.get("template")), "tensorflow"), f"TFJob {rtype}")
        if g is not None:
            job.options[f"gpus.{rtype}"] = g
    out: list[Launch] = []
    seen_cmds: set[str] = set()
    gpus_added = False
    for rtype in TFJOB_TRAINING:
        rspec = replicas.get(rtype)
        if rspec is None or not rspec.is_map:
            continue
        pod = _pod_spec(rspec.get("template"))
        c = _main_container(pod, "tensorflow")
        if c is None:
            continue
        if not gpus_added:
            gpus_added = _gpu_facts(job, pod, c, f"TFJob {rtype}")
        key = repr([c.get("command") and c.get("command").plain(), c.get("args") and c.get("args").plain()])
        if key in seen_cmds:
            continue
        seen_cmds.add(key)
        out.extend(_launches_of_container(c, job, path, abspath))
    return out or [job]


def _volcano(doc, path: str, abspath: Path) -> list[Launch]:
    spec = _spec(doc)
    if spec is None:
        return []
    tasks = spec.get("tasks")
    job = Launch("volcano", doc.span)
    out: list[Launch] = []
    if tasks is None or not tasks.is_seq:
        return [job]
    for task in tasks.value:
        if not task.is_map:
            continue
        pod = _pod_spec(task.get("template"))
        c = _main_container(pod)
        if c is not None:
            out.extend(_launches_of_container(c, job, path, abspath))
    return out or [job]


def _batch_job(doc, path: str, abspath: Path) -> list[Launch]:
    spec = doc.get("spec")
    pod = _pod_spec(spec.get("template")) if spec is not None else None
    out: list[Launch] = []
    for c in _containers(pod):
        holder = Launch("kubejob", doc.span)
        _gpu_facts(holder, None, c, "container")
        out.extend(_launches_of_container(c, holder, path, abspath))
    return out


class KubeData(EqRecord):
    """``FileFacts.data`` of a Kubernetes manifest: the training jobs read, as ``(kind, document)``,
    and every document of the file as a positioned tree (the schema rules validate them)."""

    _fields = ("jobs", "documents")
    jobs: list
    documents: list

    def __init__(self, jobs: list | None = None, documents: list | None = None) -> None:
        self.jobs = [] if jobs is None else jobs
        self.documents = [] if documents is None else documents


def read(path: str, abspath: Path, text: str) -> FileFacts:
    from parallint.readers import yamlpos

    ff = FileFacts(path=path, abspath=abspath, kind="kube", text=text)
    try:
        docs = yamlpos.load_all(text, path)
    except Exception as exc:  # noqa: BLE001 - yaml errors, limits, odd input: SYN001
        if "{{" in text and "}}" in text:
            return ff  # a Helm/Jinja template: not YAML until rendered
        line, col = yamlpos.error_position(exc)
        msg = getattr(exc, "problem", None) or str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        ff.diagnostics.append(syn001(path, f"invalid YAML at line {line}, column {col}: {msg}", line, col))
        return ff
    docs_out = []
    for doc in docs:
        if not doc.is_map:
            continue
        kind = doc.get("kind")
        api = doc.get("apiVersion")
        kind_s = kind.value if kind is not None and isinstance(kind.value, str) else ""
        api_s = api.value if api is not None and isinstance(api.value, str) else ""
        try:
            if kind_s == "PyTorchJob":
                launches = _pytorchjob(doc, path, abspath)
            elif kind_s == "TrainJob":
                launches = _trainjob(doc, path, abspath)
            elif kind_s == "MPIJob":
                launches = _mpijob(doc, path, abspath)
            elif kind_s == "TFJob":
                launches = _tfjob(doc, path, abspath)
            elif kind_s == "Job" and api_s.startswith("batch.volcano.sh"):
                launches = _volcano(doc, path, abspath)
            elif kind_s == "Job" and api_s.startswith("batch/"):
                launches = _batch_job(doc, path, abspath)
            elif kind_s in ("RayJob", "RayCluster") and api_s.startswith("ray.io"):
                from parallint.readers import ray

                launches = ray.manifest_launches(doc, path, abspath)
            else:
                continue
        except (AttributeError, TypeError, ValueError, KeyError, RecursionError) as exc:
            ff.diagnostics.append(syn001(path, f"cannot read {kind_s}: {type(exc).__name__}", doc.span.line,
                                       doc.span.column))
            continue
        docs_out.append((kind_s, doc))
        pairs = [GpuRequest(res, lim, req) for res, lim, req in gpu_resource_pairs(doc)]
        for job in {id(j): j for j in (_outermost(la) for la in launches)}.values():
            job.gpu_requests = pairs
            pairs = []  # one wrapper per document carries them
        ff.launches.extend(launches)
    ff.data = KubeData(docs_out, docs)
    for la in ff.launches:
        ff.links.extend(la.links)
    if len(ff.launches) == 1 and ff.launches[0].launcher in ("pytorchjob", "trainjob", "mpijob"):
        ff.standalone_job = True
    return ff
