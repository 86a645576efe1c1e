"""Train the embedded HRM-Text from scratch on one GPU within a wall-time budget (README.md in this folder).

  python3 tools/train-embedded/train.py --out $OUT [--minutes 7.5] [--seed 1234]   (after prepare.ts made .h200/train)
  python3 tools/train-embedded/train.py --out /tmp/smoke --smoke                    (3 steps of a tiny model)
  python3 tools/train-embedded/train.py --out $OUT --steps 4000 --state .h200/state   (stops at the budget, saves)
  python3 tools/train-embedded/train.py --out $OUT --resume .h200/state              (the next call goes on)
  python3 tools/train-embedded/train.py --out $OUT --init PREV   (on a fresh machine: from PREV's outputs)

Writes into --out: model.safetensors (bf16, the best eval step), config.json, tokenizer.json,
tokenizer_config.json, train-log.json, loss.png (when matplotlib is there). Outputs are written however the run
ends (budget, --steps, SIGTERM, an error), from the best checkpoint so far.
"""
import time

T0 = time.time()  # the budget counts from here (torch's import included)

import contextlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data as D  # noqa: E402
from evaluate import Evaluator, device_batch, forward_targets  # noqa: E402
from model import Config, HrmText, bp_cycles_list, flex_attention, layer_forward, parameter_count  # noqa: E402
from flags import lengths, parse_args  # noqa: E402
from outputs import versions, write_outputs  # noqa: E402
from state import load_init, load_state, save_state  # noqa: E402



def log(msg):
    print(f"[train {time.time() - T0:6.1f}s] {msg}", flush=True)


