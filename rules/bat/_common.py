"""What the BAT rules share."""

from __future__ import annotations


MAX_RAMP_STEPS = 100_000


def rampup_batch_sizes(start: int, incr: int, samples: int, gbs: int) -> list[int] | None:
    """The global batch sizes Megatron's ``RampupBatchsizeNumMicroBatches`` goes through before it
    reaches ``gbs`` (in order, without repeats), replaying its ``update(consumed_samples)``: the
    batch is ``start + int(consumed / (samples / increments)) * incr`` while ``consumed <=
    samples``, and consumed samples grow by the batch of each step. None when the ramp is not
    well formed (Megatron's own asserts) or too long to replay."""
    if start <= 0 or incr <= 0 or samples < 0 or gbs < start or (gbs - start) % incr:
        return None
    increments = (gbs - start) // incr
    if increments == 0 or increments > MAX_RAMP_STEPS:
        return None
    per = samples / increments
    if per <= 0:
        return None
    out: list[int] = []
    consumed = 0
    for _ in range(2 * MAX_RAMP_STEPS):
        if consumed > samples:
            break
        k = int(consumed / per)
        bs = start + k * incr
        if not out or out[-1] != bs:
            out.append(bs)
        # jump to the first step past this increment's samples
        nxt = (k + 1) * per
        n = max(1, -(-int(nxt - consumed) // bs))
        consumed += n * bs
        while consumed <= samples and int(consumed / per) == k:
            consumed += bs
    return [b for b in out if b < gbs]


def _multiple(k: int, near: int) -> str:
    """'a multiple of k (lo or hi)': the multiples of k next to ``near``, for a fix clause."""
    lo = near // k * k
    choices = [x for x in (lo, lo + k) if x > 0]
    return f"a multiple of {k} ({' or '.join(map(str, choices))})"
