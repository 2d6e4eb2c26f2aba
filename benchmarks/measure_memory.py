"""Measure peak GPU memory of Llama-shaped training steps and compare with parallint's estimate.

    python benchmarks/measure_memory.py --dry [--out grid.json]      # the grid only (no torch)
    python benchmarks/measure_memory.py [--steps 3] [--out results.json] [--limit N]

Builds Llama-shaped decoder models with random weights from a shape (no download, no hub), runs
a few real training steps for every point of a grid (sequence length, micro batch, recompute
policy, precision recipe, LoRA, optimizer), records ``torch.cuda.max_memory_allocated`` and
``max_memory_reserved`` after the steps, and puts them next to ``parallint``'s estimate of the
matching job spec (allocated against ``Estimate.allocated``, reserved against
``Estimate.reserved``). torch is imported only when measuring: ``--dry`` runs anywhere and prints
(or writes) the grid with each point's job spec and estimate.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys

#: small Llama shapes that fit one 80 GB card in every grid point
SHAPES = {
    "llama-1b": {"layers": 16, "hidden": 2048, "heads": 32, "kv_heads": 8, "ffn": 8192, "vocab": 32000},
    "llama-3b": {"layers": 28, "hidden": 3072, "heads": 24, "kv_heads": 8, "ffn": 8192, "vocab": 32000},
}
GRID = {
    "shape": ("llama-1b", "llama-3b"),
    "seq_len": (1024, 4096),
    "micro_batch": (1, 4),
    "recompute": ("none", "full", "op"),
    "recipe": ("bf16_mixed", "bf16_pure"),
    "peft": ("none", "lora"),
    "optimizer": ("adamw", "sgd"),
}


def grid(limit: int | None = None) -> list[dict]:
    """Every point of GRID (LoRA only with AdamW: the optimizer of a handful of adapters hardly
    matters), each with its job spec."""
    points = []
    for values in itertools.product(*GRID.values()):
        p = dict(zip(GRID, values))
        if p["peft"] == "lora" and p["optimizer"] != "adamw":
            continue
        p["spec"] = job_spec(p)
        points.append(p)
    return points[:limit] if limit else points


def job_spec(p: dict) -> dict:
    tr = {"micro_batch": p["micro_batch"], "recompute": p["recompute"], "precision": "bf16",
          "master_weights": p["recipe"] == "bf16_mixed", "optimizer": p["optimizer"],
          "flash_attention": True, "loss": "standard"}
    if p["peft"] == "lora":
        tr |= {"peft": "lora", "lora_rank": 16, "lora_targets": "q,k,v,o"}
    model = dict(SHAPES[p["shape"]], seq_len=p["seq_len"], mlp="swiglu", norm="rmsnorm", bias=False,
                 position_embeddings="rope", tied_embeddings=False)
    return {"framework": "pytorch", "model": model, "parallel": {"dp": 1}, "training": tr,
            "hardware": {"gpu": "H100-80GB"}}


def estimated(spec: dict) -> dict:
    from parallint.estimator.memory import estimate

    est = estimate(spec)
    return {"allocated": est.allocated, "reserved": est.reserved, "range": list(est.range)}


# --------------------------------------------------------------------------- measuring (torch)
def _build(p: dict):  # pragma: no cover - needs a GPU
    import torch
    from torch import nn
    import torch.nn.functional as F
    from torch.utils.checkpoint import checkpoint

    s = SHAPES[p["shape"]]
    h, a, kv, f, v = s["hidden"], s["heads"], s["kv_heads"], s["ffn"], s["vocab"]
    hd = h // a

    class Lora(nn.Module):
        def __init__(self, base: nn.Linear, r: int = 16):
            super().__init__()
            self.base = base
            self.a = nn.Linear(base.in_features, r, bias=False)
            self.b = nn.Linear(r, base.out_features, bias=False)
            nn.init.zeros_(self.b.weight)

        def forward(self, x):
            return self.base(x) + self.b(self.a(x))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = nn.RMSNorm(h), nn.RMSNorm(h)
            self.q, self.k = nn.Linear(h, a * hd, bias=False), nn.Linear(h, kv * hd, bias=False)
            self.v, self.o = nn.Linear(h, kv * hd, bias=False), nn.Linear(a * hd, h, bias=False)
            self.gate, self.up = nn.Linear(h, f, bias=False), nn.Linear(h, f, bias=False)
            self.down = nn.Linear(f, h, bias=False)

        def _layer(self, x):
            b_, t, _ = x.shape
            y = self.n1(x)
            q = self.q(y).view(b_, t, a, hd).transpose(1, 2)
            k = self.k(y).view(b_, t, kv, hd).transpose(1, 2)
            vv = self.v(y).view(b_, t, kv, hd).transpose(1, 2)
            att = F.scaled_dot_product_attention(q, k, vv, is_causal=True, enable_gqa=True)
            x = x + self.o(att.transpose(1, 2).reshape(b_, t, a * hd))
            y = self.n2(x)
            return x + self.down(F.silu(self.gate(y)) * self.up(y))

        def forward(self, x):
            if p["recompute"] == "full":
                return checkpoint(self._layer, x, use_reentrant=False)
            if p["recompute"] == "op":
                from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

                count = {"mm": 0}

                def policy(ctx, func, *args, **kwargs):
                    if func is torch.ops.aten.mm.default:
                        count["mm"] += 1
                        keep = count["mm"] % 2 == 1
                    else:
                        keep = func in (torch.ops.aten._scaled_dot_product_flash_attention.default,
                                        torch.ops.aten._scaled_dot_product_efficient_attention.default)
                    return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

                return checkpoint(self._layer, x, use_reentrant=False,
                                  context_fn=lambda: create_selective_checkpoint_contexts(policy))
            return self._layer(x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(v, h)
            self.blocks = nn.ModuleList(Block() for _ in range(s["layers"]))
            self.norm, self.out = nn.RMSNorm(h), nn.Linear(h, v, bias=False)

        def forward(self, ids):
            x = self.emb(ids)
            for blk in self.blocks:
                x = blk(x)
            return self.out(self.norm(x)).float()

    dtype = torch.bfloat16
    model = Model().to("cuda", dtype=torch.float32 if p["recipe"] == "bf16_mixed" else dtype)
    if p["peft"] == "lora":
        for prm in model.parameters():
            prm.requires_grad_(False)
        for blk in model.blocks:
            for name in ("q", "k", "v", "o"):
                setattr(blk, name, Lora(getattr(blk, name)).to("cuda", dtype=dtype))
        if p["recipe"] == "bf16_mixed":
            model.to(dtype)  # the frozen base in the training precision
    return model


def measure(p: dict, steps: int = 3) -> dict:  # pragma: no cover - needs a GPU
    import torch
    import torch.nn.functional as F

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = _build(p)
    params = [q for q in model.parameters() if q.requires_grad]
    opt = (torch.optim.AdamW(params, lr=1e-4) if p["optimizer"] == "adamw"
           else torch.optim.SGD(params, lr=1e-4, momentum=0.9))
    vocab = SHAPES[p["shape"]]["vocab"]
    autocast = p["recipe"] == "bf16_mixed" and p["peft"] == "none"
    try:
        for _ in range(steps):
            ids = torch.randint(0, vocab, (p["micro_batch"], p["seq_len"]), device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
                logits = model(ids)
            loss = F.cross_entropy(logits.view(-1, vocab), ids.view(-1))
            del logits
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        out = {"allocated": torch.cuda.max_memory_allocated(), "reserved": torch.cuda.max_memory_reserved()}
    except torch.cuda.OutOfMemoryError:
        out = {"oom": True}
    del model, opt
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry", action="store_true", help="build the grid and the estimates only (no torch)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    args = ap.parse_args(argv[1:])
    rows = []
    for p in grid(args.limit):
        row = {k: v for k, v in p.items() if k != "spec"}
        row["spec"] = p["spec"]
        row["estimate"] = estimated(p["spec"])
        if not args.dry:
            row["measured"] = measure(p, args.steps)
            m, e = row["measured"], row["estimate"]
            if "allocated" in m:
                row["error"] = {k: e[k] / m[k] - 1 for k in ("allocated", "reserved")}
        rows.append(row)
        label = " ".join(f"{k}={row[k]}" for k in GRID)
        est = row["estimate"]
        line = f"{label}: estimate allocated {est['allocated'] / 2**30:.2f} GiB"
        if "error" in row:
            line += (f", measured {row['measured']['allocated'] / 2**30:.2f} GiB "
                     f"({100 * row['error']['allocated']:+.1f}%)")
        elif row.get("measured", {}).get("oom"):
            line += ", measured: OOM"
        print(line)
    print(f"{len(rows)} grid points{' (dry: nothing measured)' if args.dry else ''}")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
