"""The Kubernetes reader: PyTorchJob, TrainJob, MPIJob, Volcano Job; multi-document; SYN001."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from parallint.readers import kube

CORPUS = Path("/work/shared/corpus")


def read(text: str, path: str = "job.yaml"):
    return kube.read(path, Path("/nonexistent") / path, textwrap.dedent(text).lstrip("\n"))


def vals(la, key):
    return [v.value if v.known else None for v in la.facts.all(key)]


PYTORCHJOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j}
spec:
  nprocPerNode: "4"
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
          containers:
            - name: pytorch
              image: img
              command: ["torchrun", "--nproc_per_node=4", "train.py", "--deepspeed_config", "ds.json"]
              env:
                - {name: NCCL_DEBUG, value: INFO}
                - name: POD_IP
                  valueFrom: {fieldRef: {fieldPath: status.podIP}}
              resources: {limits: {nvidia.com/gpu: "4"}}
    Worker:
      replicas: 3
      template:
        spec:
          containers:
            - name: pytorch
              image: img
              command: ["torchrun", "--nproc_per_node=4", "train.py", "--deepspeed_config", "ds.json"]
              resources: {limits: {nvidia.com/gpu: 4}}
"""


def test_pytorchjob_facts_and_wrapper():
    ff = read(PYTORCHJOB)
    assert ff.diagnostics == []
    assert len(ff.launches) == 1  # Master and Worker run the same command
    la = ff.launches[0]
    assert la.launcher == "torchrun" and la.wrapper.launcher == "pytorchjob"
    assert vals(la, "parallel.nodes") == [4]
    assert [(v.value, v.source) for v in la.facts.all("parallel.procs_per_node")] == [
        (4, "PyTorchJob nprocPerNode"), (4, "torchrun --nproc_per_node")]
    assert vals(la, "hardware.gpus_per_node_requested") == [4]
    assert [g.lower() for g in vals(la, "hardware.gpu")] == ["a100-sxm4-80gb"]
    assert la.env["NCCL_DEBUG"].value == "INFO"
    assert la.env["POD_IP"].known is False
    assert la.env["MASTER_ADDR"].known is False  # set by the operator
    assert [v.value for v in la.links] == ["ds.json"]
    assert la.wrapper.options["replicas.Master"].value == 1
    assert la.wrapper.options["replicas.Master"].span.line == 8


def test_elastic_range_leaves_nodes_unknown():
    text = PYTORCHJOB.replace("spec:\n  nprocPerNode", "spec:\n  elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n  nprocPerNode")
    la = read(text).launches[0]
    assert vals(la, "parallel.nodes") == []


def test_sh_c_script_in_args():
    ff = read("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: j}
        spec:
          pytorchReplicaSpecs:
            Master:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      command: ["/bin/bash", "-c"]
                      args:
                        - |
                          export NCCL_SOCKET_IFNAME=eth0
                          NNODES=2
                          torchrun --nnodes $NNODES --nproc_per_node 8 --master_addr ${MASTER_ADDR:-localhost} train.py
        """)
    la = ff.launches[0]
    assert la.launcher == "torchrun" and la.wrapper.launcher == "pytorchjob"
    assert [(v.value, v.span.line) for v in la.facts.all("parallel.nodes")] == [(1, 7), (2, 17)]
    assert la.options["master_addr"].known is False  # the operator sets MASTER_ADDR
    assert la.env["NCCL_SOCKET_IFNAME"].value == "eth0"


def test_k8s_dollar_paren_expansion():
    ff = read("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        metadata: {name: j}
        spec:
          pytorchReplicaSpecs:
            Worker:
              replicas: 2
              template:
                spec:
                  containers:
                    - name: pytorch
                      image: img
                      env: [{name: N, value: "2"}]
                      command: [torchrun, "--nnodes=$(N)", "--nproc_per_node=$(PET_NPROC_PER_NODE)", train.py]
        """)
    la = ff.launches[0]
    assert vals(la, "parallel.nodes") == [2, 2]
    assert vals(la, "parallel.procs_per_node") == [None]


def test_trainjob():
    ff = read("""
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        metadata: {name: t}
        spec:
          runtimeRef: {name: torch-distributed}
          trainer:
            numNodes: 2
            numProcPerNode: 8
            resourcesPerNode:
              limits: {nvidia.com/gpu: 8}
            command: [torchrun, train.py]
        """)
    la = ff.launches[0]
    assert la.launcher == "torchrun" and la.wrapper.launcher == "trainjob"
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.procs_per_node") == [8]
    assert vals(la, "hardware.gpus_per_node_requested") == [8]


def test_mpijob_and_multiple_documents():
    ff = read("""
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c}
        ---
        apiVersion: kubeflow.org/v2beta1
        kind: MPIJob
        metadata: {name: m}
        spec:
          slotsPerWorker: 8
          mpiReplicaSpecs:
            Launcher:
              replicas: 1
              template:
                spec:
                  containers:
                    - name: l
                      image: img
                      command: [mpirun, -np, "16", python, train.py]
            Worker:
              replicas: 2
              template:
                spec:
                  containers:
                    - name: w
                      image: img
                      resources: {limits: {nvidia.com/gpu: 8}}
        """)
    la = ff.launches[0]
    assert la.launcher == "python" and la.wrapper.launcher == "mpirun"
    assert la.wrapper.wrapper.launcher == "mpijob"
    assert vals(la, "parallel.nodes") == [2]
    assert vals(la, "parallel.world_size") == [16]


