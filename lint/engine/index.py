"""Whole jobs from any entry point: the reverse index of links.

A hook, an editor or ``--stdin-filename`` gives parallint a few files, but its cross-file findings
live in *jobs*: a launch file, the script it starts and the configs they name. To check a file as
the whole repository would, parallint finds the repository root, then every file whose links name
the given file (a launch file naming a script, a script naming its DeepSpeed JSON, a declared
``[[tool.parallint.links]]``), and the files naming those, up to a fixed point. Checking the given
files together with those referrers builds exactly the jobs that include a given file, so the
findings located in the given files are the ones a whole-repository run reports there.

Finding referrers cheaply: only the files that contain a *needle* of a wanted file (its name, its
stem for ``-m`` modules and ``${NAME}.json``, the package name of a ``__main__.py``) as a word are
parsed; their links are resolved exactly as the linker does. Which file holds which needle is kept
between runs (:class:`TreeIndex`: the first run reads every file under the root, later runs only
the files whose stat signature changed), and the links a file states are cached by content hash
(``.parallint_cache/`` at the root, or ``$PARALLINT_CACHE_DIR``), so a second run parses only the
files that changed.

A file named only through a computed name (``ds_${STAGE}.json``) is not found as a referrer; check
the launch file (or the folder) to get its job.
"""

from __future__ import annotations

try:  # hashlib.blake2b is _blake2's; importing hashlib also starts OpenSSL (milliseconds per run)
    import _blake2 as hashlib
except ImportError:  # pragma: no cover - another Python implementation
    import hashlib  # type: ignore[no-redef]
import os
from functools import lru_cache
from pathlib import Path

from parallint.model.facts import Value
from parallint.util.boundary import find_root  # noqa: F401 - the repository a path belongs to (used here and imported from here)

TYPE_CHECKING = False  # typing is not imported at run time (start-up, docs/architecture.md)
if TYPE_CHECKING:
    from typing import Any, Iterable

CACHE_DIR_NAME = ".parallint_cache"
CACHE_FORMAT = 1
MAX_ROUNDS = 8  # referrer levels (the linker follows 3; a fixed point comes far sooner)
MAX_INDEX_FILES = 100_000
#: bytes of the files read by a refresh that a run keeps for its link cache misses
RAW_BYTES = 16 * 1024 * 1024


@lru_cache(maxsize=1024)
def needles(path: Path) -> set[bytes]:
    """Byte strings one of which any file naming ``path`` contains."""
    out = {path.name}
    if path.suffix and len(path.stem) >= 3:
        out.add(path.stem)  # `-m pkg.train`, `${NAME}.json`
    if path.name in ("__main__.py", "__init__.py") and path.parent.name:
        out.add(path.parent.name)  # `-m pkg`
    return {n.encode("utf-8", "surrogateescape") for n in out if n}


