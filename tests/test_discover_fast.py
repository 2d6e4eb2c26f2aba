"""Discovery decides exclusions once per folder (parallint.discover.walk.Excluder.excluded); the
verdicts must be those of the reference that tries every pattern on the whole path
(Excluder.excluded_slow), for any patterns a .gitignore or the configuration may hold."""

from __future__ import annotations

import random
from pathlib import Path

from parallint.discover.walk import Excluder, discover

NAMES = ["a", "b", "build", "docs", "src", "x.py", "y.md", "keep.md", "ab", "ba", "a.b", "[x]", "tests", "t_1.py"]
PIECES = ["a", "b", "*", "?", "**", "build", "docs", "*.py", "*.md", "!", "[ab]", "[!a]", "a*", "*b", "*a*",
          "x.py", "\\*", "[z-a]"]


def _pattern(rng: random.Random) -> str:
    segs = [rng.choice(PIECES).lstrip("!") for _ in range(rng.randint(1, 3))]
    p = "/".join(segs)
    if rng.random() < 0.3:
        p = "/" + p
    if rng.random() < 0.3:
        p += "/"
    if rng.random() < 0.2:
        p = "!" + p
    return p


def _tree(root: Path, rng: random.Random, depth: int = 0) -> None:
    for name in rng.sample(NAMES, 5):
        p = root / name
        if depth < 3 and "." not in name and rng.random() < 0.6:
            p.mkdir(exist_ok=True)
            _tree(p, rng, depth + 1)
        elif not p.exists():
            p.write_text("x\n")
    if rng.random() < 0.4:
        (root / ".gitignore").write_text("\n".join(_pattern(rng) for _ in range(rng.randint(1, 6))) + "\n")


def _verdicts(root: Path, base: Path, config: list[str], git: bool,
              deepest_first: bool = False) -> list[tuple[str, bool, bool]]:
    fast = Excluder(config, base, git)
    slow = Excluder(config, base, git)
    out = []
    paths = sorted(p for p in root.rglob("*") if p.name != ".gitignore")
    if deepest_first:  # as the link index asks: a few deep files, in no walk's order
        paths.sort(key=lambda p: -len(p.parts))
    for p in paths:
        d = p.is_dir()
        out.append((str(p.relative_to(root)), fast.excluded(p, d), slow.excluded_slow(p, d)))
    return out


def test_per_folder_verdicts_are_the_reference_verdicts(tmp_path):
    rng = random.Random(12)
    checked = excluded = 0
    for i in range(25):
        root = tmp_path / f"t{i}" / "repo"
        root.mkdir(parents=True)
        if i % 3:
            (root / ".git").mkdir()
        _tree(root, rng)
        config = [_pattern(rng) for _ in range(rng.randint(0, 4))]
        for base in (root, root.parent, root / "a"):
            for git in (True, False):
                for rel, got, want in _verdicts(root, base, config, git):
                    assert got == want, (i, rel, str(base), config, git)
                    checked += 1
                    excluded += got
    assert checked > 1000 and 0 < excluded < checked  # the trees exercise both answers


def test_a_walk_honours_an_edited_gitignore_in_the_same_process(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / "a.py").write_text("x\n")
    (tmp_path / "b.py").write_text("x\n")
    names = lambda: sorted(c.display for c in discover(["."], Excluder([], tmp_path), tmp_path, []))  # noqa: E731
    assert names() == ["a.py", "b.py"]
    (tmp_path / ".gitignore").write_text("a.py\n")
    assert names() == [".gitignore", "b.py"]


def test_verdicts_asked_deepest_first_are_the_reference_verdicts(tmp_path):
    """The link index asks about a few deep files in no order: each folder is then worked out from
    its parents, and must still give the reference verdicts."""
    rng = random.Random(7)
    checked = excluded = 0
    for i in range(20):
        root = tmp_path / f"t{i}" / "repo"
        root.mkdir(parents=True)
        if i % 2:
            (root / ".git").mkdir()
        _tree(root, rng)
        config = [_pattern(rng) for _ in range(rng.randint(0, 4))]
        for base in (root, root.parent):
            for git in (True, False):
                for rel, got, want in _verdicts(root, base, config, git, deepest_first=True):
                    assert got == want, (i, rel, str(base), config, git)
                    checked += 1
                    excluded += got
    assert checked > 500 and 0 < excluded < checked


def test_the_repository_root_of_each_folder_is_found_as_a_walk_up_finds_it(tmp_path):
    """Excluder keeps each folder's repository root once it was found from a folder below; nested
    repositories (a vendored checkout) keep their own root."""
    from parallint.discover.walk import _git_root

    rng = random.Random(3)
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / ".git").mkdir()
    _tree(outer, rng)
    folders = sorted((p for p in outer.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    (folders[len(folders) // 2] / ".git").mkdir()  # a nested repository
    folders = sorted((p for p in outer.rglob("*") if p.is_dir() and p.name != ".git"), key=lambda p: -len(p.parts))
    exc = Excluder([], outer)
    got = {p: exc._root(p) for p in folders + [tmp_path]}
    assert got == {p: _git_root(p) for p in folders + [tmp_path]}
    assert len(set(got.values())) >= 2  # both repositories were met