def test_volcano_job():
    ff = read("""
        apiVersion: batch.volcano.sh/v1alpha1
        kind: Job
        metadata: {name: v}
        spec:
          tasks:
            - replicas: 2
              name: worker
              template:
                spec:
                  containers:
                    - name: c
                      image: img
                      command: [sh, -c, "torchrun --nnodes 2 --nproc_per_node 4 train.py"]
        """)
    la = ff.launches[0]
    assert la.launcher == "torchrun" and la.wrapper.launcher == "volcano"
    assert vals(la, "parallel.nodes") == [2]


def test_invalid_yaml_is_syn001_with_position():
    ff = read("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        spec: [unclosed
        """)
    assert [d.code for d in ff.diagnostics] == ["SYN001"]
    assert ff.diagnostics[0].span.line >= 3


def test_helm_template_is_not_a_parse_error():
    ff = read("""
        apiVersion: kubeflow.org/v1
        kind: PyTorchJob
        spec:
        {{- if .Values.x }}
          nprocPerNode: {{ .Values.n }}
        {{- end }}
        """)
    assert ff.diagnostics == []


@pytest.mark.parametrize("odd", ["", "---\n", "- a\n- b\n", "kind: PyTorchJob\n", "kind: PyTorchJob\nspec: 3\n",
                                 "kind: PyTorchJob\nspec: {pytorchReplicaSpecs: {Master: {replicas: many}}}\n",
                                 "a: &a [*a]\n"])
def test_odd_documents_do_not_raise(odd):
    ff = kube.read("x.yaml", Path("/nonexistent/x.yaml"), odd)
    assert all(d.code == "SYN001" for d in ff.diagnostics)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not present")
def test_corpus_manifests_read_without_crash():
    seen = 0
    for p in sorted(CORPUS.rglob("*.y*ml")):
        text = p.read_text(errors="replace")
        if not any(k in text for k in ("PyTorchJob", "TrainJob", "MPIJob", "batch.volcano.sh")):
            continue
        seen += 1
        ff = kube.read(str(p), p, text)
        assert all(d.code == "SYN001" for d in ff.diagnostics)
    assert seen >= 10


GPU_JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: j}}
spec:
  nprocPerNode: "8"
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: img
              command: [python, train.py]
              resources:
                limits: {{nvidia.com/gpu: {ml}}}
                requests: {{nvidia.com/gpu: {mr}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: pytorch
              image: img
              command: [python, train.py]
              resources:
                limits: {{nvidia.com/gpu: {wl}}}
"""


def _lch(rule_name, text):
    from conftest import rule_family

    lch = rule_family("lch")

    ff = read(text)
    return [(d.code, d.span.line) for d in getattr(lch, rule_name)().check_file(ff, None)], ff


@pytest.mark.parametrize("ml,mr,expected", [
    ("8", "8", []), ('"8"', "8", []), ("8", '"8"', []),
    ("8", "4", [("LCH008", 17)]), ("${GPUS}", "4", []), ("4", "8", [("LCH008", 17)]),
])
def test_lch008_limits_against_requests(ml, mr, expected):
    found, _ = _lch("GpuLimitsRequestsMismatch", GPU_JOB.format(ml=ml, mr=mr, wl=8))
    assert found == expected


def test_lch008_request_without_limit_and_several_documents():
    doc = GPU_JOB.format(ml=8, mr=8, wl=8).replace("limits: {nvidia.com/gpu: 8}\n                requests",
                                                   "requests")
    found, _ = _lch("GpuLimitsRequestsMismatch", doc + "---\n" + GPU_JOB.format(ml=8, mr=2, wl=8))
    assert [c for c, _ in found] == ["LCH008", "LCH008"]
    assert found[0][1] == 16 and found[1][1] > 30


def test_lch002_checks_every_replica_type():
    found, ff = _lch("MoreProcessesThanGpus", GPU_JOB.format(ml=8, mr=8, wl=4))
    assert found == [("LCH002", 5)]
    la = ff.launches[0]
    assert la.wrapper.options["gpus.Worker"].value == 4 and la.wrapper.options["gpus.Master"].value == 8
    ok, _ = _lch("MoreProcessesThanGpus", GPU_JOB.format(ml=8, mr=8, wl=8))
    assert ok == []


def test_many_documents_are_read_in_linear_time():
    import time

    one = GPU_JOB.format(ml=8, mr=8, wl=8)
    small, big = "---\n".join([one] * 50), "---\n".join([one] * 800)
    t0 = time.perf_counter()
    assert len(read(small).launches) == 50
    t_small = time.perf_counter() - t0
    t0 = time.perf_counter()
    assert len(read(big).launches) == 800
    t_big = time.perf_counter() - t0
    assert t_big < 40 * t_small + 5  # 16x the input: linear, with room for a loaded machine
