"""What the machine a launch is about to run on offers (``parallint preflight``).

The distributed environment variables (Slurm's, the rendezvous, NCCL's: never anything else, and
never a name that looks like a secret), the GPUs (``nvidia-smi --query-gpu``, else
``/proc/driver/nvidia``), the driver version, the installed torch / DeepSpeed / transformers /
NCCL versions (the names of the ``*.dist-info`` folders on ``sys.path``: nothing is imported), the
InfiniBand devices (``/sys/class/infiniband``) and whether ``nvidia_peermem`` is loaded
(``/proc/modules``). ``/proc`` and ``/sys`` are read under ``$PARALLINT_HOST_ROOT`` (default ``/``),
so tests can fake them.

``nvidia-smi`` is the only program run: the one on ``PATH``, never one inside the checked
repository, with a time limit; absent or failing, the GPUs are read from ``/proc`` or stay unknown.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any

#: seconds nvidia-smi may take (it answers in tens of milliseconds on a healthy node)
NVIDIA_SMI_TIMEOUT = 2.0
NVIDIA_SMI_QUERY = ("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits")
MIB = 1 << 20

#: environment variables a launch reads: the scheduler's, the rendezvous, the launchers', NCCL's
ENV_PREFIXES = ("SLURM_", "MASTER_", "PET_", "OMPI_", "PMI_", "PMIX_", "MV2_", "NCCL_", "TORCH_NCCL_",
                "TORCHELASTIC_", "SKYPILOT_", "LSB_", "PBS_", "FI_", "OFI_NCCL_")  # FI_*: libfabric (AWS EFA)
ENV_NAMES = frozenset("""WORLD_SIZE RANK LOCAL_RANK LOCAL_WORLD_SIZE GROUP_RANK ROLE_RANK NNODES NUM_NODES
    NODE_RANK GPUS_PER_NODE NPROC_PER_NODE CUDA_VISIBLE_DEVICES CUDA_DEVICE_MAX_CONNECTIONS""".split())
#: never copied, whatever the prefix: a name with one of these words may hold a credential
SECRET_WORDS = ("TOKEN", "SECRET", "PASS", "KEY", "CRED", "AUTH", "COOKIE", "PRIVATE", "CERT", "SIGN")
MAX_ENV_VALUE = 4096

#: installed distributions reported, dist-info name -> the name shown
PACKAGES = {"torch": "torch", "deepspeed": "deepspeed", "transformers": "transformers",
            "accelerate": "accelerate", "megatron_core": "megatron-core", "flash_attn": "flash-attn",
            "nvidia_nccl_cu12": "nccl", "nvidia_nccl_cu11": "nccl", "nvidia_nccl_cu13": "nccl"}


def launch_environment(environ: "dict[str, str] | Any") -> dict[str, str]:
    """The distributed variables of ``environ``, sorted by name (see :data:`ENV_PREFIXES`)."""
    out: dict[str, str] = {}
    for name in sorted(environ):
        if not (name in ENV_NAMES or name.startswith(ENV_PREFIXES)):
            continue
        if any(w in name.upper() for w in SECRET_WORDS):
            continue
        value = environ[name]
        if len(value) > MAX_ENV_VALUE or "\x00" in value:
            continue
        out[name] = value
    return out


def host_root() -> str:
    """Where ``/proc`` and ``/sys`` are read: ``$PARALLINT_HOST_ROOT``, else ``/``."""
    return os.environ.get("PARALLINT_HOST_ROOT") or "/"


def _under(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _text(path: str, limit: int = 1 << 20) -> str | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


class HostGpu:
    """One GPU: its model name and memory in bytes (None when not reported)."""

    __slots__ = ("name", "memory_bytes")

    def __init__(self, name: str, memory_bytes: int | None) -> None:
        self.name = name
        self.memory_bytes = memory_bytes


class Host:
    """What :func:`probe` found; ``*_source`` says where each part came from ('' when nowhere)."""

    def __init__(self) -> None:
        self.gpus: list[HostGpu] | None = None  # None: unknown (no nvidia-smi, no /proc/driver/nvidia)
        self.gpu_source = ""
        self.driver: str | None = None
        self.driver_source = ""
        self.packages: dict[str, tuple[str, str]] = {}  # name -> (version, the dist-info folder)
        self.infiniband: list[str] | None = None  # None: no /sys/class/infiniband
        self.peermem: bool | None = None  # None: /proc/modules unreadable
        self.notes: list[str] = []  # what failed, for --show


def _inside(path: str, root: str | None) -> bool:
    if not root:
        return False
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _which(name: str) -> str | None:
    """The program ``name`` as ``PATH`` finds it (``shutil.which`` without importing shutil)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        p = os.path.join(d or ".", name)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def start_nvidia_smi(repository: str | None = None) -> "tuple[Any, str]":
    """Start ``nvidia-smi --query-gpu`` (it runs while the command is read); (process or None, why not)."""
    exe = _which("nvidia-smi")
    if exe is None:
        return None, "nvidia-smi not on PATH"
    if _inside(exe, repository):
        return None, f"{exe} is inside the repository (not run)"
    import subprocess

    try:
        proc = subprocess.Popen([exe, *NVIDIA_SMI_QUERY], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return None, f"nvidia-smi: {exc.strerror or exc}"
    return proc, ""


def _finish_nvidia_smi(proc: Any, host: Host) -> bool:
    import subprocess

    try:
        out, _ = proc.communicate(timeout=NVIDIA_SMI_TIMEOUT)
    except subprocess.TimeoutExpired:
        try:  # its whole process group: a wrapper script's children hold the pipe open too
            os.killpg(proc.pid, 9)
        except OSError:
            proc.kill()
        proc.stdout.close()
        try:
            proc.wait(1)
        except subprocess.TimeoutExpired:
            pass
        host.notes.append(f"nvidia-smi took over {NVIDIA_SMI_TIMEOUT:g} s (stopped)")
        return False
    if proc.returncode != 0:
        host.notes.append(f"nvidia-smi exited {proc.returncode}")
        return False
    gpus, driver = [], None
    for line in out.decode("utf-8", "replace").splitlines()[:64]:
        parts = [p.strip() for p in line.rsplit(",", 2)]
        if len(parts) != 3 or not parts[0]:
            continue
        name, mem, drv = parts
        gpus.append(HostGpu(name, int(mem) * MIB if mem.isdigit() else None))
        driver = driver or (drv if drv and not drv.startswith("[") else None)
    host.gpus, host.gpu_source = gpus, "nvidia-smi"
    if driver:
        host.driver, host.driver_source = driver, "nvidia-smi"
    return True


def _proc_gpus(root: str, host: Host) -> None:
    base = _under(root, "/proc/driver/nvidia/gpus")
    try:
        buses = sorted(os.listdir(base))[:64]
    except OSError:
        return
    gpus = []
    for bus in buses:
        info = _text(os.path.join(base, bus, "information"), 65536) or ""
        name = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("Model:")), "")
        gpus.append(HostGpu(name or "unknown model", None))
    host.gpus, host.gpu_source = gpus, "/proc/driver/nvidia"


