"""What the LAY rules share."""

from __future__ import annotations


def _nemo(tp=1, pp=1, devices=8, nodes=1, extra: str = "", model_extra: str = "") -> str:
    return f"""\
trainer:
  devices: {devices}
  num_nodes: {nodes}
  precision: bf16
{extra}model:
  micro_batch_size: 1
  global_batch_size: 32
  tensor_model_parallel_size: {tp}
  pipeline_model_parallel_size: {pp}
{model_extra}"""


def _meg(args: str) -> str:
    return "ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\n" + "".join(
        f"  {line.strip()}\n" for line in args.strip().splitlines())


def _divisors(n: int, near: int) -> str:
    """A fix clause's choice of degrees: the divisors of ``n`` next to ``near`` ('4 or 2')."""
    if n > 1_000_000:  # a hostile value: no search
        return f"a divisor of {n}"
    divs = [d for d in range(2, n + 1) if n % d == 0] or [1]
    below = [d for d in divs if d < near][-2:][::-1]
    above = [d for d in divs if near < d <= 2 * near][:1]
    pick = (below + above)[:2] or [1]
    return " or ".join(map(str, pick)) if len(pick) < 2 or pick[0] != pick[1] else str(pick[0])
