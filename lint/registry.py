"""The rule registry: every :class:`Rule` subclass defined in the modules of ``parallint.rules``,
plus third-party rules registered under the entry-point group ``parallint.rules``.

An entry point may name a module (all Rule subclasses defined in it), a Rule subclass, or a list
of them. Codes and names must be unique. Selectors (codes, prefixes such as ``DDP`` or ``LAY0``,
rule names, ``ALL``) are resolved here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from types import ModuleType
from typing import Iterable

from parallint.rule import DOC_SECTIONS, Rule

CODE_RE = re.compile(r"^[A-Z]{2,5}[0-9]{3}$")
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


class RegistryError(Exception):
    pass


class UnknownSelector(Exception):
    pass


def _rules_in(module: ModuleType) -> list[type[Rule]]:
    out = []
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__ and obj.code:
            out.append(obj)
    return out


def _builtin_modules() -> list[ModuleType]:
    import parallint.rules as pkg

    mods = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            mods.append(importlib.import_module(f"parallint.rules.{info.name}"))
    return mods


def _plugin_entry_points() -> list:
    """Entry points of the group ``parallint.rules`` from installed distributions only: a
    ``*.dist-info`` folder in the working directory (a repository being checked) is not a plugin."""
    import os
    import sys
    from importlib.metadata import distributions

    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    path = [p for p in sys.path if p not in ("", ".") and (cwd is None or os.path.realpath(p) != cwd)]
    out, seen = [], set()
    for dist in distributions(path=path):
        for ep in dist.entry_points:
            if ep.group == "parallint.rules" and (ep.name, ep.value) not in seen:
                seen.add((ep.name, ep.value))
                out.append(ep)
    return out


def _entry_point_rules() -> list[type[Rule]]:
    out: list[type[Rule]] = []
    for ep in _plugin_entry_points():
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin must not take the linter down
            raise RegistryError(f"cannot load rule plugin '{ep.name}' ({ep.value}): {exc}") from None
        items = obj if isinstance(obj, (list, tuple)) else [obj]
        for item in items:
            if isinstance(item, ModuleType):
                out.extend(_rules_in(item))
            elif inspect.isclass(item) and issubclass(item, Rule):
                out.append(item)
            else:
                raise RegistryError(f"rule plugin '{ep.name}' ({ep.value}) is not a Rule, list or module")
    return out


def check_rule_class(cls: type[Rule]) -> list[str]:
    """Problems with a rule's declaration (used by the registry and by the test suite)."""
    problems = []
    if not CODE_RE.match(cls.code or ""):
        problems.append(f"{cls.__name__}: code {cls.code!r} is not like ABC123")
    if not NAME_RE.match(cls.name or ""):
        problems.append(f"{cls.code}: name {cls.name!r} is not kebab-case")
    if not cls.summary:
        problems.append(f"{cls.code}: no summary")
    heads = re.findall(r"^## (.+?)\s*$", inspect.cleandoc(cls.doc or ""), re.M)
    if tuple(heads) != DOC_SECTIONS:
        problems.append(f"{cls.code}: doc sections {heads} != {list(DOC_SECTIONS)}")
    return problems


def check_declarations(cls: type[Rule]) -> list[str]:
    """Unknown names in what a rule declares it needs: file kinds, call groups, facts."""
    from parallint.classify import KINDS
    from parallint.model.vocab import FACT_KEYS
    from parallint.model.script import GROUPS

    problems = []
    for kind in sorted(set(cls.kinds) - KINDS):
        problems.append(f"{cls.code}: unknown file kind {kind!r} in kinds (known: {', '.join(sorted(KINDS))})")
    for call in sorted(cls.calls):
        if "." not in call and call not in GROUPS:
            problems.append(f"{cls.code}: unknown call group {call!r} in calls (known: {', '.join(sorted(GROUPS))}; "
                            f"or a qualified name such as torch.distributed.barrier)")
    for key in sorted(set(cls.facts) - FACT_KEYS):
        problems.append(f"{cls.code}: unknown fact {key!r} in facts (see parallint.model.vocab)")
    if isinstance(cls.needles, str):
        problems.append(f"{cls.code}: needles must be a tuple of words, not a string")
    return problems


class Registry:
    def __init__(self, rules: Iterable[type[Rule]]) -> None:
        self.rules: list[type[Rule]] = sorted(rules, key=lambda r: r.code)
        problems = [p for r in self.rules for p in check_declarations(r)]
        if problems:
            raise RegistryError("; ".join(problems))
        by_code: dict[str, type[Rule]] = {}
        by_name: dict[str, type[Rule]] = {}
        for r in self.rules:
            if r.code in by_code and by_code[r.code] is not r:
                raise RegistryError(f"rule code {r.code} defined twice ({by_code[r.code].__module__}, {r.__module__})")
            if r.name in by_name and by_name[r.name] is not r:
                raise RegistryError(f"rule name {r.name} defined twice ({by_name[r.name].code}, {r.code})")
            by_code[r.code] = r
            by_name[r.name] = r
        self.by_code = by_code
        self.by_name = by_name
        self.rules = list(by_code.values())

    def lookup(self, code_or_name: str) -> type[Rule] | None:
        key = code_or_name.strip()
        return self.by_code.get(key.upper()) or self.by_name.get(key.lower())

    def matches(self, selector: str) -> list[type[Rule]]:
        """Rules a selector names; raises UnknownSelector when it names none."""
        sel = selector.strip()
        if sel.upper() == "ALL":
            return list(self.rules)
        rule = self.lookup(sel)
        if rule is not None:
            return [rule]
        up = sel.upper()
        hits = [r for r in self.rules if r.code.startswith(up)] if re.match(r"^[A-Za-z]+[0-9]*$", sel) else []
        if not hits:
            raise UnknownSelector(selector)
        return hits

    def specificity(self, selector: str) -> int:
        sel = selector.strip()
        if sel.upper() == "ALL":
            return 0
        if self.lookup(sel) is not None:
            return 100
        return len(sel)

    def validate_selectors(self, selectors: Iterable[str]) -> None:
        for s in selectors:
            self.matches(s)

    def covers(self, selectors: Iterable[str], code: str) -> bool:
        """Whether any of ``selectors`` names the rule ``code`` (for noqa and per-file-ignores)."""
        for s in selectors:
            try:
                if any(r.code == code for r in self.matches(s)):
                    return True
            except UnknownSelector:
                if s.strip().upper() == code:
                    return True
        return False

    def enabled(self, select: list[str] | None, extend_select: list[str], ignore: list[str]) -> list[type[Rule]]:
        """Rules in force: the most specific selector decides (a code beats a prefix beats ALL);
        on a tie, ignore wins."""
        positive = list(select if select is not None else ["ALL"]) + list(extend_select)
        out = []
        for r in self.rules:
            best_pos = max((self.specificity(s) for s in positive if r in self.matches(s)), default=-1)
            best_neg = max((self.specificity(s) for s in ignore if r in self.matches(s)), default=-1)
            if best_pos >= 0 and best_pos > best_neg:
                out.append(r)
        return out


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    global _REGISTRY
    if _REGISTRY is None:
        rules: list[type[Rule]] = []
        for m in _builtin_modules():
            rules.extend(_rules_in(m))
        plugins = _entry_point_rules()
        rules.extend(plugins)
        _REGISTRY = Registry(rules)
        if plugins:
            from parallint.plugins import register_needles

            register_needles(plugins)
    return _REGISTRY