class Run:
    def __init__(self, args):
        self.args = args
        self.deadline = T0 + args.minutes * 60
        self.stop_reason = None
        self.record = {"seed": args.seed, "args": vars(args), "loss_curve": [], "evals": []}
        self.best = None  # (score, step, bf16 state dict on the CPU)
        self.start_step, self.total, self.tokens = 0, 0, 0
        self.resumed = None  # the saved state, when resuming
        self.inited = None  # an earlier call's outputs, with --init
        self.warm_from = 0  # the step the learning rate warms up from (--init: AdamW's moments start afresh)

    def setup(self):
        a = self.args
        if a.resume:
            self.resumed = load_state(a)
        elif a.init:
            self.inited = load_init(a)
        random.seed(a.seed)
        np.random.seed(a.seed)
        torch.manual_seed(a.seed)
        if not os.path.exists(os.path.join(a.data, "vocab.json")):
            raise SystemExit(f"--data {a.data}: no vocab.json; run `npx tsx tools/train-embedded/prepare.ts` first")
        self.data = D.Data(a.data)
        self.mix = D.kv_floats(a.mix, "--mix", D.DEFAULT_MIX)
        w = D.kv_floats(a.weights, "--weights", D.FAMILIES)
        self.early_mix = D.kv_floats(a.early_mix, "--early-mix", D.DEFAULT_MIX)
        self.lengths = lengths(a.lengths, "--lengths", a.context)
        self.early_lengths = lengths(a.early_lengths, "--early-lengths", a.context)
        if not 0 <= a.early < 1:
            raise SystemExit(f"--early {a.early}: a share of the steps, from 0 up to (not including) 1")
        self.c = Config(vocab_size=self.data.v["vocab_size"], hidden_size=a.hidden, intermediate_size=a.intermediate,
                        num_layers_per_stack=a.layers, num_attention_heads=a.heads, head_dim=a.head_dim,
                        H_cycles=a.h_cycles, L_cycles=a.l_cycles, max_position_embeddings=a.context)
        self.bp = bp_cycles_list(a.bp_cycles, self.c)
        self.dev = torch.device(a.device)
        cuda = self.dev.type == "cuda"
        if cuda:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            # Attention always has an explicit mask: the memory-efficient kernel (or math) takes it; cuDNN's
            # attention is kept out (its mask support varies between releases).
            getattr(torch.backends.cuda, "enable_cudnn_sdp", lambda _on: None)(False)
        self.autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if cuda else contextlib.nullcontext
        layer_fn = layer_forward
        if a.compile:
            import torch._dynamo as dynamo
            dynamo.config.cache_size_limit = 64  # one graph per (length, rows, grad mode)
            layer_fn = torch.compile(layer_forward, dynamic=False)
        self.model = HrmText(self.c, layer_fn).to(self.dev)
        self.weights = torch.tensor([w.get(f, 0.0) for f in D.FAMILIES], device=self.dev)
        decay = [p for n, p in self.model.named_parameters() if p.dim() == 2 and "embed_tokens" not in n]
        other = [p for n, p in self.model.named_parameters() if not (p.dim() == 2 and "embed_tokens" not in n)]
        groups = [{"params": decay, "weight_decay": a.weight_decay}, {"params": other, "weight_decay": 0.0}]
        self.opt = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.95), eps=1e-8, **({"fused": True} if cuda else {}))
        if self.resumed:
            st = self.resumed
            self.model.load_state_dict(st["model"])
            self.opt.load_state_dict(st["opt"])
            self.start_step, self.total, self.tokens, self.best = st["step"], st["total"], st["tokens"], st["best"]
            self.record = st["record"]
            log(f"resuming {a.resume} at step {self.start_step} of {self.total}")
        elif self.inited:
            st = self.inited
            self.model.load_state_dict(st["weights"])
            self.start_step = self.warm_from = st["step"]
            self.total, self.record = st["total"], st["record"]
            self.tokens = self.tokens_through(self.start_step)
            self.best = (st["score"], st["step"], {k: v.to(torch.bfloat16) for k, v in st["weights"].items()})
            log(f"going on from {a.init}'s checkpoint at step {self.start_step} of {self.total} (its bf16 weights; "
                f"AdamW's moments afresh, the rate warming up over {a.warmup} steps)")
        self.evaluator = Evaluator(self.data, a.seed, a.context, a.smoke)
        self.sdpa = sdpa_context(a.sdpa if cuda else "auto")
        self.flex = a.sdpa == "flex"
        if self.flex:
            self.check_flex()
        n = parameter_count(self.c)
        log(f"model: {n / 1e6:.2f} M parameters ({2 * n / 1e6:.1f} MB bf16), hidden {a.hidden}, {a.layers} layers a "
            f"stack, {a.heads} heads x {a.head_dim}, H {a.h_cycles} x L {a.l_cycles}, context {a.context}; "
            f"device {self.dev}" + (f" ({torch.cuda.get_device_name()})" if cuda else ""))
        self.record.update(config=self.c.to_json(self.data.v["special"]), parameters=n, bp_cycles=self.bp,
                           versions=versions(cuda))
        call = {"from_step": self.start_step}
        if a.init:
            call["init"] = f"{a.init}: its checkpoint's bf16 weights, AdamW's moments afresh"
        self.record.setdefault("calls", []).append(call)

    def lr(self, step, total):
        a = self.args
        if step < a.warmup:
            return a.lr * (step + 1) / a.warmup
        frac = min(1.0, (step - a.warmup) / max(1, total - a.warmup))
        lr = a.lr * (a.min_lr_ratio + (1 - a.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))
        # After --init, fresh moments would take full-size first steps: the rate warms up again.
        return lr * min(1.0, (step - self.warm_from + 1) / a.warmup) if self.warm_from else lr

    def tokens_through(self, step):
        """Tokens trained in steps 0 .. step - 1 (a step's rows fill batch_tokens at its row length)."""
        n = 0
        for i in range(step):
            lens = self.phase(i, self.total)[0]
            S = lens[i % len(lens)]
            n += max(1, self.args.batch_tokens // S) * S
        return n

    def phase(self, step, total):
        """Row lengths and mix of `step`: the early ones (short rows, copying-heavy) for the first --early share."""
        if step < self.args.early * total:
            return self.early_lengths, self.early_mix
        return self.lengths, self.mix

    def step(self, step, total):
        lens, mix = self.phase(step, total)
        self.last_early = lens is self.early_lengths
        S = lens[step % len(lens)]
        b = self.data.batch(np.random.default_rng([self.args.seed, step]), max(1, self.args.batch_tokens // S), S, mix)
        if not self.data.no_forbidden(b):
            raise RuntimeError(f"step {step}: a training row holds R-NIAH's default needle code (prepare.ts's pools?)")
        t = device_batch(b, self.dev)
        with self.sdpa():
            logits, labels, fam = forward_targets(self.model, t, self.autocast, self.bp, self.flex)
        ce = F.cross_entropy(logits, labels, reduction="none")
        sums = torch.zeros(4, device=self.dev).index_add_(0, fam, ce)
        counts = torch.zeros(4, device=self.dev).index_add_(0, fam, torch.ones_like(ce))
        w = self.weights * (counts > 0)
        loss = (w * sums / counts.clamp(min=1)).sum() / w.sum()
        self.last_lr = self.lr(step, total)
        for g in self.opt.param_groups:
            g["lr"] = self.last_lr
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # the backward of the kernel the forward ran
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.args.clip)
        self.opt.step()
        return S, b["labels"].size, torch.cat([loss.detach()[None], sums.detach(), counts])

    @torch.no_grad()
    def check_flex(self):
        """--sdpa flex: the first step's batch through flex_attention's block mask and through the dense mask must
        give the same logits up to the kernels' rounding, or the run stops before training on a wrong mask."""
        flex_attention()  # compiled once here (and named, where this torch has none)
        lens, mix = self.phase(self.start_step, self.total or self.args.steps or 1)
        S = lens[self.start_step % len(lens)]
        b = self.data.batch(np.random.default_rng([self.args.seed, self.start_step]), 2, S, mix)
        t = device_batch(b, self.dev)
        dense = forward_targets(self.model, t, self.autocast, flex=False)[0]
        flex = forward_targets(self.model, t, self.autocast, flex=True)[0]
        off = float((flex - dense).abs().max() / dense.abs().max().clamp(min=1e-6))
        log(f"--sdpa flex: {dense.shape[0]} targets at length {S}, max |logit diff| / max |logit| {off:.2e} "
            "against the dense mask")
        if not off <= 2e-2:
            raise SystemExit(f"--sdpa flex: logits differ from the dense mask's by {off:.2e} of the largest")

    def evaluate(self, step):
        t = time.time()
        self.model.layer_fn, fn = layer_forward, self.model.layer_fn  # eager: eval shapes vary
        self.model.eval()
        r = self.evaluator.run(self.model, self.dev, self.autocast)
        self.model.train()
        self.model.layer_fn = fn
        needle = [v["needle"] for k, v in r.items() if k.startswith("needle_")]
        r["score"] = round(r["val_text"]["text"] + sum(needle) / len(needle), 4)
        r.update(step=step, seconds=round(time.time() - t, 2), elapsed=round(time.time() - T0, 1))
        self.record["evals"].append(r)
        with open(os.path.join(self.args.out, "train-log.json"), "w") as f:  # so far, should the run be killed
            json.dump(self.record, f)
        key = {"score": r["score"], "val": r["val_text"]["text"], "last": -step}[self.args.select]
        if self.best is None or key < self.best[0]:
            state = {k: v.detach().to("cpu", torch.bfloat16).clone() for k, v in self.model.state_dict().items()}
            self.best = (key, step, state)
        tf = " ".join(f"{c['length']}@{c['position']}:{c['exact']:.0f}" for c in r["rniah_default_teacher_forced"])
        log(f"eval step {step}: val {r['val_text']['text']:.3f} causal {r['val_causal']['text']:.3f} | needle " +
            " ".join(f"{k[7:]} {v['exact']:.2f}" for k, v in r.items() if k.startswith("needle_")) +
            f" | kv {r['kv']['exact']:.2f} copy {r['copy']['exact']:.2f} | R-NIAH default {tf} | score {r['score']}"
            f" ({r['seconds']} s)")
        return r["seconds"]

    def train(self):
        a = self.args
        step, tokens = self.start_step, self.tokens
        eval_s = self.record["evals"][-1]["seconds"] if self.resumed or self.inited else self.evaluate(0)
        total = self.total or a.steps or 10 ** 9
        planning = not self.total and not a.steps
        cal = (len(self.lengths), 3 * len(self.lengths))  # steps timed to size the run (after a warm cycle)
        acc, n_acc, t_cal = None, 0, None
        while step < total:
            if self.stop_reason:
                break
            if a.until and step >= a.until:
                self.stop_reason = "until"
                break
            if time.time() + 1.5 * eval_s + 15 + (30 if a.smoke else 0) > self.deadline:  # final eval + outputs
                self.stop_reason = "budget"
                break
            if planning and step == cal[0]:
                if self.dev.type == "cuda":
                    torch.cuda.synchronize()
                t_cal = time.time()
            S, n, stats = self.step(step, total)
            tokens += n
            acc = stats if acc is None else acc + stats
            n_acc += 1
            step += 1
            if planning and step == cal[1]:
                total = self.plan(step, t_cal, cal[0], eval_s, "planned")
            if step % a.log_every == 0 or step == total:
                self.log_step(step, S, acc, tokens, n_acc)
                acc, n_acc = None, 0
            if step % a.eval_every == 0 or step == total:
                float(stats[0])
                t_eval = time.time()
                eval_s = self.evaluate(step)
                if planning and "steps_replanned" not in self.record and step > cal[1]:
                    # Once more with a warm eval's time and more steps timed (the schedule barely moves this early).
                    total = max(step + 1, self.plan(step, t_cal, cal[0], eval_s, "replanned", t_eval))
        if self.stop_reason in ("budget", "until") and self.record["evals"][-1]["step"] != step:
            self.evaluate(step)  # the reserve left time for it
        self.start_step, self.total, self.tokens = step, total, tokens
        self.record.update(steps=step, steps_total=total, tokens=tokens, stop_reason=self.stop_reason or "steps")
        self.close_call()

    def close_call(self):
        """This call's line in the record: the steps it trained, why it stopped, its wall time."""
        if "calls" in self.record:
            self.record["calls"][-1].update(to_step=self.start_step, stop_reason=self.stop_reason or "steps",
                                            wall_seconds=round(time.time() - T0, 1))

    def plan(self, step, t_from, step_from, eval_s, what, now=None):
        """The step count that fits the budget at the time per step measured since t_from (step_from)."""
        a = self.args
        if now is None and self.dev.type == "cuda":
            torch.cuda.synchronize()
        now = now or time.time()
        per = (now - t_from) / (step - step_from)
        left = self.deadline - time.time() - (1.5 * eval_s + 15)
        total = step + int(0.97 * left / (per + eval_s / a.eval_every))
        mem = torch.cuda.max_memory_allocated() / 2 ** 30 if self.dev.type == "cuda" else 0
        log(f"{per * 1000:.0f} ms a step ({a.batch_tokens / per:,.0f} tokens/s over the length cycle), eval "
            f"{eval_s:.1f} s, peak GPU memory {mem:.1f} GiB: {what} {total} steps")
        self.record.update({f"steps_{what}": total, "ms_per_step": round(per * 1000, 1), "peak_gib": round(mem, 1)})
        return total

    def log_step(self, step, S, acc, tokens, n):
        v = acc.tolist()
        fam = {f: round(v[1 + i] / v[5 + i], 4) for i, f in enumerate(D.FAMILIES) if v[5 + i] > 0}
        el = time.time() - T0
        if not math.isfinite(v[0]):
            self.stop_reason = "non-finite loss"  # the best checkpoint so far is what gets written
        self.record["loss_curve"].append({"step": step, "length": S, "early": self.last_early, "lr": self.last_lr,
                                          "loss": round(v[0] / n, 4), **fam, "elapsed": round(el, 1)})
        log(f"step {step} len {S}{' (early)' if self.last_early else ''} loss {v[0] / n:.3f} " +
            " ".join(f"{k} {x:.3f}" for k, x in fam.items()) +
            f" | {tokens:,} tokens")


def sdpa_context(choice):
    """A context that restricts scaled_dot_product_attention to the memory-efficient kernel (it takes an explicit
    mask without materialising the S x S scores; torch's math fallback would, and runs out of memory at 4096)."""
    if choice in ("auto", "flex"):
        return contextlib.nullcontext
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return lambda: sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION])


