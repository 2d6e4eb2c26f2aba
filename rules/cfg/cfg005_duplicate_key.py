"""CFG005 duplicate-key: A key repeated in one JSON/YAML mapping"""

from __future__ import annotations

from parallint.model.diagnostics import Related, Severity
from parallint.model.rule import Example, Rule
from parallint.rules.cfg._common import _tree


DUP_KINDS = frozenset({"deepspeed", "nemo", "megatron_yaml", "accelerate", "neox", "foundry", "nanotron",
                       "hf_model", "hftrainargs"})


def _inline_value(lines: list[str], key_span) -> str | None:
    """The scalar written after a key on its own line (``key: value`` / ``"key": value,``), comments
    and a trailing comma dropped; None when the value is a block, a flow collection or not on that line."""
    if key_span is None or not (1 <= key_span.line <= len(lines)):
        return None
    line = lines[key_span.line - 1]
    end = key_span.end_column if key_span.end_line == key_span.line and key_span.end_column else 0
    rest = line[end - 1:] if end > 0 else line[key_span.column - 1:].split(":", 1)[-1]
    rest = rest.lstrip().lstrip('"').lstrip("'").lstrip()
    if not rest.startswith(":"):
        return None
    rest = rest[1:]
    for marker in (" #", "\t#", " //"):
        i = rest.find(marker)
        if i >= 0:
            rest = rest[:i]
    rest = rest.strip().rstrip(",").strip()
    if not rest or rest[0] in "{[|>&*" or rest.startswith("!!"):
        return None
    return _one_scalar(rest)


def _one_scalar(rest: str) -> str | None:
    """The first scalar of ``rest``: a quoted string to its closing quote, else up to the next
    ``,``, ``}`` or ``]`` (JSON written on one line holds the other keys there). None when it is
    longer than :data:`_VALUE_CHARS`: a message quotes a value, never the rest of a line."""
    if rest[0] in "\"'":
        i = 1
        while i < len(rest) and rest[i] != rest[0]:
            i += 2 if rest[i] == "\\" else 1
        value = rest[:i + 1]
    else:
        cut = min((i for i in (rest.find(c) for c in ",}]") if i >= 0), default=len(rest))
        value = rest[:cut].strip()
    return value if 0 < len(value) <= _VALUE_CHARS else None


#: characters of a value a message quotes
_VALUE_CHARS = 80


class DuplicateKey(Rule):
    code = "CFG005"
    name = "duplicate-key"
    severity = Severity.ERROR
    summary = "A key repeated in one JSON/YAML mapping"
    kinds = DUP_KINDS
    doc = """
    ## What it does
    Reports a key that appears twice in the same mapping of a JSON or YAML config.

    ## Why it matters
    DeepSpeed rejects duplicate keys when it loads its config; YAML and JSON loaders elsewhere
    silently keep the last one, so the value the author reads first is not the one used. A key
    repeated with the same value (outside DeepSpeed) is reported as a warning: it runs, but a
    later edit to only one of the copies is lost.

    ## Example

    ## How to fix
    Keep one occurrence.
    """
    valid = (Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true}\n}\n', filename="ds_config.json"),)
    invalid = (
        Example('{\n  "train_batch_size": 16,\n  "fp16": {"enabled": true},\n  "train_batch_size": 32\n}\n',
                filename="ds_config.json", line=4),
        Example("trainer:\n  devices: 8\n  num_nodes: 1\nmodel:\n  micro_batch_size: 1\n  tensor_model_parallel_size: 2\n"
                "  micro_batch_size: 2\n", filename="conf/gpt.yaml", line=7),
    )

    def check_file(self, f, ctx):
        tree = _tree(f)
        if tree is None:
            return
        lines = (f.text or "").splitlines()
        nodes = [("", tree)] + list(tree.walk())
        for path, node in nodes:
            for key, first, again in getattr(node, "duplicates", ()) or ():
                if (first.line, first.column) < (node.span.line, node.span.column):
                    continue  # the first one came in through a `<<: *anchor` merge: an override, not a repeat
                where = f" in {path}" if path else ""
                a, b = _inline_value(lines, first), _inline_value(lines, again)
                if a is not None and a == b and f.kind != "deepspeed":  # DeepSpeed refuses even these
                    yield self.report(again, f"duplicate key '{key}'{where} (first at line {first.line}), with "
                                             f"the same value {b}: the loader keeps one, and an edit to only "
                                             f"one of them is silently lost; remove the repeat",
                                      [Related.at(first, f"first '{key}'")], severity=Severity.WARNING)
                    continue
                what = f": {a} at line {first.line}, then {b}" if a is not None and b is not None else ""
                yield self.report(again, f"duplicate key '{key}'{where} (first at line {first.line}){what}; "
                                         f"the frameworks reject it or silently keep the last value; remove one of them",
                                  [Related.at(first, f"first '{key}'")])
