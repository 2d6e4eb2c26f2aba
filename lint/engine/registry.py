"""The rule registry: every :class:`Rule` subclass defined in the modules of ``parallint.rules``,
plus third-party rules registered under the entry-point group ``parallint.rules``.

An entry point may name a module (all Rule subclasses defined in it), a Rule subclass, or a list
of them. Codes and names must be unique. Selectors (codes, prefixes such as ``DDP`` or ``LAY0``,
rule names, ``ALL``) are resolved here.

:func:`get_registry` imports every rule module. ``check`` uses :func:`lazy_registry` instead: the
built-in rules are known by their declarations (code, name, severity, ``kinds``, ``calls``, whether
they check files and jobs), read from a generated table (``parallint/data/rules_table.py``, see
:func:`declaration_table`), and a rule's module is imported only when the rule has
something to look at (:class:`RuleRef`):

* a file check, for a file of one of the rule's ``kinds`` (the runner asks for no other);
* a job check, for every job, except for a rule about scripts and launches, one that declares
  ``calls`` (calls it matches in Python scripts) or whose ``kinds`` include ``python`` or a launch
  kind (``shell``, ``makefile``, ``kube``, ``skypilot``): it can only match a job that has a launch,
  a Python file or a file of its kinds. A job of configs alone (a DeepSpeed JSON checked on its
  own) never imports the script and launch rules, nor the script model they read.

The table is checked against the rules by the test suite (regenerate it with
``PARALLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_startup.py``) and at run time against
each rule module's source (size and CRC): a module that is new or changed since the table was
written is imported as before. Plugin rules are always imported (entry points name their objects).
"""

from __future__ import annotations

import re
from types import ModuleType

from parallint.model.rule import DOC_SECTIONS, Rule

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

CODE_RE = r"^[A-Z]{2,5}[0-9]{3}$"
NAME_RE = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
TABLE = "rules_table.py"  # in parallint.data; a module: its bytecode loads without a JSON parser
#: kinds of launch files (parallint.discover.classify.LAUNCH_KINDS) and of scripts: a rule with one of them
#: (or with calls) is about launches and scripts, see :meth:`RuleRef.may_match`
_SCRIPT_OR_LAUNCH = frozenset({"python", "shell", "makefile", "kube", "skypilot"})


class RegistryError(Exception):
    pass


class UnknownSelector(Exception):
    pass


def _rules_in(module: ModuleType) -> list[type[Rule]]:
    out = []
    for _, obj in sorted(vars(module).items()):
        if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and \
                obj.__module__ == module.__name__ and obj.code:
            out.append(obj)
    return out


def _builtin_names() -> list[str]:
    """The rule modules of ``parallint.rules``, by name: ``<family>.<module>`` for each public
    module of a family folder (``ddp.ddp001_find_unused_parameters``: one rule a module), and any
    public module at the top."""
    import os

    import parallint.rules as pkg

    names: set[str] = set()
    for folder in pkg.__path__:
        try:
            entries = os.listdir(folder)
        except OSError:  # not a folder (a zipped install): ask the import system
            import pkgutil

            for fam in pkgutil.iter_modules([folder]):
                if fam.ispkg:
                    names.update(f"{fam.name}.{m.name}" for m in pkgutil.iter_modules([os.path.join(folder, fam.name)])
                                 if not m.ispkg)
                else:
                    names.add(fam.name)
            continue
        for n in entries:
            if n.endswith(".py") and n[:-3].isidentifier():
                names.add(n[:-3])
            elif n.isidentifier() and os.path.isfile(os.path.join(folder, n, "__init__.py")):
                names.update(f"{n}.{m[:-3]}" for m in os.listdir(os.path.join(folder, n))
                             if m.endswith(".py") and m[:-3].isidentifier())
    return sorted(n for n in names if not any(part.startswith("_") for part in n.split(".")))


def _source_path(name: str) -> str | None:
    """The source file of rule module ``name`` (``ddp.ddp001_...``), or None."""
    import os

    import parallint.rules as pkg

    for folder in pkg.__path__:
        path = os.path.join(folder, *name.split(".")) + ".py"
        if os.path.exists(path):
            return path
    return None


def _builtin_modules() -> list[ModuleType]:
    import importlib

    return [importlib.import_module(f"parallint.rules.{name}") for name in _builtin_names()]


def _plugin_entry_points() -> list:
    """Entry points of the group ``parallint.rules`` from installed distributions only: a
    ``*.dist-info`` folder in the working directory (a repository being checked) is not a plugin."""
    import os
    import sys

    try:
        cwd = os.path.realpath(os.getcwd())
    except OSError:
        cwd = None
    path = [p for p in sys.path if p not in ("", ".") and (cwd is None or os.path.realpath(p) != cwd)]
    from parallint.engine.plugins import may_declare

    if not may_declare("parallint.rules", path):  # the common case: no plugin installed
        return []
    from importlib.metadata import distributions

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
            elif isinstance(item, type) and issubclass(item, Rule):
                out.append(item)
            else:
                raise RegistryError(f"rule plugin '{ep.name}' ({ep.value}) is not a Rule, list or module")
    return out


