"""PG005 collective-in-rank-branch: a collective only some ranks reach (e.g. under `if rank == 0:`): the others wait forever"""

from __future__ import annotations

from typing import Iterable

from parallint.model.diagnostics import Diagnostic, Related, Severity
from parallint.model.rule import Example, Rule
from parallint.model.script import Call, Guard, Script, script_of
from parallint.rules.pg._common import _PY, _is_none


def _only_call_site(s: Script, frame) -> Call | None:
    """The single call of a function the file defines once and never passes around, else None."""
    if frame.kind != "function" or frame.name in s.refs or len(s.functions.get(frame.name, ())) != 1:
        return None
    sites = [x for x in s.callsites.get(frame.name, []) if x[0] is None or _calls_by_name(x[0])]
    if len(sites) != 1 or sites[0][0] is None or "spawn" in sites[0][0].groups:
        return None
    return sites[0][0]


def _calls_by_name(site: Call) -> bool:
    """``name(...)`` or ``self.name(...)``: a call of this file's function, not ``module.name(...)``
    (``timm_hub.download_cached_file(...)`` is another module's function of the same name)."""
    import ast

    func = site.node.func
    if isinstance(func, ast.Attribute):
        return isinstance(func.value, ast.Name) and func.value.id in ("self", "cls")
    return True


def _enclosing_branch_lets_all_in(s: Script, c: Call, g: Guard) -> bool:
    """``g`` is the false side of ``A and R`` (``if not use_fsdp_eval and not is_rank0: return``)
    whose rank-independent conjunct ``A`` is false wherever the call is, because the call sits
    under ``if use_fsdp_eval:``: there no rank leaves, so every rank reaches the call."""
    import ast

    node = g._node
    if g.branch or not isinstance(node, ast.BoolOp) or not isinstance(node.op, ast.And):
        return False
    sides = {s.code(h._node): h.branch for h in c.guards if h is not g and not h.rank}
    for v in node.values:
        if s.classify_test(v, None)[0]:
            continue  # rank-dependent
        if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) and sides.get(s.code(v.operand)) is True:
            return True
        if sides.get(s.code(v)) is False:
            return True
    return False


#: method calls that cannot hold a collective (logging, containers, tensor conversions)
_PLAIN_METHODS = frozenset({
    "info", "debug", "warning", "warn", "error", "exception", "critical", "log", "print", "append", "extend",
    "format", "item", "join", "write", "flush", "close", "cpu", "tolist", "numpy", "get", "items", "keys",
    "values", "update", "pop", "strip", "split", "startswith", "endswith", "replace", "lower", "upper",
    "exists", "mkdir", "makedirs", "sleep", "add_scalar", "add_scalars",
})


_PLAIN_MODULES = ("torch.", "logging.", "builtins.", "os.", "time.", "math.", "json.", "sys.", "shutil.",
                  "pathlib.", "numpy.", "random.", "warnings.", "print")


def _opaque(s: Script, c: Call) -> bool:
    """A call whose body this file does not show and that may make a collective."""
    import builtins

    import ast

    if c.groups:
        return False
    if c.qnames:
        return not all(q.startswith(_PLAIN_MODULES) for q in c.qnames)
    func = c.node.func
    if isinstance(func, ast.Name):
        if func.id in s.functions:
            return False  # defined here: its own collectives are checked where it is called
        return not hasattr(builtins, func.id)
    if c.method is not None:
        if c.method in _PLAIN_METHODS:
            return False
        recv = c.receiver
        if isinstance(recv, ast.Name) and recv.id in ("self", "cls") and c.method in s.functions:
            return False
        return True
    return True


def _other_path_hidden(s: Script, g) -> bool:
    """The ranks that do not take the guarded branch run a call this file cannot see into (the
    `else:`/`elif` branch of the same `if`): their matching collective may well be in there."""
    if g.early:
        return False  # `if rank != 0: return`: the other ranks' path is the return
    for c in s.calls:
        if any(h.if_id == g.if_id and h.branch != g.branch for h in c.guards) and _opaque(s, c):
            return True
    return False


