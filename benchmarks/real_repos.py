"""Precision of parallint on real repositories, measured against a hand-triaged file.

Given a folder of checked-out public repositories (one sub-folder per repository; the folder name
is the repository name, e.g. ``NVIDIA+Megatron-LM``), run the installed parallint over each one
(``check --format json --exit-zero .`` with the repository as working directory, plus any extra
arguments given after the harness's own options or after ``--``), join the findings with the
triage file and print two tables: per rule and per repository (findings, true, false, debatable,
untriaged, precision = true / (true + false), and true / all findings).

    python benchmarks/real_repos.py /work/repos
    python benchmarks/real_repos.py /work/repos --repo NVIDIA+NeMo --json /tmp/nemo.json
    python benchmarks/real_repos.py /work/repos --diff            # what changed since the triage
    python benchmarks/real_repos.py /work/repos --findings /work/baseline   # reuse saved JSON
    python benchmarks/real_repos.py /work/repos -- --select DDP     # pass-through to `check`

Commit per repository: the line ``<folder> <sha>`` of ``COMMITS.txt`` in the repos folder if
present, else ``git rev-parse HEAD`` inside the repository, else ``unknown``.

Triage file (default ``benchmarks/triage.tsv``): tab-separated, a header line, then one line per
finding: ``repository commit path code line verdict reason message_hash``. ``verdict`` is
``true`` (the file as launched hits the problem the rule describes), ``false`` (it does not) or
``debatable``; ``reason`` is one clause naming the reason class; ``message_hash`` is the first 10
hex digits of the SHA-1 of the finding's message. Lines starting with ``#`` are comments.

Join rule: a finding matches the triage line with the same (repository, path, code, line); if
none, the first unused line with the same (repository, path, code, message_hash), so a finding
whose line moved (code added above it) keeps its verdict while its message is unchanged. Each
triage line matches at most one finding. The commit column is informational: a repository whose
commit differs from the triaged one is flagged in the per-repository table, the join still runs.

``--diff`` lists (a) findings not in the triage file (printed as triage lines to fill in),
(b) triaged TRUE findings that are gone (lost recall), (c) triaged FALSE findings still present.
(b) only considers repositories that were scanned in this run.

Exit status 0 whatever the findings; 2 when the harness itself fails (no such folder, unreadable
triage file). A repository whose run times out or fails is reported in the per-repository table
and the run goes on. Nothing is copied out of the repositories except the raw findings that
``--json`` saves where it is told.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_TRIAGE = HERE / "triage.tsv"
COLUMNS = ("repository", "commit", "path", "code", "line", "verdict", "reason", "message_hash")
VERDICTS = ("true", "false", "debatable")


class HarnessError(Exception):
    pass


def message_hash(message: str) -> str:
    return hashlib.sha1(message.encode("utf-8", "surrogatepass")).hexdigest()[:10]


@dataclass
class Triage:
    repository: str
    commit: str
    path: str
    code: str
    line: int
    verdict: str
    reason: str
    message_hash: str
    lineno: int = 0  # line in the triage file


@dataclass
class RepoRun:
    name: str
    commit: str
    findings: list[dict] = field(default_factory=list)
    status: str = "ok"
    seconds: float = 0.0


# ---------------------------------------------------------------- triage file


def read_triage(path: Path) -> list[Triage]:
    if not path.exists():
        return []
    rows: list[Triage] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise HarnessError(f"cannot read triage file {path}: {e}") from e
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        if cells[: len(COLUMNS)] == list(COLUMNS) or cells[0] == "repository":
            continue  # header
        if len(cells) < 7:
            raise HarnessError(f"{path}:{n}: expected {len(COLUMNS)} tab-separated columns, got {len(cells)}")
        cells += [""] * (len(COLUMNS) - len(cells))
        repo, commit, fpath, code, line, verdict, reason, mhash = cells[: len(COLUMNS)]
        if verdict not in VERDICTS:
            raise HarnessError(f"{path}:{n}: verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
        try:
            line_no = int(line)
        except ValueError as e:
            raise HarnessError(f"{path}:{n}: line must be an integer, got {line!r}") from e
        rows.append(Triage(repo, commit, fpath, code, line_no, verdict, reason, mhash, n))
    return rows


def triage_line(repo: str, commit: str, f: dict, verdict: str = "?", reason: str = "") -> str:
    return "\t".join(
        [repo, commit, f.get("path", ""), f.get("code", ""), str(f.get("line", 0)), verdict, reason,
         message_hash(f.get("message", ""))]
    )


def join(runs: list[RepoRun], triage: list[Triage]) -> tuple[list[tuple[str, dict, Triage | None]], list[Triage]]:
    """Match every finding to at most one triage line. Returns (finding matches, unused triage lines)."""
    by_line: dict[tuple, list[Triage]] = defaultdict(list)
    by_hash: dict[tuple, list[Triage]] = defaultdict(list)
    for t in triage:
        by_line[(t.repository, t.path, t.code, t.line)].append(t)
        by_hash[(t.repository, t.path, t.code, t.message_hash)].append(t)
    used: set[int] = set()
    matched: list[tuple[str, dict, Triage | None]] = []
    pending: list[tuple[int, str, dict]] = []
    # Exact keys first for every finding, so a moved finding never steals a line another one owns.
    for run in runs:
        for f in run.findings:
            key = (run.name, f.get("path"), f.get("code"), f.get("line"))
            hit = next((t for t in by_line.get(key, ()) if id(t) not in used), None)
            if hit is not None:
                used.add(id(hit))
            matched.append((run.name, f, hit))
            if hit is None:
                pending.append((len(matched) - 1, run.name, f))
    for i, repo, f in pending:
        key = (repo, f.get("path"), f.get("code"), message_hash(f.get("message", "")))
        hit = next((t for t in by_hash.get(key, ()) if id(t) not in used), None)
        if hit is not None:
            used.add(id(hit))
            matched[i] = (repo, f, hit)
    unused = [t for t in triage if id(t) not in used]
    return matched, unused


# ---------------------------------------------------------------- running parallint


def read_commits(folder: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    p = folder / "COMMITS.txt"
    if p.is_file():
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 2 and not line.startswith("#"):
                out[parts[0]] = parts[1]
    return out


def repo_commit(repo: Path, commits: dict[str, str]) -> str:
    if repo.name in commits:
        return commits[repo.name]
    if (repo / ".git").exists():
        try:
            p = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, timeout=30)
            if p.returncode == 0 and p.stdout.strip():
                return p.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "unknown"


def parallint_command() -> list[str]:
    exe = Path(sys.executable).with_name("parallint")
    if exe.exists():
        return [str(exe)]
    # -P (3.11+): the repository (the working directory) stays off sys.path, so its files are never imported.
    return [sys.executable, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "parallint"]


def run_repo(repo: Path, commit: str, extra: list[str], timeout: float) -> RepoRun:
    run = RepoRun(repo.name, commit)
    cmd = parallint_command() + ["check", "--format", "json", "--exit-zero", ".", *extra]
    env = dict(os.environ)
    env.pop("PARALLINT_DEBUG", None)
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(
            cmd, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            start_new_session=True,
        )
    except OSError as e:
        run.status = f"error: {e}"
        return run
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            proc.kill()
        proc.communicate()
        run.status = f"timeout after {timeout:g}s"
        run.seconds = time.perf_counter() - t0
        return run
    run.seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        last = (err.strip().splitlines() or ["no output"])[-1]
        run.status = f"exit {proc.returncode}: {last[:120]}"
    try:
        data = json.loads(out) if out.strip() else []
        run.findings = [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
    except json.JSONDecodeError:
        if run.status == "ok":
            run.status = "error: output is not JSON"
    return run


def load_saved(folder: Path, repo: Path, commit: str) -> RepoRun:
    run = RepoRun(repo.name, commit)
    p = folder / f"{repo.name}.json"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
        run.findings = [d for d in data if isinstance(d, dict)]
    except (OSError, ValueError) as e:
        run.status = f"no saved findings: {type(e).__name__}"
    return run


# ---------------------------------------------------------------- tables


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.0f}%" if d else "-"


def _table(title: str, header: list[str], rows: list[list], out) -> None:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    print(title, file=out)
    fmt = "  ".join("{:<%d}" % widths[0] if i == 0 else "{:>%d}" % w for i, w in enumerate(widths))
    print(fmt.format(*header), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in rows:
        print(fmt.format(*map(str, r)), file=out)
    print(file=out)


def tables(runs: list[RepoRun], matched, triage_commits: dict[str, set[str]], out=sys.stdout) -> dict:
    by_rule: dict[str, Counter] = defaultdict(Counter)
    by_repo: dict[str, Counter] = defaultdict(Counter)
    for repo, f, t in matched:
        v = t.verdict if t else "untriaged"
        by_rule[f.get("code", "?")][v] += 1
        by_repo[repo][v] += 1
    total = Counter()
    for c in by_rule.values():
        total.update(c)

    def row(name, c):
        n = sum(c.values())
        return [name, n, c["true"], c["false"], c["debatable"], c["untriaged"],
                _pct(c["true"], c["true"] + c["false"]), _pct(c["true"], n)]

    header = ["rule", "findings", "true", "false", "debatable", "untriaged", "precision", "true/all"]
    rule_rows = [row(k, by_rule[k]) for k in sorted(by_rule)] + [row("TOTAL", total)]
    _table("Per rule", header, rule_rows, out)
    repo_rows = []
    for run in runs:
        r = row(run.name, by_repo[run.name])
        stale = triage_commits.get(run.name)
        note = run.status
        if stale and run.commit not in stale:
            note += f"; triaged at {','.join(sorted(c[:10] for c in stale))}"
        repo_rows.append(r + [run.commit[:10], f"{run.seconds:.1f}", note])
    _table("Per repository", ["repository"] + header[1:] + ["commit", "seconds", "status"], repo_rows, out)
    return {"rules": {k: dict(v) for k, v in by_rule.items()}, "total": dict(total)}


def diff(runs: list[RepoRun], matched, unused: list[Triage], out=sys.stdout) -> dict[str, int]:
    scanned = {r.name for r in runs if r.status == "ok"}
    commits = {r.name: r.commit for r in runs}
    new = [(repo, f) for repo, f, t in matched if t is None]
    lost = [t for t in unused if t.verdict == "true" and t.repository in scanned]
    still_false = [(repo, f, t) for repo, f, t in matched if t is not None and t.verdict == "false"]
    print(f"(a) new findings, not in the triage file: {len(new)}", file=out)
    for repo, f in new:
        print("  " + triage_line(repo, commits.get(repo, "unknown"), f), file=out)
        print(f"    # {f.get('message', '')}", file=out)
    print(f"(b) triaged TRUE findings that disappeared (lost recall): {len(lost)}", file=out)
    for t in lost:
        print(f"  {t.repository}\t{t.path}:{t.line}\t{t.code}\t{t.reason}", file=out)
    print(f"(c) triaged FALSE findings still present: {len(still_false)}", file=out)
    for repo, f, t in still_false:
        print(f"  {repo}\t{f.get('path')}:{f.get('line')}\t{f.get('code')}\t{t.reason}", file=out)
    print(file=out)
    return {"new": len(new), "lost_true": len(lost), "false_present": len(still_false)}


# ---------------------------------------------------------------- main


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repos", nargs="?", default="/work/repos", help="folder holding one folder per repository")
    ap.add_argument("--triage", default=str(DEFAULT_TRIAGE), help="triage file (default: benchmarks/triage.tsv)")
    ap.add_argument("--json", dest="json_out", help="save the raw findings, {repository: [findings]}, here")
    ap.add_argument("--diff", action="store_true", help="list new, lost-true and still-false findings")
    ap.add_argument("--repo", action="append", default=[], help="only this repository (repeatable)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per repository (default 600)")
    ap.add_argument("--findings", help="read <repository>.json from this folder instead of running parallint")
    args, unknown = ap.parse_known_args(argv)
    return args, unknown + extra


def main(argv: list[str] | None = None) -> int:
    args, extra = parse(sys.argv[1:] if argv is None else argv)
    try:
        root = Path(args.repos)
        if not root.is_dir():
            raise HarnessError(f"no such folder: {root}")
        triage = read_triage(Path(args.triage))
        commits = read_commits(root)
        repos = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if args.repo:
            wanted = set(args.repo)
            missing = wanted - {p.name for p in repos}
            if missing:
                raise HarnessError(f"no such repository in {root}: {', '.join(sorted(missing))}")
            repos = [p for p in repos if p.name in wanted]
        runs: list[RepoRun] = []
        for repo in repos:
            commit = repo_commit(repo, commits)
            if args.findings:
                run = load_saved(Path(args.findings), repo, commit)
            else:
                print(f"... {repo.name}", file=sys.stderr, flush=True)
                run = run_repo(repo, commit, extra, args.timeout)
            runs.append(run)
        if args.json_out:
            Path(args.json_out).write_text(
                json.dumps({r.name: r.findings for r in runs}, indent=1, ensure_ascii=True) + "\n", encoding="utf-8"
            )
        names = {r.name for r in runs}
        matched, unused = join(runs, [t for t in triage if t.repository in names])
        triage_commits: dict[str, set[str]] = defaultdict(set)
        for t in triage:
            triage_commits[t.repository].add(t.commit)
        tables(runs, matched, triage_commits)
        if args.diff:
            diff(runs, matched, unused)
    except HarnessError as e:
        print(f"real_repos: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