def check_rule_class(cls: type[Rule]) -> list[str]:
    """Problems with a rule's declaration (used by the registry and by the test suite)."""
    problems = []
    if not re.match(CODE_RE, cls.code or ""):
        problems.append(f"{cls.__name__}: code {cls.code!r} is not like ABC123")
    if not re.match(NAME_RE, cls.name or ""):
        problems.append(f"{cls.code}: name {cls.name!r} is not kebab-case")
    if not cls.summary:
        problems.append(f"{cls.code}: no summary")
    import inspect

    heads = re.findall(r"^## (.+?)\s*$", inspect.cleandoc(cls.doc or ""), re.M)
    if tuple(heads) != DOC_SECTIONS:
        problems.append(f"{cls.code}: doc sections {heads} != {list(DOC_SECTIONS)}")
    safety = getattr(cls, "fix_safety", "")
    if safety not in ("", "safe", "unsafe", "sometimes"):
        problems.append(f"{cls.code}: fix_safety {safety!r} is not safe, unsafe, sometimes or empty")
    elif safety and (getattr(cls, "apply_fix", None) is getattr(Rule, "apply_fix") or not getattr(cls, "fix_doc", "")):
        problems.append(f"{cls.code}: fix_safety {safety!r} without its own apply_fix and fix_doc")
    return problems


def check_declarations(cls: type[Rule]) -> list[str]:
    """Unknown names in what a rule declares it needs: file kinds, call groups, facts."""
    from parallint.discover.classify import KINDS
    from parallint.model.vocab import FACT_KEYS

    problems = []
    for kind in sorted(set(cls.kinds) - KINDS):
        problems.append(f"{cls.code}: unknown file kind {kind!r} in kinds (known: {', '.join(sorted(KINDS))})")
    for call in sorted(cls.calls):
        if "." in call:
            continue
        from parallint.model.script import GROUPS

        if call not in GROUPS:
            problems.append(f"{cls.code}: unknown call group {call!r} in calls (known: {', '.join(sorted(GROUPS))}; "
                            f"or a qualified name such as torch.distributed.barrier)")
    for key in sorted(set(cls.facts) - FACT_KEYS):
        problems.append(f"{cls.code}: unknown fact {key!r} in facts (see parallint.model.vocab)")
    if isinstance(cls.needles, str):
        problems.append(f"{cls.code}: needles must be a tuple of words, not a string")
    return problems