# collective -> index of its positional `group` argument
_GROUP_POS = {
    "barrier": 0, "monitored_barrier": 0, "all_reduce": 2, "broadcast": 2, "all_gather": 2,
    "all_gather_into_tensor": 2, "reduce_scatter": 3, "reduce_scatter_tensor": 3, "reduce": 3,
    "gather": 3, "scatter": 3, "all_to_all": 2, "all_to_all_single": 4, "all_gather_object": 2,
    "broadcast_object_list": 2, "gather_object": 3, "scatter_object_list": 3,
}


def _some_setting_lets_all_in(s: Script, g: Guard) -> bool:
    """The branch is taken when a disjunct that does not depend on the rank holds
    (``ckpt_type != LEGACY or dp_rank == 0``, also inside ``not skip and (...)``): under that
    setting every rank enters, so the condition does not show that some ranks skip the call. A
    disjunct that only says the job is not distributed (``not dist.is_initialized()``,
    ``world_size == 1``) does not count: then there is one rank."""
    return g.branch and _lets_all_in(s, g._node, 0)


def _lets_all_in(s: Script, node, depth: int) -> bool:
    import ast

    if depth > 6 or not isinstance(node, ast.BoolOp):
        return False
    ranked = [v for v in node.values if s.classify_test(v, None)[0]]
    if isinstance(node.op, ast.And):  # every rank-dependent conjunct must let all in
        return bool(ranked) and all(_lets_all_in(s, v, depth + 1) for v in ranked)
    for v in node.values:
        if v in ranked:
            continue
        code = s.code(v)
        if not any(w in code for w in ("is_initialized", "is_available", "world_size", "distributed")):
            return True
    return any(_lets_all_in(s, v, depth + 1) for v in ranked)


def _fsdp_when_called(s: Script, c: Call, fsdp_calls: list[Call]) -> bool:
    """The receiver of ``c`` (``model.state_dict()``) may be the FSDP model at the call: its own
    function binds it, before the call, to an ``FSDP(...)`` call or to a call of a function of this
    file that returns its ``FSDP(...)`` result; or binds it nowhere before the call (a parameter, a
    global). A name the function binds before the call only to other values is not the FSDP model
    yet: ``model.state_dict()`` on the plain module before ``model = setup_fsdp(model)`` gathers
    nothing (Lumina-T2X loads its initial weights that way on rank 0)."""
    import ast

    name = s.code(c.receiver)
    line = getattr(c.node, "lineno", None)
    before = c.frame.bindings.get(name, [])
    if line is None or any(getattr(e, "lineno", None) is None for e in before):
        return True  # a binding without a place (unpacking): not followed
    before = [e for e in before if e.lineno < line]
    if not before:
        return True
    wrap_nodes = {id(f.node) for f in fsdp_calls}
    for e in before:
        if id(e) in wrap_nodes:
            return True
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            for fr in s.functions.get(e.func.id, ()):
                wrapped = {f.target for f in fsdp_calls if f.frame is fr}
                if any(isinstance(r, ast.Name) and r.id in wrapped for r in fr.returns):
                    return True
    return False


def _unwrapped_alternative(s: Script, c: Call, wrap_conds: set[str]) -> bool:
    """``cpu_state if args.fsdp else model.state_dict()`` where the model is wrapped in FSDP only
    under ``if args.fsdp:``: the ``state_dict()`` runs only when the model is not FSDP."""
    import ast

    if not wrap_conds:
        return False
    for node in ast.walk(c.frame.node) if c.frame.node is not None else ():
        if isinstance(node, ast.IfExp) and s.code(node.test) in wrap_conds:
            if any(n is c.node for n in ast.walk(node.orelse)):
                return True
    return False


