"""train.py's command line (README.md in this folder lists the flags)."""
import argparse
import os

import torch

import data as D

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

def parse_args(argv=None, doc=None):
    p = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--out", required=True, help="output folder (created)")
    a("--data", default=".h200/train", help="prepare.ts's folder")
    a("--tokenizer-dir", default=os.path.join(REPO, "models", "hrm-text-brown-10m"), help="tokenizer files to copy")
    a("--seed", type=int, default=1234)
    a("--minutes", type=float, default=7.5, help="wall-time budget of the whole run, outputs included")
    a("--steps", type=int, default=0, help="fixed step count (0: as many as fit the budget, measured)")
    a("--hidden", type=int, default=320)
    a("--intermediate", type=int, default=960)
    a("--layers", type=int, default=3, help="layers per stack")
    a("--heads", type=int, default=5)
    a("--head-dim", type=int, default=64)
    a("--h-cycles", type=int, default=2)
    a("--l-cycles", type=int, default=3)
    a("--context", type=int, default=4096, help="max_position_embeddings; the longest training rows")
    a("--lengths", default="512,1024,1024,2048,1024,4096", help="row lengths, one per step, cycled")
    a("--batch-tokens", type=int, default=65536, help="tokens per step (rows = batch_tokens / length)")
    a("--lr", type=float, default=1.5e-3)
    a("--min-lr-ratio", type=float, default=0.1)
    a("--warmup", type=int, default=100)
    a("--weight-decay", type=float, default=0.1)
    a("--clip", type=float, default=1.0)
    a("--mix", default=",".join(f"{k}={v}" for k, v in D.DEFAULT_MIX.items()), help="row kinds and shares")
    a("--weights", default="text=1,needle=1,kv=0.5,copy=0.5", help="loss weight of each family's mean")
    a("--early", type=float, default=0.0,
      help="share of the steps trained first on --early-lengths and --early-mix (short rows, copying-heavy)")
    a("--early-lengths", default="512,1024", help="row lengths of the early steps, cycled")
    a("--early-mix", default="text_plm=0.25,text_causal=0.05,needle=0.3,kv=0.2,copy=0.2",
      help="row kinds and shares of the early steps")
    a("--state", help="folder to save the whole training state in when the run stops (for --resume)")
    a("--resume", help="a --state folder: go on from its step, towards its step count and schedule")
    a("--init", help="an earlier call's --out folder: go on from its checkpoint's weights and step, AdamW afresh")
    a("--until", type=int, default=0, help="stop this call at this step (0: at the step count or the budget)")
    a("--bp-cycles", default="full", help="'full', or transformers' L_bp_cycles (e.g. 2)")
    a("--eval-every", type=int, default=200)
    a("--log-every", type=int, default=10)
    a("--select", choices=("score", "val", "last"), default="score",
      help="checkpoint: lowest val text loss + held-out needle loss (score), val text loss alone (val), or the "
           "last eval's weights (last: the reading tasks keep improving while Brown overfits)")
    a("--compile", action="store_true", help="torch.compile the layer function (training steps only)")
    a("--sdpa", choices=("efficient", "auto", "flex"), default="efficient",
      help="training steps' attention: the memory-efficient kernel only (an error if it refuses), torch's pick, or "
           "flex_attention over a block mask that skips masked blocks (checked against the dense mask first)")
    a("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a("--smoke", action="store_true", help="a tiny model, 3 steps unless --steps: checks the whole pipeline in seconds")
    args = p.parse_args(argv)
    if args.resume and args.init:
        p.error("--resume and --init: one or the other (the whole state, or an earlier call's outputs)")
    if args.resume or args.init:
        return args  # the shape, data, seed and schedule come from the saved run (Run.setup)
    if args.early and not args.steps:
        p.error("--early needs --steps: the early share is of a known step count")
    if args.smoke:
        args.hidden, args.intermediate, args.layers, args.heads, args.head_dim = 64, 128, 1, 2, 32
        args.h_cycles, args.l_cycles, args.context, args.lengths = 2, 2, 1024, "256,1024"
        args.batch_tokens, args.steps, args.warmup, args.eval_every = 2048, args.steps or 3, 2, 2
    return args


def lengths(spec, flag, context):
    out = [int(x) for x in spec.split(",")]
    if min(out) < 64 or max(out) > context:
        raise SystemExit(f"{flag} {spec}: row lengths from 64 up to --context {context}")
    return out
