"""``parallint plan``'s filter: a candidate layout is kept only when the real layout rules stay
silent on it.

:func:`parallint.estimator.plan.plan` enumerates TP x PP x DP (x CP, EP), ZeRO stages and
recompute modes and estimates their memory; it does not know the layout rules. This module turns
each candidate into facts, the same facts a job spec file gives, and runs every LAY and BAT rule
that works on facts over them. A finding that involves a value the candidate chose (a degree, the
ZeRO stage, sequence parallelism) rejects it; a finding on the model alone (its own shape) is the
job's problem, reported by ``parallint check``, and rejects nothing. So ``plan`` never keeps a
layout that ``check`` would report, and a new layout rule applies to ``plan`` without an edit here.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from parallint.model.diagnostics import Span
from parallint.model.facts import FACT_KEYS, FactMap, Value

#: where the candidate's own choices are said to be (a finding must involve one to reject it)
CANDIDATE = Span("<candidate layout>", 1)
SPEC = Span("<job spec>", 1)
_CHOSEN = ("tp", "pp", "dp", "cp", "ep", "zero_stage", "sequence_parallel", "world_size", "nodes")


@lru_cache(maxsize=1)
def layout_rules() -> tuple:
    """The registered fact rules of the LAY and BAT families (plugins' included)."""
    from parallint.engine.registry import get_registry
    from parallint.model.factrule import FactRule

    return tuple(r() for r in get_registry().rules if issubclass(r, FactRule) and r.code[:3] in ("LAY", "BAT"))


def candidate_facts(spec: dict, gpus_per_node: int | None) -> FactMap:
    """The facts of a candidate spec (normalised, with its ``parallel`` section chosen)."""
    facts = FactMap()
    par = spec.get("parallel") or {}
    for section in ("model", "parallel", "training", "hardware"):
        for key, value in (spec.get(section) or {}).items():
            fact = f"{section}.{key}"
            if fact not in FACT_KEYS or value is None or isinstance(value, (dict, list)):
                continue
            chosen = section == "parallel" and key in _CHOSEN
            facts.add(fact, Value(value, CANDIDATE if chosen else SPEC, True, "", f"plan {fact}"))
    if spec.get("framework"):
        facts.add("framework", Value(str(spec["framework"]), SPEC, True, "", "plan framework"))
    world = par.get("world_size")
    if gpus_per_node and isinstance(world, int) and world > 0:
        facts.add("parallel.gpus_per_node", Value(gpus_per_node, SPEC, True, "", "plan gpus per node"))
        facts.add("parallel.nodes", Value(-(-world // gpus_per_node), CANDIDATE, True, "", "plan nodes"))
    return facts


#: the frameworks whose rules a layout must pass when the job does not name its framework (the
#: layout rules are framework-specific: an uneven pipeline split is Megatron's error, ZeRO-2/3
#: with a pipeline DeepSpeed's); ``set()`` runs the rules that hold everywhere
ANY_FRAMEWORK: tuple[frozenset[str], ...] = (frozenset(), frozenset({"megatron"}), frozenset({"deepspeed"}),
                                             frozenset({"torchtitan"}))


def rules_accept(spec: dict, gpus_per_node: int | None = None) -> bool:
    """True when no layout rule reports a finding that involves the candidate's choices: under the
    job's framework when the spec names one, else under each of :data:`ANY_FRAMEWORK`."""
    from parallint.model.factrule import View, world_of

    facts = candidate_facts(spec, gpus_per_node)
    gpn = facts.get("parallel.gpus_per_node")
    world = world_of(facts)
    named = {str(v.value) for v in facts.known("framework")}
    for frameworks in ([named] if named else ANY_FRAMEWORK):
        view = View(facts, world, set(frameworks), None, gpn, set(), {})
        for rule in layout_rules():
            for finding in rule.findings(view):
                if any(v.span == CANDIDATE for v in finding.involved()):
                    return False
    return True


def plan(spec: dict, gpus: int, gpu: str | None = None, headroom: float = 0.9, gpus_per_node: int | None = None,
         pareto: bool = True, zero_stages: tuple[int, ...] | None = None) -> list[Any]:
    """:func:`parallint.estimator.plan.plan` with the layout rules as its filter."""
    from parallint.estimator.plan import plan as enumerate_layouts

    return enumerate_layouts(spec, gpus, gpu, headroom, gpus_per_node, pareto, zero_stages, accept=rules_accept)