def _proc_driver(root: str, host: Host) -> None:
    text = _text(_under(root, "/proc/driver/nvidia/version"), 65536) or ""
    words = text.split("Kernel Module", 1)
    if len(words) == 2 and words[1].split():
        host.driver, host.driver_source = words[1].split()[0], "/proc/driver/nvidia/version"


def _packages(host: Host, paths: list[str]) -> None:
    for entry in paths:
        if not entry or os.path.basename(entry.rstrip(os.sep)) not in ("site-packages", "dist-packages"):
            continue
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        for n in names:
            if not n.endswith(".dist-info"):
                continue
            dist, _, version = n[: -len(".dist-info")].partition("-")
            shown = PACKAGES.get(dist.lower().replace("-", "_").replace(".", "_"))
            if shown and version and shown not in host.packages:
                host.packages[shown] = (version, os.path.join(entry, n))


def probe(nvidia_smi: "tuple[Any, str] | None" = None, root: str | None = None,
          paths: list[str] | None = None) -> Host:
    """The host's facts. ``nvidia_smi``: what :func:`start_nvidia_smi` gave; ``root``: where
    /proc and /sys are (default :func:`host_root`); ``paths``: where packages are installed
    (default ``sys.path``)."""
    import sys

    root = root or host_root()
    host = Host()
    proc, why = nvidia_smi if nvidia_smi is not None else (None, "")
    if why:
        host.notes.append(why)
    if proc is None or not _finish_nvidia_smi(proc, host):
        _proc_gpus(root, host)
    if host.driver is None:
        _proc_driver(root, host)
    _packages(host, list(sys.path if paths is None else paths))
    try:
        host.infiniband = sorted(os.listdir(_under(root, "/sys/class/infiniband")))[:64]
    except OSError:
        # no such folder under a /sys/class that is there: the node has no RDMA device (a /sys
        # that cannot be read says nothing)
        host.infiniband = [] if os.path.isdir(_under(root, "/sys/class/net")) else None
    modules = _text(_under(root, "/proc/modules"))
    if modules is not None:
        host.peermem = any(ln.split(" ", 1)[0] == "nvidia_peermem" for ln in modules.splitlines())
    return host
