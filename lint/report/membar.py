"""Pictures of a memory estimate: where the bytes of the most loaded rank go, against the card.

- :func:`bar`: a stacked bar for the terminal (``parallint estimate``): weights, gradients,
  optimizer, activations and other, then the free memory up to the card, in Unicode blocks (with
  colours on a terminal) or in plain ASCII letters when the output is piped;
- :func:`svg`: the same for every job as one SVG document (``estimate --format svg``), which a CI
  job can keep as an artifact.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Sequence

#: the parts of the bar: (label, attribute of the estimate, ASCII letter, ANSI colour, SVG colour)
PARTS = (
    ("weights", "weights", "W", "34", "#4c72b0"),
    ("gradients", "gradients", "G", "36", "#55a868"),
    ("optimizer", "optimizer", "O", "35", "#c44e52"),
    ("activations", "activations", "A", "33", "#dd8452"),
    ("other", "other", "x", "37", "#8c8c8c"),
)
GIB = float(1 << 30)


def _parts(est: Any) -> list[tuple[str, float, str, str, str]]:
    return [(label, float(getattr(est, attr) or 0), ch, ansi, rgb) for label, attr, ch, ansi, rgb in PARTS]


def bar(est: Any, width: int = 60, unicode: bool = True, color: bool = False) -> list[str]:
    """Two lines: the bar (``|`` marks the card's memory; beyond it, the part that does not fit)
    and its legend, each part with its share of the total."""
    parts = _parts(est)
    total = sum(v for _, v, *_ in parts)
    card = float(est.gpu_memory_bytes or 0)
    scale = max(total, card) or 1.0
    cells: list[tuple[str, str]] = []  # (character, ANSI colour or "")
    acc = 0.0
    for _, value, ch, ansi, _ in parts:
        start = round(acc / scale * width)
        acc += value
        end = round(acc / scale * width)
        cells.extend(((("\u2588" if unicode else ch), ansi if color else "")) for _ in range(end - start))
    free = (("\u2591" if unicode else "."), "")
    if card:
        cells.extend(free for _ in range(round(card / scale * width) - len(cells)))
    mark = round(card / scale * width) if card else None
    out = []
    for i, (ch, ansi) in enumerate(cells):
        if mark is not None and i == mark:
            out.append("|")
        out.append(f"\x1b[{ansi}m{ch}\x1b[0m" if ansi else ch)
    if mark is not None and mark >= len(cells):
        out.append("|")
    line = "".join(out)
    if unicode:
        keys = [(f"\x1b[{ansi}m\u2588\x1b[0m" if color else "\u2588") + f" {label} {value / GIB:.1f}"
                for label, value, ch, ansi, _ in parts if value > 0]
    else:
        keys = [f"{ch}={label} {value / GIB:.1f}" for label, value, ch, _, _ in parts if value > 0]
    tail = f"  | = the card, {card / GIB:.1f}" if card else "  (GPU memory unknown)"
    return [f"[{line}]", "GiB: " + "  ".join(keys) + tail]


def _esc(text: str) -> str:
    from xml.sax.saxutils import escape

    return escape(text, {'"': "&quot;"})


def svg(results: Sequence[tuple[str, Any]], width: int = 720) -> str:
    """One SVG document with a row per job: its stacked bar scaled to the largest of its total and
    its card, the card's memory as a line, and the figures in GiB."""
    row_h, bar_h, left, top = 64, 22, 12, 40
    inner = width - 2 * left
    height = top + row_h * max(len(results), 1) + 30
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<text x="{left}" y="20" font-size="14" font-weight="bold">parallint estimate: per-GPU memory '
           'of the most loaded rank</text>']
    for i, (name, est) in enumerate(results):
        y = top + i * row_h
        parts = _parts(est)
        total = sum(v for _, v, *_ in parts)
        card = float(est.gpu_memory_bytes or 0)
        scale = max(total, card) or 1.0
        verdict = "" if not card else (" fits" if total <= card else " does NOT fit")
        out.append(f'<text x="{left}" y="{y + 12}">{_esc(name)}: {total / GIB:.1f} GiB'
                   f'{f" of {card / GIB:.1f} GiB ({_esc(str(est.gpu))})" if card else ""}{verdict}</text>')
        x = float(left)
        for label, value, _, _, rgb in parts:
            w = value / scale * inner
            if w <= 0:
                continue
            out.append(f'<rect x="{x:.1f}" y="{y + 18}" width="{w:.1f}" height="{bar_h}" fill="{rgb}">'
                       f'<title>{label}: {value / GIB:.1f} GiB</title></rect>')
            x += w
        if card:
            cx = left + card / scale * inner
            out.append(f'<line x1="{cx:.1f}" y1="{y + 14}" x2="{cx:.1f}" y2="{y + 18 + bar_h + 4}" '
                       'stroke="black" stroke-width="2"><title>GPU memory</title></line>')
    ly = top + row_h * max(len(results), 1)
    x = float(left)
    for label, _, _, _, rgb in PARTS:
        out.append(f'<rect x="{x:.0f}" y="{ly}" width="12" height="12" fill="{rgb}"/>'
                   f'<text x="{x + 16:.0f}" y="{ly + 11}">{label}</text>')
        x += 16 + 8 * len(label) + 18
    out.append("</svg>")
    return "\n".join(out) + "\n"
