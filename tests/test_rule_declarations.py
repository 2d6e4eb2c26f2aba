"""Rules declare what they need (kinds, calls, facts); registration refuses unknown names; the
Python reader's call groups and the pre-filter needles are derivable from the declarations."""

from __future__ import annotations

import ast
import inspect
import sys

import pytest

from parallint.discover.classify import PYTHON_NEEDLES
from parallint.model import calls as callmod
from parallint.model.vocab import FACT_KEYS
from parallint.model.script import GROUPS
from parallint.engine.registry import Registry, RegistryError, get_registry
from parallint.model.rule import Rule

RULES = get_registry().rules

#: what the Python reader itself matches to state facts (init_process_group(world_size=...),
#: Trainer(num_nodes=...), deepspeed.initialize(config=...)...) and its extra pre-filter words
#: (aliases and keywords). To move into readers/python.py as its declaration.
READER_GROUPS = ("init_process_group", "ddp", "fsdp", "fully_shard", "init_device_mesh", "device_mesh",
                 "accelerator", "ddp_kwargs", "ddp_strategy", "pl_trainer", "training_args", "hf_trainer",
                 "ds_initialize", "collective")
READER_NEEDLES = ("DDP", "FSDP", "sampler", "find_unused_parameters", "deepspeed", "initialize_model_parallel",
                  "torch.distributed",
                  # launchers inside the script (parallint.link.pylaunch): Ray Train, submitit, NeMo-Run, mp.spawn, Fabric
                  "ScalingConfig", "update_parameters", "nemo_run", "mp.spawn", "Fabric",
                  # TorchX components (parallint.readers.torchx)
                  "torchx")


def test_every_rule_declares_only_known_names():
    from parallint.engine.registry import check_declarations

    assert [p for r in RULES for p in check_declarations(r)] == []


@pytest.mark.parametrize("attr,value,words", [
    ("kinds", frozenset({"pyhton"}), "unknown file kind 'pyhton'"),
    ("calls", frozenset({"colective"}), "unknown call group 'colective'"),
    ("facts", frozenset({"parallel.tensor_parallel"}), "unknown fact 'parallel.tensor_parallel'"),
])
def test_registration_fails_loudly_on_a_typo(attr, value, words):
    class Typo(Rule):
        code = "TYP001"
        name = "typo"
        summary = "x"

    setattr(Typo, attr, value)
    with pytest.raises(RegistryError, match=words):
        Registry([Typo])


def test_a_qualified_name_is_a_valid_call_declaration():
    class Qual(Rule):
        code = "QUA001"
        name = "qual"
        summary = "x"
        calls = frozenset({"torch.distributed.barrier"})

    Registry([Qual])


def _used(cls) -> tuple[set[str], set[str]]:
    """Call groups and fact keys a rule class names: its body and the module functions and classes
    it reaches (statically)."""
    module = sys.modules[cls.__module__]
    tree = ast.parse(inspect.getsource(module))
    top = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    todo, seen, strings = [top[cls.__name__]], {cls.__name__}, set()
    while todo:
        node = todo.pop()
        for n in ast.walk(node):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 60:
                strings.add(n.value)
            name = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
            if name in top and name not in seen:
                seen.add(name)
                todo.append(top[name])
    return strings & set(GROUPS), strings & FACT_KEYS


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_declarations_cover_what_the_rule_uses(rule):
    groups, facts = _used(rule)
    assert groups <= set(rule.calls), f"{rule.code}: add {sorted(groups - set(rule.calls))} to calls"
    assert facts <= set(rule.facts), f"{rule.code}: add {sorted(facts - set(rule.facts))} to facts"


def test_derived_groups_are_the_ones_rules_and_reader_use():
    used = callmod.declared_calls(RULES, READER_GROUPS)
    derived = callmod.derive_groups(GROUPS, used)
    for r in RULES:
        for c in r.calls:
            assert c in derived or "." in c
    assert set(derived) <= set(GROUPS)


def test_derived_needles_cover_the_handwritten_prefilter():
    """Every Python file the hand-written PYTHON_NEEDLES let through, the derived needles let
    through too (each hand-written word contains a derived one)."""
    derived = callmod.derive_needles(GROUPS, callmod.declared_calls(RULES, READER_GROUPS), READER_NEEDLES)
    assert callmod.covers(derived, PYTHON_NEEDLES) == []
    assert "torch.save" in derived and "DistributedDataParallel" in derived


def test_needle_of_a_qualified_name():
    assert callmod.needle("torch.nn.parallel.DistributedDataParallel") == "DistributedDataParallel"
    assert callmod.needle("torch.save") == "torch.save"
    assert callmod.needle("torch.distributed.all_reduce") == "torch.distributed"
    assert callmod.derive_needles({}, ["a.LongName", "a.LongNameX"]) == ("LongName",)


def test_each_rule_is_a_file_of_its_own():
    """``rules/<family>/<code>_<name>.py``: one Rule class a module, named by its code and name, in
    the folder of its code's letters; a family's shared helpers are in its ``_common`` module."""
    from conftest import ROOT

    builtin = [r for r in RULES if r.__module__.startswith("parallint.rules.")]
    seen: dict[str, str] = {}
    for r in builtin:
        fam, _, mod = r.__module__[len("parallint.rules."):].partition(".")
        assert fam == "".join(c for c in r.code if c.isalpha()).lower(), (r.code, r.__module__)
        assert mod == f"{r.code.lower()}_{r.name.replace('-', '_')}", (r.code, r.__module__)
        assert r.__module__ not in seen, f"{r.code} and {seen.get(r.__module__)} share {r.__module__}"
        seen[r.__module__] = r.code
    files = {p for p in (ROOT / "rules").glob("*/*.py") if not p.name.startswith("_")}
    assert {f"parallint.rules.{p.parent.name}.{p.stem}" for p in files} == set(seen)
    assert not [p for p in (ROOT / "rules").glob("*.py") if p.name != "__init__.py"], "a rule module outside its family"