def main(argv=None):
    args = parse_args(argv, __doc__)
    os.makedirs(args.out, exist_ok=True)
    run = Run(args)

    def on_signal(signum, _frame):
        run.stop_reason = f"signal {signum}"
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        run.setup()
        run.train()
        if args.state:
            path = save_state(run, args.state)  # before the best checkpoint replaces the weights below
            log(f"saved the training state at step {run.start_step} of {run.total} in {path}")
        if run.stop_reason in (None, "budget", "until"):
            best = run.best[2] if run.best else None
            if best is not None:
                run.model.load_state_dict({k: v.float() for k, v in best.items()})
            run.model.layer_fn = layer_forward  # eager: every decode step is a new length
            greedy = run.record["rniah_default_greedy"] = run.evaluator.greedy(run.model, run.dev)
            log("R-NIAH default cells, greedy from the saved checkpoint: " + " ".join(
                f"{c['length']}@{c['position']}:{'hit' if c['hit'] else 'miss'}" for c in greedy))
    except BaseException as e:  # noqa: BLE001 - outputs are written whatever happened
        run.record["error"] = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        log(f"error: {e!r}")
        if isinstance(e, KeyboardInterrupt):
            run.stop_reason = "interrupted"
    finally:
        run.close_call()
        write_outputs(run, args, log, T0)
    return 1 if "error" in run.record else 0


if __name__ == "__main__":
    sys.exit(main())