class RuleRef:
    """A built-in rule known by its declarations (the generated table) until it has work to do.

    It stands for the rule class where ``check`` passes rules around (selection, the runner, the
    cache key, the reports): it has the class's ``code``, ``name``, ``severity``, ``summary``,
    ``kinds``, ``calls``, ``__module__`` and ``__qualname__``; anything else (``doc``, the examples,
    ``documentation()``) imports the rule's module and comes from the class. Called, it makes a
    rule instance that imports the module at its first check that can match (:meth:`may_match`).
    """

    def __init__(self, module: str, decl: dict[str, Any]) -> None:
        from parallint.model.diagnostics import Severity

        self._cls: type[Rule] | None = None
        self.__module__ = module
        self.__qualname__ = self.__name__ = str(decl["class"])
        self.code: str = decl["code"]
        self.name: str = decl["name"]
        self.severity = Severity.parse(decl["severity"])
        self.summary: str = decl["summary"]
        self.kinds: frozenset[str] = frozenset(decl["kinds"])
        self.calls: frozenset[str] = frozenset(decl["calls"])
        self.checks_files: bool = bool(decl["file"])
        self.checks_jobs: bool = bool(decl["job"])
        #: a rule about scripts and launches (see the module's docstring)
        self.scripts_or_launches = bool(self.calls) or bool(self.kinds & _SCRIPT_OR_LAUNCH)

    def load(self) -> type[Rule]:
        """The rule class (its module imported now if it was not)."""
        if self._cls is None:
            import importlib

            cls = getattr(importlib.import_module(self.__module__), self.__qualname__)
            assert isinstance(cls, type) and issubclass(cls, Rule) and cls.code == self.code, self.code
            self._cls = cls
        return self._cls

    def may_match(self, job: Any) -> bool:
        """Whether the rule's job check can find anything in ``job`` (False: it is not imported)."""
        if not self.checks_jobs:
            return False
        if not self.scripts_or_launches or getattr(job, "launch", None) is not None:
            return True
        return any(f.kind == "python" or f.kind in self.kinds for f in getattr(job, "files", ()))

    def __call__(self) -> "_Deferred":
        return _Deferred(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_cls":
            raise AttributeError(name)
        return getattr(self.load(), name)

    def __repr__(self) -> str:
        return f"<rule {self.code} ({self.__module__}.{self.__qualname__}, not imported yet)>" \
            if self._cls is None else repr(self._cls)


class _Deferred:
    """An instance of a :class:`RuleRef`'s rule, made when a check first needs it. The runner calls
    ``check_file`` only for files of the rule's kinds; ``check_job`` asks :meth:`RuleRef.may_match`."""

    def __init__(self, ref: RuleRef) -> None:
        self.ref = ref
        self.code, self.name, self.kinds, self.severity = ref.code, ref.name, ref.kinds, ref.severity
        self._rule: Rule | None = None

    def rule(self) -> Rule:
        if self._rule is None:
            self._rule = self.ref.load()()
        return self._rule

    def check_file(self, f: Any, ctx: Any) -> Iterable[Any]:
        if not self.ref.checks_files or f.kind not in self.kinds:
            return ()
        return self.rule().check_file(f, ctx)

    def check_job(self, job: Any, ctx: Any) -> Iterable[Any]:
        if not self.ref.may_match(job):
            return ()
        return self.rule().check_job(job, ctx)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("ref", "_rule"):
            raise AttributeError(name)
        return getattr(self.rule(), name)


class Registry:
    def __init__(self, rules: Iterable[type[Rule]]) -> None:
        self.rules: list[type[Rule]] = sorted(rules, key=lambda r: r.code)
        # a RuleRef's declarations were checked when the table was written (tests/test_startup.py)
        problems = [p for r in self.rules if not isinstance(r, RuleRef) for p in check_declarations(r)]
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
_LAZY: Registry | None = None
_PLUGINS: list[type[Rule]] | None = None


def _plugins() -> list[type[Rule]]:
    """The plugin rules (loaded once; their needles join the pre-filter)."""
    global _PLUGINS
    if _PLUGINS is None:
        _PLUGINS = _entry_point_rules()
        if _PLUGINS:
            from parallint.engine.plugins import register_needles

            register_needles(_PLUGINS)
    return _PLUGINS


def get_registry() -> Registry:
    """Every rule, built-in and plugin, as its class (every rule module imported)."""
    global _REGISTRY
    if _REGISTRY is None:
        rules: list[type[Rule]] = []
        for m in _builtin_modules():
            rules.extend(_rules_in(m))
        rules.extend(_plugins())
        _REGISTRY = Registry(rules)
    return _REGISTRY


def lazy_registry() -> Registry:
    """Every rule, the built-in ones as :class:`RuleRef` where the declaration table is current
    for their module (else as the class): what ``check`` selects from and runs."""
    global _LAZY
    if _REGISTRY is not None:
        return _REGISTRY
    if _LAZY is None:
        rules: list[Any] = []
        for name in _builtin_names():
            refs = _refs(name)
            if refs is None:
                import importlib

                rules.extend(_rules_in(importlib.import_module(f"parallint.rules.{name}")))
            else:
                rules.extend(refs)
        rules.extend(_plugins())
        _LAZY = Registry(rules)
    return _LAZY


_TABLE: dict | None = None


def _table() -> dict:
    global _TABLE
    if _TABLE is None:
        try:
            from parallint.data.rules_table import MODULES
        except ImportError:  # an install without it: every rule module is imported
            MODULES = {}
        _TABLE = MODULES if isinstance(MODULES, dict) else {}
    return _TABLE


def _source_stamp(data: bytes) -> str:
    from binascii import crc32  # zlib's CRC-32; binascii is loaded already (base64, yaml)

    return f"{len(data)}:{crc32(data):08x}"  # a check that the table is current, not a security one


def _refs(name: str) -> list[RuleRef] | None:
    """The RuleRefs of rule module ``name``, or None when the table does not describe its current
    source (a module added or edited since the table was written; an install without sources)."""
    entry = _table().get(name)
    if not isinstance(entry, dict):
        return None
    path = _source_path(name)
    if path is None:
        return None
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if _source_stamp(data) != entry.get("source"):
        return None
    try:
        return [RuleRef(f"parallint.rules.{name}", d) for d in entry["rules"]]
    except (KeyError, TypeError, ValueError):
        return None


def declaration_table() -> str:
    """``parallint/data/rules_table.py``: every built-in rule's declarations, by module, with the
    stamp of the module's source it was made from (tests/test_startup.py keeps it current)."""
    modules = {}
    for mod in _builtin_modules():
        name = mod.__name__[len("parallint.rules."):]
        path = _source_path(name)
        assert path is not None, name
        with open(path, "rb") as fh:
            stamp = _source_stamp(fh.read())
        modules[name] = {"source": stamp, "rules": [
            {"class": r.__qualname__, "code": r.code, "name": r.name, "severity": str(r.severity),
             "summary": r.summary, "kinds": sorted(r.kinds), "calls": sorted(r.calls),
             "file": r.check_file is not Rule.check_file, "job": r.check_job is not Rule.check_job}
            for r in sorted(_rules_in(mod), key=lambda r: r.code)]}
    parts = []
    for name, entry in modules.items():
        rules = "".join(f"        {d!r},\n" for d in entry["rules"])
        parts.append(f"    {name!r}: {{'source': {entry['source']!r}, 'rules': [\n{rules}    ]}},\n")
    return ('"""The rules in parallint.rules, generated: do not edit (regenerate: PARALLINT_UPDATE_SNAPSHOTS=1\n'
            'python -m pytest tests/test_startup.py)."""\n\nMODULES: dict[str, dict] = {\n' + "".join(parts) + "}\n")