def _same_body(s, a, b) -> bool:
    """One function, or two methods of one class (:meth:`Script.same_run`, without its module-level
    case): a barrier that some ranks reach here is paired with one the other ranks reach there (a
    context manager that staggers ranks: even ranks wait in ``__enter__``, odd ones in ``__exit__``)."""
    return a is b or (a.kind != "module" and b.kind != "module" and s.same_run(a, b))


class CollectiveInRankBranch(Rule):
    code = "PG005"
    calls = frozenset({"collective", "dcp_save", "fsdp", "spawn", "hvd_collective"})
    name = "collective-in-rank-branch"
    severity = Severity.ERROR
    summary = "a collective only some ranks reach (e.g. under `if rank == 0:`): the others wait forever"
    kinds = _PY
    doc = """
    ## What it does
    Flags a collective (`barrier`, `all_reduce`, `broadcast`, `all_gather`, `reduce_scatter`,
    `reduce`, ..., an FSDP model's full `state_dict()`, `torch.distributed.checkpoint.save`)
    inside a branch that depends on the rank (`if rank == 0:`, `if is_main_process():`, after
    `if rank != 0: return`), when the same function has no matching call on the other ranks' path.
    A collective is unmatched only when the other ranks' path is visible: when the `else:`/`elif`
    branch calls code this file does not show (`model.generate_other_ranks()`, an imported
    helper), the match may be in there and the rule stays silent. Collectives on an explicit
    `group=` are left alone, and so are branches that a setting independent of the rank opens to
    every rank (`if ckpt_type != LEGACY or dp_rank == 0:`), and an FSDP model's `state_dict()` on
    the side of `x if args.fsdp else model.state_dict()` where the model is not wrapped.
    Horovod's collectives (`hvd.allreduce`, `hvd.broadcast`, `hvd.broadcast_parameters`,
    `hvd.join` ..., in every front end) are checked the same way, except on a `process_set=`.

    ## Why it matters
    Every rank of the group must enter the same collective. The ranks that skip the branch never
    do: the rank inside it blocks until the NCCL watchdog kills the job after 30 minutes.

    ## Example

    ## How to fix
    Move the collective out of the branch so that every rank calls it (save on rank 0, then
    `dist.barrier()` on all ranks); gather FSDP state dicts on all ranks and only write on rank 0.
    """
    valid = [
        Example("""
            import torch
            import torch.distributed as dist
            if dist.get_rank() == 0:
                torch.save(model.state_dict(), "ckpt.pt")
            dist.barrier()
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            def load(local_rank):
                if local_rank not in [-1, 0]:
                    dist.barrier()  # wait for rank 0 to download
                download()
                if local_rank == 0:
                    dist.barrier()
        """),
        # a context manager that staggers the ranks: even ones wait on entry, odd ones on exit
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            class staggered:
                def __init__(self, local_rank):
                    self.local_rank = local_rank
                def __enter__(self):
                    if self.local_rank % 2 == 0:
                        dist.barrier()
                    return self
                def __exit__(self, *exc):
                    if self.local_rank % 2 == 1:
                        dist.barrier()
                    dist.barrier()
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            if args.local_rank != -1:
                dist.all_reduce(t)
        """),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            if rank in first_group_ranks:
                dist.all_reduce(t, group=first_group)
        """),
        Example("""
            import torch.distributed as dist
            def send_side(t):
                dist.broadcast(t, src=0)
            def recv_side(t):
                dist.broadcast(t, src=0)
            dist.init_process_group("nccl")
            if dist.get_rank() == 0:
                send_side(t)
            else:
                recv_side(t)
        """),
        # the other ranks' matching broadcast is inside a method this file does not show
        Example("""
            import torch
            import torch.distributed as dist
            def serve(model):
                if dist.get_rank() == 0:
                    run_server(model)
                    dist.broadcast(torch.tensor([1], device="cuda"), src=0)
                else:
                    model.generate_other_ranks()
        """),
        # a setting that lets every rank in: distributed checkpoints are written by all ranks
        Example("""
            import torch
            import torch.distributed as dist
            def save(state_dict, name, ckpt_type, dp_rank, skip):
                if not skip and (not dist.is_initialized() or ckpt_type != "legacy" or dist.get_rank() == 0):
                    if ckpt_type != "legacy":
                        torch.distributed.checkpoint.save(state_dict=state_dict, checkpoint_id=name)
                    else:
                        torch.save(state_dict, name)
        """),
        # the FSDP model's state_dict() only runs where the model is not FSDP
        Example("""
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            def main(args):
                dist.init_process_group("nccl")
                if args.fsdp:
                    model = FSDP(build())
                else:
                    model = build().cuda()
                cpu_state = None
                if args.fsdp:
                    with FSDP.state_dict_type(model, "full"):
                        cpu_state = model.state_dict()
                if dist.get_rank() == 0:
                    torch.save({"state_dict": cpu_state if args.fsdp else model.state_dict()}, "ckpt.pt")
            main(args)
        """),
        # `hub.download_cached_file(...)` is another module's function, not the one defined here
        Example("""
            import torch.distributed as dist
            from timm.models import hub

            def download_cached_file(url):
                if dist.get_rank() == 0:
                    hub.download_cached_file(url)
                dist.barrier()
                return url
        """),
        # the early return lets every rank through wherever `use_fsdp_eval` holds
        Example("""
            import torch.distributed as dist

            def evaluate(args, signal):
                use_fsdp_eval = args.fsdp
                if not use_fsdp_eval and dist.get_rank() != 0:
                    return {}
                if use_fsdp_eval:
                    dist.broadcast(signal, src=0)
                return {}
        """),
        # the plain module's state_dict() on rank 0, before a helper wraps it in FSDP
        Example("""
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            def setup_fsdp(model):
                model = FSDP(model)
                return model

            def main(build, path):
                model = build()
                if dist.get_rank() == 0:
                    own = model.state_dict()
                    model.load_state_dict(torch.load(path, map_location="cpu"))
                dist.barrier()
                model = setup_fsdp(model)
        """),
    ]
    invalid = [
        Example("""
            import torch
            import torch.distributed as dist
            if dist.get_rank() == 0:
                torch.save(model.state_dict(), "ckpt.pt")
                dist.barrier()
        """, line=5),
        Example("""
            import torch
            import torch.distributed as dist
            def save(model):
                if dist.get_rank() == 0:
                    torch.save(model.state_dict(), "ckpt.pt")
                    dist.barrier()
                dist.barrier()
        """, line=6),
        Example("""
            import torch.distributed as dist
            dist.init_process_group("nccl")
            def log_metrics(loss):
                if dist.get_rank() != 0:
                    return
                dist.all_reduce(loss)
                print(loss.item())
        """, line=6),
        Example("""
            import torch
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
            model = FSDP(model)
            if rank == 0:
                torch.save(model.state_dict(), "ckpt.pt")
        """, line=5),
        Example("""
            import torch.distributed as dist
            def evaluate(model, loader):
                loss = compute(model, loader)
                dist.all_reduce(loss)
                return loss
            def train(model, loader):
                dist.init_process_group("nccl")
                for epoch in range(10):
                    step(model, loader)
                    if dist.get_rank() == 0:
                        print(evaluate(model, loader))
        """, line=4),
        # Horovod: the average of a metric computed on rank 0 only
        Example("""
            import torch
            import horovod.torch as hvd
            hvd.init()
            if hvd.rank() == 0:
                val = hvd.allreduce(torch.tensor(accuracy), name="val_acc")
                print(val)
        """, line=5),
        # a helper of this file wraps the model in FSDP and returns it; rank 0 then gathers it
        Example("""
            import torch
            import torch.distributed as dist
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            def setup_fsdp(model):
                model = FSDP(model)
                return model

            def main(build):
                model = build()
                model = setup_fsdp(model)
                if dist.get_rank() == 0:
                    torch.save(model.state_dict(), "ckpt.pt")
        """, line=13),
    ]

    def check_file(self, f, ctx) -> Iterable[Diagnostic]:
        s = script_of(f)
        if s is None:
            return
        cands: list[tuple[Call, str]] = []
        for c in s.by("collective"):
            short = next(iter(c.qnames)).rsplit(".", 1)[-1] if c.qnames else c.func_text
            gp = _GROUP_POS.get(short)
            g = c.arg_node("group", gp)
            if g is not None and not _is_none(g):
                continue
            if c.has_star() or any(a.keyword in ("process_group", "pg") for a in c.args):
                continue
            cands.append((c, short))
        for c in s.by("hvd_collective"):  # Horovod's: every worker (of the process set) must make them
            if c.has_star() or any(a.keyword == "process_set" for a in c.args):
                continue
            cands.append((c, "hvd." + next(iter(c.qnames)).rsplit(".", 1)[-1]))
        for c in s.by("dcp_save"):
            cands.append((c, "checkpoint.save"))
        fsdp_calls = [c for c in s.by("fsdp") if c.target]
        fsdp_names = {c.target for c in fsdp_calls}
        wrap_conds = {s.code(g._node) for c in fsdp_calls for g in c.guards if g.branch}
        for c in s.methods("state_dict"):
            if c.receiver is not None and s.code(c.receiver) in fsdp_names and not c.args \
                    and _fsdp_when_called(s, c, fsdp_calls):
                if _unwrapped_alternative(s, c, wrap_conds):
                    continue
                cands.append((c, "FSDP state_dict"))
        # (call, short, the rank condition, the call site it is reached through)
        entries: list[tuple[Call, str, Guard, Call | None]] = []
        for c, short in cands:
            branch = [g for g in (c.frame.base_guards + c.guards) if g.rank and not g.main
                      and not _some_setting_lets_all_in(s, g) and not _enclosing_branch_lets_all_in(s, c, g)]
            if branch:
                entries.append((c, short, branch[-1], None))
                continue
            site = _only_call_site(s, c.frame)
            if site is not None:
                sguards = [g for g in (site.frame.base_guards + site.guards) if g.rank and not g.main
                           and not _some_setting_lets_all_in(s, g)]
                if sguards:
                    entries.append((c, short, sguards[-1], site))
        # only a call that itself runs on some ranks can pair with one: a barrier every rank reaches
        # matches nothing on rank 0's extra path
        guarded = {id(c) for c, _, _, site in entries if site is None}
        for c, short, g, site in entries:
            if any(o is not c and sh == short and (og.if_id == g.if_id and og.branch != g.branch)
                   for o, sh, og, _ in entries):
                continue  # the other branch makes the same collective
            if _other_path_hidden(s, g):
                continue  # the other ranks call code this file does not show: the match may be there
            if site is None and any(o is not c and sh == short and id(o) in guarded and _same_body(s, o.frame, c.frame)
                                    for o, sh in cands):
                continue  # paired with a call on the other ranks' path (the download-barrier pattern)
            what = {"FSDP state_dict": "an FSDP model's full state_dict() (an all-gather)",
                    "checkpoint.save": "torch.distributed.checkpoint.save (a collective)"}.get(short, f"{short}()")
            side = "true" if g.branch else "false"
            if site is None:
                msg = f"{what} runs only on the ranks where `{g.text}` is {side}"
                related = [Related.at(g.span, "rank-dependent condition")]
            else:
                msg = (f"{what} in {c.frame.name}(), which is only called where `{g.text}` is {side} "
                       f"(line {site.span.line})")
                related = [Related.at(site.span, f"{c.frame.name}() called only on some ranks"),
                           Related.at(g.span, "rank-dependent condition")]
            yield self.report(c.span, msg + "; the other ranks never enter it and the job hangs; move it out of the branch so "
                              "every rank calls it", related=related)