def cache_dir(root: Path) -> Path:
    env = os.environ.get("PARALLINT_CACHE_DIR")
    if env:
        key = hashlib.blake2b(str(root).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
        return Path(env) / key
    return root / CACHE_DIR_NAME



def walk_once(top: Path, visited: set, followlinks: bool = False):
    """A walk of ``top`` (``util.fswalk``: no recursion, at most 256 levels) that enters each
    directory once (``visited`` holds (device, inode); symlink loops and bind mounts end there)
    and skips unreadable ones. Yields (folder, dirnames,
    filenames); prune by editing dirnames in place, as with ``os.walk``."""
    from parallint.util.fswalk import walk

    for dirpath, dirnames, filenames in walk(top, followlinks=followlinks):
        try:
            st = os.stat(dirpath)
        except OSError:
            dirnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in visited:
            dirnames[:] = []
            continue
        visited.add((st.st_dev, st.st_ino))
        yield Path(dirpath), dirnames, filenames

class LinkCache:
    """Content hash -> the links the file states ([raw value, is_module] pairs)."""

    def __init__(self, root: Path, enabled: bool = True) -> None:
        from parallint import __version__

        self.enabled = enabled
        self.path = cache_dir(root) / "links.json"
        self.tag = f"{CACHE_FORMAT}:{__version__}"
        self.data: dict[str, list] = {}
        self.dirty = False
        self.used: set[str] = set()
        # The index decides which files a one-file check also reads: like the cache's entries it
        # is signed with the user's private key, and an unsigned or forged one is never trusted
        # (a committed ``.parallint_cache/links.json`` must not hide a launcher's findings).
        from parallint.engine.cache import user_key

        self.key = user_key() if enabled else None
        from parallint.engine.cache import folder_ok

        if self.key is None or not folder_ok(self.path.parent):
            self.enabled = False
        if self.enabled:
            from parallint.util.safeio import read_regular

            raw_bytes = read_regular(self.path, nofollow=True)
            payload = self._verified(raw_bytes) if raw_bytes is not None else None
            if payload is not None:
                try:
                    import json  # only when there is an index to read

                    raw = json.loads(payload.decode("utf-8"))
                    if isinstance(raw, dict) and raw.get("tag") == self.tag and isinstance(raw.get("files"), dict):
                        self.data = raw["files"]
                except (ValueError, RecursionError):
                    pass

    def _mac(self, payload: bytes) -> bytes:
        from parallint.engine.cache import _MAC, hashlib

        assert self.key is not None
        return hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()

    def _verified(self, raw: bytes) -> bytes | None:
        """The index's JSON when its signature is this user's, else None."""
        try:  # hmac.compare_digest itself (importing hmac starts OpenSSL)
            from _operator import _compare_digest as compare_digest
        except ImportError:  # pragma: no cover - other Pythons
            from hmac import compare_digest  # type: ignore[no-redef]

        from parallint.engine.cache import _MAC

        mac, payload = raw[:_MAC], raw[_MAC:]
        if len(mac) != _MAC or not compare_digest(mac, self._mac(payload)):
            return None
        return payload

    def get(self, digest: str) -> list | None:
        hit = self.data.get(digest)
        if hit is not None:
            self.used.add(digest)
        return hit

    def put(self, digest: str, links: list) -> None:
        self.data[digest] = links
        self.used.add(digest)
        self.dirty = True

    def save(self) -> None:
        if not (self.enabled and self.dirty):
            return
        from parallint.engine.cache import _ignore_file, folder_ok

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not folder_ok(self.path.parent):
                return  # made a link since the run began: write nothing
            _ignore_file(self.path.parent)
            # keep what this run used plus older entries, bounded
            keep = dict(self.data)
            if len(keep) > 4 * MAX_INDEX_FILES:
                keep = {k: v for k, v in keep.items() if k in self.used}
            import json

            from parallint.util.safeio import replace_bytes

            payload = json.dumps({"tag": self.tag, "files": keep}, separators=(",", ":")).encode("utf-8")
            replace_bytes(self.path, self._mac(payload) + payload, ".links.")
        except OSError:
            pass  # a read-only checkout still works, only slower


def stated_links(f) -> list[list]:
    """The links a file states, as the linker reads them: [value, is_module] pairs."""
    out: list[list] = []
    for launch in f.launches:
        if launch.script is not None and launch.script.known and isinstance(launch.script.value, str):
            out.append([launch.script.value, bool(launch.is_module)])
        for link in launch.links:
            if link is not launch.script and link.known and isinstance(link.value, str):
                out.append([link.value, False])
    for link in f.links:
        if link.known and isinstance(link.value, str):
            out.append([link.value, False])
    entry = getattr(f.data, "cli_entry", None) if f.kind == "python" else None
    if entry is not None and entry.kind == "hydra" and entry.config_path:
        # the primary config a Hydra entry script loads (its launch line's overrides reach a NeMo
        # YAML through it: parallint.link.hydralaunch)
        name = entry.config_path
        out.append([name if name.endswith((".yaml", ".yml")) else name + ".yaml", False])
    return out


def resolve_all(links: Iterable[list], abspath: Path) -> set[Path]:
    from parallint.link.jobs import repo_root, resolve_link

    base = abspath.parent
    root = repo_root(base)
    out = set()
    for raw, module in links:
        p = resolve_link(Value(raw), base, root, module=module)
        if p is not None:
            out.add(p)
    return out


class ReverseIndex:
    """Who names whom below one root, computed lazily for the files asked about, from the kept
    :class:`TreeIndex` (which file contains which needle) and the link cache."""

    def __init__(self, runner, root: Path, use_cache: bool = True, tree: "TreeIndex | None" = None) -> None:
        self.runner = runner
        self.root = root
        self.cache = LinkCache(root, use_cache)
        self._exc = None
        self.parsed = 0  # files parsed to learn their links (cache misses)
        conf = self._conf()
        self.tree = tree if tree is not None and tree.conf == conf else TreeIndex(root, conf, self.cache.enabled)
        self._raw: dict[str, bytes] = {}  # files read this run (changed ones), by path below the root
        self._fresh = False  # the tree index is refreshed once per run

    def _conf(self) -> str:
        from parallint.engine.cache import canonical

        cfg = self.runner.config
        return canonical([str(self.root), str(cfg.base), list(cfg.exclude), bool(cfg.get("respect-gitignore", True)),
                          min(self.runner.max_bytes, 4 * 1024 * 1024), MAX_INDEX_FILES])

    def _bytes(self, rel: str) -> bytes | None:
        """The bytes of a file of the index (read only when this run needs them: a link cache miss)."""
        raw = self._raw.get(rel)
        if raw is None:
            from parallint.util.safeio import read_regular

            ap = self.root / rel
            buf = self.runner.stdin.get(ap)
            raw = buf.encode("utf-8", "surrogateescape") if buf is not None else \
                read_regular(ap, min(self.runner.max_bytes, 4 * 1024 * 1024))
        return raw

    def _excluder(self):
        if self._exc is None:
            kept = self.tree.excluder if getattr(self.runner, "kept", None) is not None else None
            if kept is not None and _excluder_holds(kept[1]):
                self._exc = kept[0]  # its .gitignore files and repository roots are unchanged
                return self._exc
            from parallint.discover.walk import Excluder

            cfg = self.runner.config
            self._exc = Excluder(cfg.exclude, cfg.base, cfg.get("respect-gitignore", True))
        return self._exc

    def _keep_excluder(self) -> None:
        """The language server: keep this run's Excluder with the tree (see :func:`_excluder_holds`)."""
        exc = self._exc
        self.tree.excluder = None
        if exc is None or getattr(self.runner, "kept", None) is None:
            return
        import time

        from parallint.util.deps import RACY_NS, stat_signature

        soon = time.time_ns() - RACY_NS
        seen: list = []
        for folder in list(exc._ignores):
            sig = stat_signature(os.path.join(folder, ".gitignore"))
            if sig is not None and sig[0] >= soon:
                return  # changed a moment ago: not trusted
            seen.append((os.path.join(folder, ".gitignore"), sig))
        seen.extend((start, ("root", root)) for start, root in list(exc._roots.items()))
        self.tree.excluder = (exc, seen)

    def _kept(self, ap: Path) -> bool:
        """Whether a walk of the root keeps this file (configured excludes, .gitignore); asked
        only for the few files that contain a needle."""
        return not self._excluder().excluded(ap, False)

    def _listing(self) -> "list[Path] | list[str]":
        # the tree as discovery walks it (configured excludes, the .gitignore files), not as git
        # lists it: a file git alone hides (.git/info/exclude, a global excludes file) is checked
        # by the whole-tree run, so its jobs must be found from here too; and no git process runs
        # in the checked tree
        excluder = self._excluder()
        from parallint.util.boundary import Boundary

        inside = Boundary()
        inside.add(self.root)
        out = []
        try:
            device = os.stat(self.root).st_dev
        except OSError:
            return []

        def same_device(p: Path) -> bool:  # a mount point (/proc, /sys, a network share) is not walked
            try:
                return os.stat(p).st_dev == device
            except OSError:
                return False

        tree = getattr(self, "tree", None)
        if tree is not None:
            return tree.walk(excluder, inside, same_device)
        for d, dirnames, filenames in walk_once(self.root, set(), followlinks=True):
            dirnames[:] = sorted(x for x in dirnames if not excluder.excluded(d / x, True)
                                 and (not os.path.islink(d / x) or inside.holds(d / x)) and same_device(d / x))
            out.extend(d / fn for fn in sorted(filenames))
        return out

    def links_of(self, abspath: Path, rel: str, names: set[bytes]) -> set[Path]:
        tree = self.tree
        digest = tree.digest(rel) + ":" + abspath.name
        links = self.cache.get(digest)
        if links is None:
            if abspath.suffix == ".py" and not any(tree.holds(rel, n) for n in names) and \
                    b"hydra" not in (self._bytes(rel) or b""):
                # Python names files by path only (`config="ds.json"`); a stem alone (a module
                # name in a launch line) is not a link there, and LibCST is the costly parse; a
                # Hydra entry names its config by stem (config_name="x")
                return set()
            self.parsed += 1
            f = self.runner.read(abspath)
            if f is None and abspath.suffix == ".py" and b"hydra" in (self._bytes(rel) or b""):
                f = self.runner.read(abspath, launched=True)  # a Hydra entry: read as its launch reads it
            links = stated_links(f) if f is not None else []
            self.cache.put(digest, links)
        return resolve_all(links, abspath)

    def _imports(self, abspath: Path, rel: str, frontier: set[Path]) -> bool:
        """Whether the Python file ``abspath`` imports one of the Python files of ``frontier``
        (a helper module's launch is found through the entry script that imports it, see
        :mod:`parallint.link.imports`). The import statements are kept in the index by content
        hash, as links are; they are resolved again each time (files may have moved)."""
        if abspath.suffix != ".py" or not self.tree.holds(rel, b"import"):
            return False
        wanted = {t for t in frontier if t.suffix == ".py"}
        if not wanted:
            return False
        from parallint.link.imports import imported_files, import_statements

        key = "imports:" + self.tree.digest(rel)
        stated = self.cache.get(key)
        if not isinstance(stated, list):
            raw = self._bytes(rel)
            stated = [[m, lv] for m, lv in import_statements(raw)] if raw is not None else []
            self.cache.put(key, stated)
        pairs = [(m, lv) for m, lv in (x for x in stated if isinstance(x, list) and len(x) == 2)
                 if isinstance(m, str) and isinstance(lv, int)]
        return bool(imported_files(abspath, pairs) & wanted)

    def referrers(self, targets: set[Path]) -> set[Path]:
        """Files below the root whose jobs can include one of ``targets`` (transitively). None for a
        root that is the file system's own (``--stdin-filename /``, a file in no repository at the
        top): that walk would be the whole machine, /proc and /sys included."""
        if self.root.parent == self.root:
            return set()
        declared = self._declared()
        tree = self.tree
        if not self._fresh:
            tree.refresh(self)
            self._fresh = True
        found: set[Path] = set()
        frontier = set(targets)
        for _ in range(MAX_ROUNDS):
            if not frontier:
                break
            wanted = set().union(*(needles(t) for t in frontier))
            names = {t.name.encode("utf-8", "surrogateescape") for t in frontier}
            new: set[Path] = set()
            stop = getattr(self.runner, "stop", None)
            for rel in sorted(tree.containing(wanted, self)):
                if stop is not None and stop():
                    from parallint.engine.runner import Stopped

                    raise Stopped
                abspath = self.root / rel
                if abspath in found or abspath in targets:
                    continue
                # the exclusion is decided first only when learning the links means parsing the
                # file; otherwise only for the few files that do name the frontier
                known = self.cache.get(tree.digest(rel) + ":" + abspath.name) is not None
                if not known and not self._kept(abspath):
                    continue
                if (self.links_of(abspath, rel, names) & frontier or self._imports(abspath, rel, frontier)) \
                        and (not known or self._kept(abspath)):
                    new.add(abspath)
            for launch, files in declared:
                if launch not in found and launch not in targets and files & frontier:
                    new.add(launch)
            found |= new
            frontier = new
        self.cache.save()
        tree.save()
        self._keep_excluder()
        return found

    def _declared(self) -> list[tuple[Path, set[Path]]]:
        cfg = self.runner.config
        out = []
        for entry in cfg.get("links", []) or []:
            if entry.get("launch"):
                out.append(((cfg.base / entry["launch"]).resolve(),
                            {(cfg.base / p).resolve() for p in entry.get("files", [])}))
        return out


def _excluder_holds(seen: list) -> bool:
    """Whether the .gitignore files a kept Excluder read are unchanged (stat signature, or still
    missing) and each folder it asked about still has the same repository root."""
    from parallint.discover.walk import _git_root
    from parallint.util.deps import stat_signature

    for path, was in seen:
        if isinstance(was, tuple) and was[:1] == ("root",):
            if _git_root(path) != was[1]:
                return False
        elif stat_signature(path) != was:
            return False
    return True


#: bytes that make up a word of a file's text for the index: a needle is found in a file when it
#: is one of its words, or a dotted part of one (`-m pkg.train` holds `train`); a needle with other
#: bytes (a space, `@`) is looked for as a substring
_WORD = rb"[A-Za-z0-9_.+\-\x80-\xff]+"
INDEX_NAME = "index.bin"
INDEX_FORMAT = 1
#: needles the index keeps besides the names of the tree's files
_FIXED = (b"import",)


@lru_cache(maxsize=1)
def _word_re():
    import re

    return re.compile(_WORD)


def words_of(raw: bytes) -> set[bytes]:
    """The words of ``raw`` and their dotted parts (``a.b.c`` gives a, b, c, a.b, b.c)."""
    out: set[bytes] = set()
    for t in set(_word_re().findall(raw)):
        out.add(t)
        if b"." in t:
            parts = t.split(b".")
            out.update(parts)
            for i in range(1, len(parts)):
                out.add(b".".join(parts[i:]))
                out.add(b".".join(parts[:i]))
    return out


def _plain(n: bytes) -> bool:
    m = _word_re().fullmatch(n)
    return m is not None


class TreeIndex:
    """Which file below a root contains which needle, kept between runs (issue 27).

    Built once (the first one-file check of a repository reads every file under it, as a run
    without the index did each time) and kept in the cache folder, signed as the cache's entries
    are (marshal, read only after its signature is checked). Each later run takes the tree's listing and each file's stat signature; only a file whose
    signature changed is read again, and its needles are updated. So a warm one-file check reads
    no file of the tree to find the files that name its target: those come from the postings here,
    their links from the link cache (by content digest), and only the files of its jobs are read.

    A needle is a name, stem or package name of a file of the tree (:func:`needles`): the postings
    hold every one of them, and a needle asked later that the index does not hold yet (a file made
    since) is looked for once in every file and then kept. A file's signature is not trusted when
    it was modified within ``RACY_NS`` of when it was read (a coarse clock could hide a later edit).
    """

    def __init__(self, root: Path, conf: str, enabled: bool = True) -> None:
        from parallint import __version__

        self.root = root
        self.prefix = str(root).rstrip(os.sep) + os.sep
        self.conf = conf
        self.tag = f"{INDEX_FORMAT}:{__version__}"
        self.path = cache_dir(root) / INDEX_NAME
        self.enabled = enabled
        self.files: dict[str, list] = {}  # path below the root -> [stat signature, content digest or None]
        self.post: dict[bytes, set[str]] = {}  # needle -> paths of the files that hold it
        self.dirs: dict[str, tuple] = {}  # folder below the root -> (stat, kept subfolders, files, racy)
        self.racy: set[str] = set()  # files read too soon after their last change to trust their stat
        self.overlay: dict[str, tuple[str, set[bytes]]] = {}  # editor buffers: (digest, words), this run
        self.dirty = False
        self.read = 0  # files of the tree read by the last refresh (tests, benchmarks)
        #: kept in memory between runs (the language server): (the Excluder, what it read)
        self.excluder: "tuple[Any, list] | None" = None
        self.key: bytes | None = None
        if enabled:
            from parallint.engine.cache import folder_ok, user_key

            self.key = user_key()
            if self.key is None or not folder_ok(self.path.parent):
                self.enabled = False
            else:
                self._load()

    # -- storage ------------------------------------------------------------------------------
    def _mac(self, payload: bytes) -> bytes:
        from parallint.engine.cache import _MAC

        assert self.key is not None
        return hashlib.blake2b(payload, key=self.key, digest_size=_MAC).digest()

    def _load(self) -> None:
        from parallint.engine.cache import _MAC, entry_ok
        from parallint.util.safeio import read_regular

        raw = read_regular(self.path, nofollow=True) if entry_ok(self.path.parent, self.path) else None
        if raw is None:
            return
        try:  # hmac.compare_digest itself (importing hmac starts OpenSSL)
            from _operator import _compare_digest as same
        except ImportError:  # pragma: no cover - other Pythons
            from hmac import compare_digest as same  # type: ignore[no-redef]
        mac, payload = raw[:_MAC], raw[_MAC:]
        if len(mac) != _MAC or not same(mac, self._mac(payload)):
            return  # not this user's: never unpickled
        import marshal  # built in: no import cost on a one-file check (pickle, tempfile: start-up)

        try:
            tag, conf, files, post, racy, dirs = marshal.loads(payload)
        except Exception:  # noqa: BLE001 - a damaged index is built again
            return
        if tag == self.tag and conf == self.conf and isinstance(files, dict) and isinstance(post, dict):
            self.files, self.post, self.racy, self.dirs = files, post, set(racy), dirs

    def save(self) -> None:
        if not (self.enabled and self.dirty):
            return
        import marshal

        from parallint.engine.cache import _ignore_file, folder_ok

        tmp = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if not folder_ok(self.path.parent):
                return
            _ignore_file(self.path.parent)
            payload = marshal.dumps((self.tag, self.conf, self.files, self.post, sorted(self.racy), self.dirs))
            # a new file beside it, then renamed over it (without tempfile: start-up)
            tmp = self.path.with_name(f".index.{os.getpid()}.{os.urandom(6).hex()}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(self._mac(payload) + payload)
            os.replace(tmp, self.path)
            tmp = None
            self.dirty = False
        except (OSError, ValueError):
            pass  # a read-only checkout still works, only slower
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    # -- keeping it current ---------------------------------------------------------------------
    def walk(self, excluder, inside, same_device) -> list[str]:
        """The files of the tree, as :meth:`ReverseIndex._listing` walks it: a folder whose stat
        signature is the one kept is not listed again (nor its exclusions decided again); a
        changed ``.gitignore`` makes the next refresh walk everything (:meth:`refresh`)."""
        import time

        from parallint.engine.cache import RACY_NS
        from parallint.util.fswalk import MAX_DEPTH

        soon = time.time_ns() - RACY_NS
        old, new = self.dirs, {}
        out: list[str] = []
        visited: set[tuple[int, int]] = set()
        stack: list[tuple[str, str, int]] = [(str(self.root), "", 0)]
        sep = os.sep
        while stack:
            d, rel, depth = stack.pop()
            try:
                st = os.stat(d)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in visited:
                continue
            visited.add((st.st_dev, st.st_ino))
            sig = (st.st_mode, st.st_mtime_ns, st.st_ino, st.st_dev)
            ent = old.get(rel)
            if ent is None or ent[0] != sig or ent[3]:
                self.dirty = True
                dirs, files = [], []
                try:
                    with os.scandir(d) as it:
                        for e in it:
                            try:
                                (dirs if e.is_dir() else files).append(e.name)
                            except OSError:
                                files.append(e.name)
                except OSError:
                    continue
                dp = Path(d)
                kept = sorted(x for x in dirs if not excluder.excluded(dp / x, True)
                              and (not os.path.islink(dp / x) or inside.holds(dp / x)) and same_device(dp / x))
                ent = (sig, kept, sorted(files), st.st_mtime_ns >= soon)
            new[rel] = ent
            head = d + sep
            out.extend(head + fn for fn in ent[2])
            if depth < MAX_DEPTH:
                for x in reversed(ent[1]):
                    stack.append((head + x, f"{rel}{sep}{x}" if rel else x, depth + 1))
        if len(new) != len(old):
            self.dirty = True
        self.dirs = new
        return out

    @staticmethod
    def _split(vocab: "Iterable[bytes]") -> tuple[set[bytes], list[bytes]]:
        plain: set[bytes] = set()
        other: list[bytes] = []
        for n in vocab:
            (plain.add(n) if _plain(n) else other.append(n))
        return plain, other

    def _present(self, raw: bytes, vocab: tuple[set[bytes], list[bytes]]) -> set[bytes]:
        plain, other = vocab
        out = words_of(raw) & plain
        out.update(n for n in other if n in raw)
        return out

    def _set(self, rel: str, held: set[bytes], known: bool) -> None:
        if known:  # drop the file's old postings (a changed file)
            for n, where in self.post.items():
                if n not in held:
                    where.discard(rel)
        for n in held:
            self.post.setdefault(n, set()).add(rel)

    def refresh(self, ri: "ReverseIndex") -> None:
        """Bring the index up to the tree: its listing and every file's stat signature; read only
        the files that are new or whose signature changed."""
        import time

        from parallint.engine.cache import RACY_NS
        from parallint.util.boundary import Boundary
        from parallint.util.safeio import read_regular

        inside = Boundary()
        inside.add(self.root)
        cap = min(ri.runner.max_bytes, 4 * 1024 * 1024)
        buffers = ri.runner.stdin
        listing = [str(ap) for ap in ri._listing()[:MAX_INDEX_FILES]]
        prefix, n0 = self.prefix, len(self.prefix)
        rels = [ap[n0:] if ap.startswith(prefix) else None for ap in listing]
        cold = not self.files
        fresh_vocab: set[bytes] = set(_FIXED)
        if cold:
            for ap in listing:
                fresh_vocab |= needles(Path(ap))
        buffers = {str(k): v for k, v in buffers.items()}
        self.overlay = {}
        self.read = 0
        seen: set[str] = set()
        split: list = []

        def vocab() -> tuple[set[bytes], list[bytes]]:
            if not split:
                split.append(self._split(self.post.keys() | fresh_vocab))
            return split[0]

        files, racy = self.files, self.racy
        soon = time.time_ns() - RACY_NS
        lstat, stat = os.lstat, os.stat
        kept_bytes = [0]
        rewalk = False
        sep = os.sep
        for ap, rel in zip(listing, rels):
            if rel is None:
                continue
            if ap in buffers:  # an unsaved buffer stands for the file (not kept)
                data = buffers[ap].encode("utf-8", "surrogateescape")
                self.overlay[rel] = (hashlib.blake2b(data, digest_size=16).hexdigest(),
                                     self._present(data, vocab()))
                ri._raw[rel] = data
                seen.add(rel)
                continue
            try:
                st = lstat(ap)
                if (st.st_mode & 0o170000) == 0o120000:  # a link: never read one out of the repository
                    if not inside.holds(ap):
                        continue
                    st = stat(ap)
            except (OSError, ValueError):
                continue
            if (st.st_mode & 0o170000) != 0o100000:
                continue  # regular files only: a FIFO never blocks
            seen.add(rel)
            sig = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)
            ent = files.get(rel)
            if ent is not None and ent[0] == sig and rel not in racy:
                continue
            data = read_regular(ap, cap)
            self.read += 1
            self.dirty = True
            if st.st_mtime_ns >= soon:
                racy.add(rel)
            else:
                racy.discard(rel)
            dig = None if data is None else hashlib.blake2b(data, digest_size=16).hexdigest()
            if ent is None or ent[1] != dig:
                held = set() if data is None else self._present(data, vocab())
                self._set(rel, held, ent is not None)
                if data is not None and held and kept_bytes[0] + len(data) <= RAW_BYTES:
                    kept_bytes[0] += len(data)  # for a link cache miss this run (bounded: a cold
                    ri._raw[rel] = data  # build of a large tree must not hold it all)
            files[rel] = [sig, dig]
            if ap.endswith(sep + ".gitignore") and not cold and (ent is None or ent[1] != dig) and self.dirs:
                self.dirs = {}  # its folders' exclusions are decided again
                rewalk = True
        if rewalk:
            return self.refresh(ri)
        gone = [rel for rel in files if rel not in seen]
        if any(rel.endswith(".gitignore") for rel in gone) and self.dirs:
            self.dirs = {}
            for rel in gone:
                if rel.endswith(".gitignore"):
                    del files[rel]
            return self.refresh(ri)
        if gone:
            self.dirty = True
            drop = set(gone)
            for rel in gone:
                del files[rel]
            racy -= drop
            for where in self.post.values():
                where -= drop
        if cold:
            for n in fresh_vocab:
                self.post.setdefault(n, set())

    def digest(self, rel: str) -> str:
        o = self.overlay.get(rel)
        if o is not None:
            return o[0]
        ent = self.files.get(rel)
        return ent[1] if ent is not None and ent[1] else ""

    def holds(self, rel: str, needle: bytes) -> bool:
        o = self.overlay.get(rel)
        if o is not None:
            return needle in o[1]
        where = self.post.get(needle)
        return where is not None and rel in where

    def containing(self, wanted: set[bytes], ri: "ReverseIndex") -> set[str]:
        """The files that hold one of ``wanted``; a needle the index does not hold yet is looked
        for once in every file (and kept)."""
        unknown = [n for n in wanted if n not in self.post]
        if unknown:
            from parallint.util.safeio import read_regular

            cap = min(ri.runner.max_bytes, 4 * 1024 * 1024)
            for n in unknown:
                self.post[n] = set()
            self.dirty = True
            vocab = self._split(unknown)
            for rel, ent in self.files.items():
                if ent[1] is None or rel in self.overlay:
                    continue
                data = ri._raw.get(rel)
                if data is None:
                    data = read_regular(self.root / rel, cap)
                    self.read += 1
                if data is not None:
                    for n in self._present(data, vocab):
                        self.post[n].add(rel)
            for rel in self.overlay:
                data = ri._raw.get(rel)
                if data is not None:
                    self.overlay[rel][1].update(self._present(data, vocab))
        out: set[str] = set()
        for n in wanted:
            out |= self.post.get(n, ())
        if self.overlay:
            out -= self.overlay.keys()
            out.update(rel for rel, (_, held) in self.overlay.items() if held & wanted)
        return out


def check_files(paths: list[str], config, rules, stdin=None, cwd: Path | None = None,
                all_job_findings: bool = False, use_cache: bool = True, buffers: dict | None = None,
                related_findings: bool = False, run_cache: bool | None = None, progress=None,
                trees: dict | None = None, kept=None, stop=None):
    """``parallint check`` with whole jobs: the given files are checked in every job that
    includes them; findings are those located in the given paths (all findings of the affected
    jobs with ``all_job_findings``; with ``related_findings`` also those elsewhere whose notes cite
    a given file: a launch edit that breaks a config). Folders are checked as usual. ``buffers``
    (absolute path -> text) stand for files on disk everywhere (an editor's unsaved documents).

    With ``use_cache``, per-file results come from the content cache (parallint.engine.cache); with
    ``run_cache`` too (the default), a run over folders only whose files, folders and settings are
    unchanged since the same run was last made gives that run's findings without reading any file
    (:class:`parallint.engine.cache.RunCache`; the result then has no ``jobs``).

    ``trees`` (root -> :class:`TreeIndex`) keeps the link index in memory between calls (the
    language server): a call refreshes it from the tree's stat signatures instead of loading it;
    ``kept`` (:class:`parallint.engine.kept.KeptFacts`) keeps the files' facts the same way;
    ``stop()`` True abandons the run (``parallint.engine.runner.Stopped`` is raised)."""
    from parallint.engine.runner import Runner

    runner = Runner(config, cwd)
    runner.stop = stop
    if kept is not None:
        runner.kept = kept
        runner._guarded = kept.guarded  # the pre-parse guard's verdicts, kept with the facts
    runner.progress = progress  # (files read, files to read), as reading goes on
    cwd = runner.cwd
    whole = None
    if use_cache and not buffers and stdin is None:
        runner.store = content_cache(runner, paths, rules)
        if (use_cache if run_cache is None else run_cache) and paths and \
                all(os.path.isdir(os.path.join(cwd, p)) for p in paths):
            whole = _run_cache(runner, paths, rules, all_job_findings, related_findings)
    if whole is None:
        return _check_files(runner, paths, rules, stdin, all_job_findings, buffers, related_findings, use_cache,
                            trees)
    from parallint.engine.runner import Result

    hit = whole.load()
    if hit is not None:
        _trace("hit")
        diagnostics, checked = hit
        return Result(list(diagnostics), checked)
    import time

    from parallint.util import deps

    whole.prepare()
    t0 = time.time_ns()
    rec = deps.start_recording()
    try:
        result = _check_files(runner, paths, rules, stdin, all_job_findings, buffers, related_findings, use_cache,
                              trees)
    finally:
        deps.stop_recording()
    stored = False
    if not result.errors and not any(d.code == "SYN002" and _unsteady(d.message) for d in result.diagnostics):
        stored = whole.store((result.diagnostics, result.files_checked), rec, runner.cache.keys(), t0)
    _trace(f"{whole.outcome}, {'stored' if stored else 'not stored'}")
    return result


def _trace(what: str) -> None:
    """``PARALLINT_CACHE_TRACE=1``: say on standard error what the run cache did."""
    if os.environ.get("PARALLINT_CACHE_TRACE"):
        import sys

        print(f"parallint: run cache: {what}", file=sys.stderr)


def _unsteady(message: str) -> bool:
    """A SYN002 reason that depends on the machine's load, not on the files."""
    return any(w in message for w in ("timed out", "out of memory", "crashed", "took over"))  # "took over": a CPU budget


def _run_cache(runner, paths: list[str], rules, all_job_findings: bool, related_findings: bool):
    from parallint.engine.cache import RunCache

    cfg = runner.config
    store = runner.store
    extra = {"paths": [os.path.abspath(os.path.join(runner.cwd, p)) for p in paths], "cwd": str(runner.cwd),
             "base": str(cfg.base), "config": str(cfg.path), "exclude": list(cfg.exclude),
             "all_job_findings": all_job_findings, "related_findings": related_findings}
    run = RunCache(store.folder.parent, rules, cfg.settings, extra)
    return run if run.usable else None


def _check_files(runner, paths: list[str], rules, stdin, all_job_findings: bool, buffers: dict | None,
                 related_findings: bool, use_cache: bool, trees: dict | None = None):
    cwd = runner.cwd
    for ap, text in (buffers or {}).items():
        runner.stdin[Path(os.path.abspath(ap))] = text
    given: list[Path] = []  # files named (or the stdin file)
    folders: list[Path] = []
    for arg in paths:
        ap = Path(os.path.abspath(cwd / arg))
        (folders if ap.is_dir() else given).append(ap)
    if stdin is not None:
        name, content = stdin
        ap = Path(os.path.abspath(cwd / name))
        runner.stdin[ap] = content
        given.append(ap)

    extra: set[Path] = set()
    by_root: dict[Path, set[Path]] = {}
    entries: set[Path] = set()  # Python files named alone that only a launch makes ours
    for ap in given:
        if ap not in runner.stdin and (not ap.is_file() or runner._load(ap, True) is None):
            if ap.suffix == ".py" and ap not in runner.stdin and ap.is_file():
                entries.add(ap)  # an entry point (Megatron's pretrain_gpt.py): ours if a launch starts it
            continue  # missing, or not a file parallint reads: it is in no job
        by_root.setdefault(find_root(ap), set()).add(ap)
    indexes: dict[Path, ReverseIndex] = {}

    def index(root: Path) -> ReverseIndex:  # one per root and run (its tree refreshed once)
        ri = indexes.get(root)
        if ri is None:
            kept = trees.get(root) if trees is not None and use_cache else None
            ri = indexes[root] = ReverseIndex(runner, root, use_cache, tree=kept)
            if trees is not None and use_cache:
                trees[root] = ri.tree
        return ri

    for root, targets in by_root.items():
        extra |= index(root).referrers(targets)
    launched: set[Path] = set()
    for ap in sorted(entries):
        refs = index(find_root(ap)).referrers({ap})
        if refs:
            launched.add(ap)
            extra |= refs

    files = runner.collect([str(p) for p in folders] + [str(p) for p in given if p not in runner.stdin], rules)
    for ap in given:
        if ap in runner.stdin:
            f = runner.read(ap, explicit=True)
            if f is not None and f not in files:
                files.append(f)
    for ap in sorted(launched):
        f = runner.read(ap, explicit=True, launched=True)
        if f is not None and f not in files:
            files.append(f)
    named = {f.abspath for f in files}
    checked = len(files)
    for ap in sorted(extra - named):
        f = runner.read(ap)
        if f is not None:
            files.append(f)
    result = runner.check([], rules, files=files)
    result.files_checked = checked
    if all_job_findings or not given:
        return result
    keep_files = {f.path for f in files if f.abspath in set(given)}
    keep_dirs = [f"{display(d, cwd)}/" for d in folders]
    commands = _entry_commands(result.jobs, set(given))

    def located(path: str) -> bool:
        return path in keep_files or any(path.startswith(k) or k == "./" for k in keep_dirs)

    result.diagnostics = [d for d in result.diagnostics if located(d.span.path) or (
        related_findings and any(r.path in keep_files for r in d.related)) or _on_command(d, commands)]
    return result


def _entry_commands(jobs, given: set[Path]) -> dict[str, list[tuple[int, int]]]:
    """For each launch file whose command starts one of the ``given`` scripts: the lines of those
    commands. A finding there is the entry script's too (checking ``pretrain_gpt.py`` alone
    reports the TP × PP of the launch lines that run it)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for job in jobs:
        launch = job.launch
        if launch is None or getattr(launch, "script_path", None) not in given:
            continue
        span = launch.span
        last = max([span.line, span.end_line or span.line] +
                   [a.span.end_line or a.span.line for a in (launch.args or ())
                    if getattr(a, "span", None) is not None and a.span.path == span.path])
        out.setdefault(job.root.path, []).append((span.line, last))
    return out


def _on_command(d, commands: dict[str, list[tuple[int, int]]]) -> bool:
    return any(a <= d.span.line <= b for a, b in commands.get(d.span.path, ()))


def content_cache(runner, paths: list[str], rules):
    """The per-file content cache (parallint.engine.cache) of the repository the first path is in,
    next to the link index."""
    from parallint.engine.cache import FileCache

    first = Path(os.path.abspath(runner.cwd / paths[0])) if paths else runner.cwd
    return FileCache(cache_dir(find_root(first)), rules, runner.config.settings)


def display(p: Path, cwd: Path) -> str:
    from parallint.discover.walk import display_path

    return display_path(p, cwd)


#: folders no check walks (discover.DEFAULT_EXCLUDE's plain names)
_NEVER_WALKED = frozenset({".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__",
                           ".mypy_cache", ".pytest_cache", ".ruff_cache", ".parallint_cache", "site-packages", ".eggs"})


def nested_configs(paths: list[str], config, cwd: Path | None = None) -> list:
    """The configurations below the folders among ``paths``, other than the run's own, except
    those the run excludes (its patterns, .gitignore). Only the few configuration files found
    are tested against the excludes, so this costs one walk of the folder names."""
    from parallint.discover.settings import find_config, load_config
    from parallint.discover.walk import Excluder

    cwd = cwd or Path.cwd()
    folders = [Path(os.path.abspath(cwd / p)) for p in paths if (cwd / p).is_dir()]
    if not folders:
        return []
    excluder = Excluder(config.exclude, config.base, bool(config.get("respect-gitignore", True)), include_tests=True)
    run = config.path.resolve() if config.path else None
    out, seen, visited = [], set(), set()
    for top in folders:
        for d, dirnames, filenames in walk_once(top, visited):
            dirnames[:] = [n for n in dirnames if n not in _NEVER_WALKED]
            if d != top and ("pyproject.toml" in filenames or "parallint.toml" in filenames):
                name = "parallint.toml" if "parallint.toml" in filenames else "pyproject.toml"
                if excluder.excluded(d / name, False):
                    continue
                found = find_config(d)
                if found is not None and found.resolve() != run and found.resolve() not in seen:
                    seen.add(found.resolve())
                    out.append(load_config(str(found), found=True))
    return out


def nested_settings_filter(diags: list, config, selection, cwd: Path | None = None,
                           levels: dict | None = None, run_codes: set | None = None) -> list:
    """Settings per file inside a walked folder, as Ruff does: a finding in a file whose nearest
    configuration is not the run's is kept only if that configuration selects its rule and its
    ``per-file-ignores`` do not cover it; ``levels`` (id of a finding -> fail level) gets that
    configuration's fail level. ``selection(config)`` -> (rules, fail level). ``run_codes``: the
    run's own selection, when the rules that ran are more (the union with nested selections)."""
    from parallint.discover.settings import find_config, load_config
    from parallint.engine.registry import lazy_registry as get_registry  # covers() needs codes and names only

    cwd = cwd or Path.cwd()
    run = config.path.resolve() if config.path else None
    nearest: dict[Path, Path | None] = {}
    chosen: dict[Path, tuple] = {}
    reg = get_registry()
    out = []
    for d in diags:
        ap = Path(os.path.abspath(cwd / d.span.path))
        folder = ap.parent
        if folder not in nearest:
            found = find_config(folder) if folder.is_dir() else None
            nearest[folder] = found.resolve() if found else None
        found = nearest[folder]
        if found is None or found == run:
            if run_codes is None or d.code in run_codes:
                out.append(d)
            continue
        if found not in chosen:
            c = load_config(str(found), found=True)
            rules, level = selection(c)
            chosen[found] = (c, {r.code for r in rules}, level)
        c, codes, level = chosen[found]
        if d.code not in codes:
            continue
        if levels is not None:
            levels[id(d)] = level
        pfi = c.per_file_ignores(d.span.path, ap)
        if pfi and reg.covers(pfi, d.code):
            continue
        out.append(d)
    return out
