"""The Python reader: qualified names, static values, guards, loops, partitions, facts, SYN001."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from parallint.readers import python as P


def read(code: str, path: str = "train.py"):
    text = textwrap.dedent(code).lstrip("\n")
    return P.read(path, Path("/nonexistent") / path, text)


def script(code: str) -> P.Script:
    f = read(code)
    assert f.data is not None, f.diagnostics
    return f.data


# ------------------------------------------------------------------ qualified names
@pytest.mark.parametrize(
    "imports,call",
    [
        ("import torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP", "DDP(m)"),
        ("import torch", "torch.nn.parallel.DistributedDataParallel(m)"),
        ("import torch.nn.parallel as par", "par.DistributedDataParallel(m)"),
        ("from torch import nn", "nn.parallel.DistributedDataParallel(m)"),
        ("from torch.nn.parallel.distributed import DistributedDataParallel", "DistributedDataParallel(m)"),
    ],
)
def test_ddp_recognised_through_aliases(imports, call):
    s = script(f"{imports}\nmodel = {call}\n")
    calls = s.by("ddp")
    assert len(calls) == 1
    assert calls[0].target == "model"
    assert calls[0].span.line == imports.count("\n") + 2


def test_unrelated_names_are_not_matched():
    s = script(
        """
        from mylib import DistributedDataParallel
        def init_process_group(x):
            pass
        init_process_group("nccl")
        DistributedDataParallel(m)
        """
    )
    assert not s.by("ddp") and not s.by("init_process_group")


def test_function_level_import_counts():
    s = script(
        """
        def setup():
            import torch.distributed as dist
            dist.init_process_group("nccl")
        """
    )
    assert len(s.by("init_process_group")) == 1


# ------------------------------------------------------------------ static values
def _arg(code: str, group: str, kw: str, pos=None):
    s = script(code)
    c = s.by(group)[0]
    return s.arg(c, kw, pos, with_span=True)


def test_literal_constant_and_arithmetic():
    v = _arg(
        """
        import torch.distributed as dist
        NODES = 4
        GPUS = 8
        def main():
            ws = NODES * GPUS
            dist.init_process_group("nccl", world_size=ws)
        """,
        "init_process_group", "world_size",
    )
    assert v.known and v.value == 32
    assert v.span.line == 6


def test_reassigned_name_is_unknown():
    v = _arg(
        """
        import torch.distributed as dist
        ws = 8
        if big:
            ws = 16
        dist.init_process_group("nccl", world_size=ws)
        """,
        "init_process_group", "world_size",
    )
    assert not v.known


def test_environment_is_unknown():
    v = _arg(
        """
        import os
        import torch.distributed as dist
        dist.init_process_group("nccl", world_size=int(os.environ.get("WORLD_SIZE", 8)))
        """,
        "init_process_group", "world_size",
    )
    assert not v.known and "WORLD_SIZE" in v.why


def test_parameters_are_unknown():
    v = _arg(
        """
        import torch.distributed as dist
        def setup(world_size):
            dist.init_process_group("nccl", world_size=world_size)
        """,
        "init_process_group", "world_size",
    )
    assert not v.known


def test_argparse_default_flows_through_args():
    code = """
        import argparse
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        parser = argparse.ArgumentParser()
        parser.add_argument("--dist-backend", default="nccl", type=str)
        parser.add_argument("--find-unused", action="store_true")
        parser.add_argument("--world-size", type=int, default="4")
        args = parser.parse_args()
        dist.init_process_group(args.dist_backend, world_size=args.world_size)
        model = DDP(m, find_unused_parameters=args.find_unused)
    """
    s = script(code)
    init = s.by("init_process_group")[0]
    b = s.arg(init, "backend", 0)
    assert b.known and b.value == "nccl" and "--dist-backend" in b.source
    ws = s.arg(init, "world_size")
    assert ws.known and ws.value == 4
    fu = s.arg(s.by("ddp")[0], "find_unused_parameters")
    assert fu.known and fu.value is False


def test_required_argument_is_unknown():
    v = _arg(
        """
        import argparse
        import torch.distributed as dist
        p = argparse.ArgumentParser()
        p.add_argument("--backend", required=True)
        args = p.parse_args()
        dist.init_process_group(args.backend)
        """,
        "init_process_group", "backend", 0,
    )
    assert not v.known


def test_kwargs_dict_from_literals():
    s = script(
        """
        from torch.nn.parallel import DistributedDataParallel as DDP
        ddp_kwargs = dict(find_unused_parameters=True, broadcast_buffers=False)
        model = DDP(m, **ddp_kwargs)
        other = DDP(m, **{"static_graph": True})
        """
    )
    a, b = s.by("ddp")
    v = s.arg(a, "find_unused_parameters")
    assert v.known and v.value is True
    assert s.arg(b, "find_unused_parameters") is None
    assert s.arg(b, "static_graph").value is True


def test_unknown_kwargs_make_every_keyword_unknown():
    s = script(
        """
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(m, **cfg.ddp)
        """
    )
    v = s.arg(s.by("ddp")[0], "find_unused_parameters")
    assert v is not None and not v.known


# ------------------------------------------------------------------ guards and loops
@pytest.mark.parametrize(
    "test,rank,zero",
    [
        ("rank == 0", True, True),
        ("dist.get_rank() == 0", True, True),
        ("0 == torch.distributed.get_rank()", True, True),
        ("args.local_rank in [-1, 0]", True, True),
        ("args.local_rank not in [-1, 0]", True, False),
        ("rank != 0", True, False),
        ("not is_main_process()", True, False),
        ("accelerator.is_main_process", True, True),
        ("master_process", True, True),
        ("self.gpu_id == 0 and epoch % 10 == 0", True, True),
        ("args.rank % ngpus_per_node == 0", True, True),
        ("rank == 1", True, False),
        ("args.local_rank != -1", False, None),
        ("args.local_rank == -1", False, None),
        ("epoch % 10 == 0", False, None),
        ("world_size > 1", False, None),
    ],
)
def test_condition_classification(test, rank, zero):
    s = script(
        f"""
        import torch
        import torch.distributed as dist
        if {test}:
            torch.save(x, "a.pt")
        """
    )
    g = s.by("save")[0].guards[-1]
    assert (g.rank, g.zero) == (rank, zero)
    assert g.text == test


def test_rank_from_a_variable_holding_a_comparison():
    s = script(
        """
        import os
        import torch
        ddp_rank = int(os.environ["RANK"])
        is_first = ddp_rank == 0
        if is_first:
            torch.save(x, "a.pt")
        """
    )
    g = s.by("save")[0].guards[-1]
    assert g.rank and g.zero is True


def test_else_branch_and_early_return():
    s = script(
        """
        import torch
        import torch.distributed as dist
        def save(x):
            if dist.get_rank() != 0:
                return
            torch.save(x, "a.pt")
        def other(x):
            if rank == 0:
                pass
            else:
                torch.load("b.pt")
        """
    )
    early = s.by("save")[0].guards[-1]
    assert early.early and early.rank and early.zero is True
    other = s.by("load")[0].guards[-1]
    assert other.rank and other.zero is False and other.branch is False


def test_call_chain_guards():
    s = script(
        """
        import torch
        import torch.distributed as dist
        def save_ckpt(m):
            torch.save(m, "ckpt.pt")
        def train():
            for epoch in range(3):
                if dist.get_rank() == 0:
                    save_ckpt(model)
        def unused():
            torch.save(m, "x.pt")
        if __name__ == "__main__":
            train()
        """
    )
    used, unused = s.by("save")
    paths = s.effective_guards(used)
    assert paths and all(any(g.rank for g in p) for p in paths)
    assert s.effective_guards(unused) is None  # never called here: unknown


def test_spawn_counts_as_a_call_site():
    s = script(
        """
        import torch
        import torch.multiprocessing as mp
        def worker(rank, world_size):
            torch.save(m, "ckpt.pt")
        mp.spawn(worker, args=(4,), nprocs=4)
        """
    )
    paths = s.effective_guards(s.by("save")[0])
    assert paths == [()]


def test_epoch_loops():
    s = script(
        """
        import torch
        for epoch in range(args.epochs):
            for batch in train_loader:
                torch.save(batch, "b.pt")
        for step in range(100):
            torch.load("x.pt")
        """
    )
    loops = s.by("save")[0].loops
    assert [l.epoch for l in loops] == [True, False]
    assert "train_loader" in loops[1].names
    assert [l.epoch for l in s.by("load")[0].loops] == [False]


def test_global_and_local_rank_kinds():
    s = script(
        """
        import os
        import torch
        import torch.distributed as dist
        r = dist.get_rank()
        lr = int(os.environ["LOCAL_RANK"])
        g = int(os.environ.get("SLURM_PROCID", 0))
        m = r % torch.cuda.device_count()
        torch.cuda.set_device(r)
        torch.cuda.set_device(lr)
        torch.cuda.set_device(g)
        torch.cuda.set_device(m)
        """
    )
    kinds = [s.rank_kind(c.arg_node(pos=0), c.frame) for c in s.by("set_device")]
    assert kinds == ["global", "local", "global", None]


# ------------------------------------------------------------------ partitions and meshes
def test_partition_with_rank_selector_and_layer_count():
    s = script(
        """
        import torch.nn as nn
        import torch.distributed as dist
        N = 8
        class M(nn.Module):
            def __init__(self):
                self.layers = nn.ModuleList([Block() for _ in range(N)])
        stages = [model.layers[:4], model.layers[4:]]
        mine = stages[dist.get_rank()]
        """
    )
    (p,) = s.partitions
    assert p.base == "model.layers"
    assert [(x.start, x.stop) for x in p.slices] == [(None, 4), (4, None)]
    assert p.total == 8 and p.selector == "rank"
    assert p.span.line == 7


def test_partition_chosen_by_rank_branches():
    s = script(
        """
        import torch.distributed as dist
        rank = dist.get_rank()
        if rank == 0:
            stage = nn.Sequential(*model.layers[:4])
        elif rank == 1:
            stage = nn.Sequential(*model.layers[4:8])
        if rank == 0:
            head = blocks[:3]
        else:
            head = blocks[3:]
        if rank == 0:
            x = a[:2]
        elif rank == 2:
            x = a[2:]
        """
    )
    closed, open_ = s.partitions
    assert [(x.start, x.stop) for x in closed.slices] == [(None, 4), (4, 8)]
    assert closed.selector == "rank" and not closed.open_ended and closed.span.line == 3
    assert open_.base == "blocks" and open_.open_ended


def test_not_a_partition():
    s = script(
        """
        import torch
        a = [x[:, :4], x[:, 4:]]
        b = [x[:4], y[4:8]]
        c = [x[0:n], x[n:]]
        """
    )
    assert s.partitions == []


def test_mesh_shapes_and_facts():
    f = read(
        """
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh, DeviceMesh
        TP = 4
        mesh = init_device_mesh("cuda", (2, TP), mesh_dim_names=("dp", "tp"))
        m2 = DeviceMesh("cuda", [[0, 1, 2], [3, 4, 5]])
        m3 = init_device_mesh("cuda", (dist.get_world_size() // TP, TP))
        """
    )
    s = f.data
    shapes = sorted((m.span.line, m.shape) for m in s.meshes)
    assert shapes == [(4, (2, 4)), (5, (2, 3)), (6, None)]
    assert f.facts.int("parallel.tp") == 4 and f.facts.int("parallel.dp") == 2


# ------------------------------------------------------------------ facts and links
def test_facts_from_frameworks():
    f = read(
        """
        import deepspeed
        import lightning as L
        import torch.distributed as dist
        from transformers import TrainingArguments
        from megatron.core import parallel_state
        dist.init_process_group("nccl", world_size=16)
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=4, pipeline_model_parallel_size=2)
        trainer = L.Trainer(num_nodes=2, devices=8, strategy="ddp_find_unused_parameters_false")
        args = TrainingArguments(output_dir="o", per_device_train_batch_size=4, gradient_accumulation_steps=8,
                                 bf16=True, deepspeed="ds_config.json")
        engine, *_ = deepspeed.initialize(model=m, config="conf/ds.json")
        """
    )
    facts = f.facts
    assert facts.int("parallel.world_size") == 16
    assert facts.get("parallel.world_size").source == "init_process_group(world_size=...)"
    assert facts.int("parallel.tp") == 4 and facts.int("parallel.pp") == 2
    assert facts.int("parallel.nodes") == 2 and facts.int("parallel.procs_per_node") == 8
    assert facts.int("training.micro_batch") == 4 and facts.int("training.grad_accum") == 8
    assert facts.get("training.precision").value == "bf16"
    assert facts.get("ddp.find_unused_parameters").value is False
    assert sorted(v.value for v in f.links) == ["conf/ds.json", "ds_config.json"]


def test_accelerator_facts():
    f = read(
        """
        from accelerate import Accelerator
        accelerator = Accelerator(mixed_precision="bf16", gradient_accumulation_steps=4)
        """
    )
    assert f.facts.get("training.precision").value == "bf16"
    assert f.facts.int("training.grad_accum") == 4
    assert f.facts.get("training.grad_accum").span.line == 2


def test_unknown_devices_give_no_known_fact():
    f = read(
        """
        import lightning as L
        trainer = L.Trainer(devices="auto", num_nodes=int(os.environ["NNODES"]))
        """
    )
    assert f.facts.get("parallel.procs_per_node") is None
    assert f.facts.get("parallel.nodes") is None


# ------------------------------------------------------------------ robustness
def test_syntax_error_gives_syn001_with_position():
    f = read("import torch\ndef f(:\n    pass\n")
    (d,) = f.diagnostics
    assert d.code == "SYN001" and d.name == "parse-error" and str(d.severity) == "error"
    assert d.span.line == 2 and "2:" in d.message
    assert f.data is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "x = (" * 200 + ")" * 200 + "\n",
        "a" + " + a" * 3000 + "\n",
        "print('\udcff')\n",
        "if True:\n\tx = 1\n        y = 2\n",
        "\x0c\x0cimport torch\n",
    ],
)
def test_bad_input_never_raises(text):
    f = P.read("bad.py", Path("/nonexistent/bad.py"), text)
    assert all(d.code == "SYN001" for d in f.diagnostics)


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
        "x = 1" + " + 1" * 50000 + "\n",
        "x = a" + ".b" * 20000 + "\n",
        "x = 1" + " + 1" * 1500 + "\n",
        "x = " + "[" * 150 + "]" * 150 + "\n",
    ],
)
def test_pathological_nesting_is_refused_before_libcst(text):
    # LibCST's native parser takes the whole process down on input like this
    f = P.read("deep.py", Path("/nonexistent/deep.py"), text + "import torch.distributed as dist\n")
    (d,) = f.diagnostics
    assert d.code == "SYN001" and f.data is None


def test_importing_the_reader_does_not_import_libcst():
    code = "import sys, parallint.readers.python as p; assert p.NEEDLES; print('libcst' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ------------------------------------------------------------------ the fast walk
_WALK_SAMPLE = '''
import os, torch.distributed as dist
from . import sibling
from torch.nn.parallel import (DistributedDataParallel as DDP,)
@decorate(arg=f(1))
class A(Base, metaclass=M):
    x: int = g(2)
    def m(self, a, /, b=h(3), *c, d=i(4), **e) -> R:
        try:
            y = [j(k) for k in range(5) if k(6)]
        except (E1, E2) as err:
            z = l(7) if cond(8) else n(9)
        finally:
            print(f"{o(10)!r:>{p(11)}} and {q(12)}")
        with ctx(13) as cm, ctx2(14):
            lam = lambda u=v(15): w(16)
        return {kk(17): vv(18) for kk, vv in items(19)}
match cmd(20):
    case Point(x=0) if guard(21):
        pass
    case [first, *rest]:
        pass
'''


def test_collector_records_calls_in_source_order():
    """Calls are recorded in the order LibCST visited them (the rules see that order): keyword
    defaults after positional ones, a conditional expression's value before its test, a
    comprehension's element before its iterable."""
    s = script(_WALK_SAMPLE)
    nums = [int(c.args[0].value.value) for c in s.calls
            if c.args and type(c.args[0].value).__name__ == "Constant" and isinstance(c.args[0].value.value, int)]
    assert nums == list(range(1, 22))
    assert [c.func_text for c in s.calls][:2] == ["decorate", "f"]


def test_arguments_keep_their_source_order_when_a_star_follows_a_keyword():
    s = script("import torch.distributed as dist\ndist.init_process_group(backend='nccl', *rest, world_size=2)\n")
    (c,) = s.by("init_process_group")
    assert [(a.keyword, a.star) for a in c.args] == [("backend", ""), (None, "*"), ("world_size", "")]
    assert c.arg_node(pos=0) is None  # a *args before any positional: unknown


def test_spans_are_character_columns_and_code_keeps_parentheses():
    s = script('x = "é" + f(a)\ny = ((1, 2))\nif (rank == 0):\n    pass\ng((rank))\n')
    f_call = next(c for c in s.calls if c.func_text == "f")
    sp = f_call.span
    assert (sp.line, sp.column, sp.end_line, sp.end_column) == (1, 11, 1, 15)  # columns in characters
    tup = s.module_frame.bindings["y"][0]
    sp = s.span_of(tup)
    assert (sp.line, sp.column, sp.end_column) == (2, 7, 11)  # without its own parentheses
    assert s.code(tup) == "((1, 2))"
    g = next(c for c in s.calls if c.func_text == "g")
    assert s.code(g.args[0].value) == "(rank)" and s.source(g.args[0].value) == "rank"
    assert s.code(g.node) == "g((rank))"


def test_elif_is_told_from_else_holding_an_if():
    s = script("""
        import torch
        if a:
            pass
        elif rank == 0:
            torch.save(x, "a")
        else:
            if b:
                torch.save(x, "b")
    """)
    first, second = s.by("save")
    assert [g.text for g in first.guards] == ["a", "rank == 0"]
    assert [g.text for g in second.guards] == ["a", "rank == 0", "b"]


def test_imports_in_any_scope_are_resolved_and_relative_or_star_imports_are_not():
    s = script('''
        from .local import dist
        from torch.distributed import *
        def main():
            import torch.distributed as d2
            d2.init_process_group("nccl")
            dist.barrier()
        ''')
    assert [c.func_text for c in s.by("init_process_group")] == ["d2.init_process_group"]
    assert not s.by("collective")


# ------------------------------------------------------------------ issue 9: guards, syntax, setups
def test_guard_on_a_flag_bound_further_down_is_a_rank_zero_guard():
    s = script("""
        import torch
        def save(args):
            if args.save_logs:
                torch.save(state, "x.pt")
            if not args.verbose:
                return
            torch.save(state, "y.pt")
        def main(args):
            args.save_logs = args.logs != "none" and is_master(args)
            args.verbose = True
        main(a)
    """)
    first, second = s.by("save")
    assert [(g.rank, g.zero) for g in first.guards] == [(True, True)]
    assert [g.rank for g in second.guards] == [False]  # an ordinary flag stays an ordinary flag


@pytest.mark.parametrize("first,guard", [
    ("dist.get_rank() == 0 if dist.is_initialized() else True", False),  # not a plain rank test
    ("int(os.environ['RANK']) == 0", True),
])
def test_a_name_bound_twice_is_a_guard_only_when_every_binding_is(first, guard):
    s = script(f"""
        import os
        import torch
        import torch.distributed as dist
        should_write = {first}
        if dist.is_initialized():
            should_write = dist.get_rank() == 0
        if should_write:
            torch.save(state, "x.pt")
    """)
    (c,) = s.by("save")
    assert any(g.rank and g.zero for g in c.guards) is guard


def test_syntax_index_ignores_comments_and_docstrings():
    s = script('''
        """Uses DistributedSampler and set_epoch, see the docs."""
        import os
        # os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        os.environ["NCCL_DEBUG"] = "INFO"
        os.environ.update(MASTER_PORT="29500")
        loader = make(shard=True, num_replicas=2)
    ''')
    ix = s.syntax_index()
    assert "DistributedSampler" not in ix.names and "set_epoch" not in ix.names
    assert s.env_writes() == {"NCCL_DEBUG", "MASTER_PORT"}
    assert ix.keyword_is("shard", True) and "num_replicas" in ix.keywords


@pytest.mark.parametrize("code,expected", [
    ("import deepspeed\ndeepspeed.init_distributed()\n", True),
    ("from accelerate import Accelerator\nacc = Accelerator()\n", True),
    ("import lightning as L\nfabric = L.Fabric()\n", True),
    ("from accelerate import Accelerator\ndef make():\n    return Accelerator()\n", False),  # never called
    ("from accelerate import Accelerator\nfrom transformers import Trainer\nacc = Accelerator()\nTrainer(model=m)\n", False),
    ("import torch\nx = torch.zeros(1)\n", False),
])
def test_sets_up_distributed(code, expected):
    assert script(code).sets_up_distributed() is expected


def test_rank_indexed_literal_lists():
    s = script("""
        import torch.distributed as dist
        rank = dist.get_rank()
        layers_per_stage = [4, 4, 4]
        bounds = [0, 4, 8]
        part = layers_per_stage[rank]
        lo, hi = bounds[pp_rank], bounds[pp_rank + 1]
        colors = ["r", "g"]
        c = colors[rank]
    """)
    got = {(r.name, r.length, r.rank, r.boundaries) for r in s.rank_lists}
    assert got == {("layers_per_stage", 3, "global", False), ("bounds", 3, "pipeline", True)}


def test_code_of_a_node_over_several_lines_leaves_out_the_blocks_indentation():
    """As LibCST printed a node: lines that continue it lose the indentation of the block its
    statement is in (not inside a string); a tuple keeps its own parentheses and comments."""
    s = script('''
        import torch
        def main(rank):
            if (rank == 0
                    and flag):
                torch.save(x, """a
            b""")
            t = (
                1,  # one
            )
    ''')
    (c,) = s.by("save")
    assert c.guards[0].text == "(rank == 0\n        and flag)"
    assert s.code(c.args[1].value) == '"""a\n    b"""'
    (fr,) = s.functions["main"]
    tup = fr.bindings["t"][0]
    assert s.code(tup) == "(\n    1,  # one\n)"
    sp = s.span_of(tup)
    assert (sp.line, sp.column, sp.end_line, sp.end_column) == (8, 9, 8, 11)  # `1,` only


def test_fstring_values_and_concatenations():
    s = script('''
        import torch.distributed as dist
        RANKS = 2
        dist.init_process_group("nccl", init_method=f"tcp://{'h'}:{RANKS}", world_size=RANKS)
        dist.init_process_group("nccl", init_method="tcp://" f"{RANKS}")
    ''')
    a, b = s.by("init_process_group")
    assert s.arg(a, "init_method").value == "tcp://h:2"
    v = s.arg(b, "init_method")
    assert not v.known and v.why == "not a plain string"  # LibCST's ConcatenatedString
