"""train.py's held-out measurements: fixed eval rows (seeded once), losses and exact answers per family, and
R-NIAH's default cells as REFRACT builds them (prepare.ts recorded their prompt ids), teacher-forced and greedy."""
import numpy as np
import torch
import torch.nn.functional as F

import data as D
from model import flex_mask, prefix_lm_mask


def device_batch(b, device):
    """numpy batch -> tensors; `targets`: flat indices of the positions with a label (no sync on the GPU)."""
    t = {k: torch.from_numpy(np.ascontiguousarray(v)).to(device, non_blocking=True) for k, v in b.items()}
    idx = np.flatnonzero(b["labels"].reshape(-1) >= 0)
    t["targets"] = torch.from_numpy(idx).to(device, non_blocking=True)
    return t


def forward_targets(model, t, autocast, bp_cycles=None, flex=False):
    """Logits [N, V] f32 at the target positions, their labels and families (flex: attention through
    flex_attention's block mask, not a dense boolean one)."""
    mask = (flex_mask if flex else prefix_lm_mask)(t["seg"], t["prefix"])
    with autocast():
        z = model.hidden(t["ids"], t["pos"], mask, bp_cycles)
        z = z.reshape(-1, z.shape[-1]).index_select(0, t["targets"])
        logits = model.logits(z)
    return logits, t["labels"].reshape(-1)[t["targets"]], t["family"].reshape(-1)[t["targets"]].long()


def one_sample_rows(S, n, make, pad):
    rows = []
    for _ in range(n):
        r = D.Row(S, pad)
        r.add(make())
        rows.append(r.close())
    return rows


class Evaluator:
    def __init__(self, data, seed, context, small):
        rng = np.random.default_rng([seed, 7])
        k = 8 if small else 1
        short = min(1024, context)
        pad = data.pad
        self.sets = {
            "val_text": one_sample_rows(short, 48 // k, lambda: data.text_plm(rng, "val", short, "noisy"), pad),
            "val_causal": one_sample_rows(short, 16 // k, lambda: data.text_causal(rng, "val", short), pad),
            "kv": one_sample_rows(512, 64 // k, lambda: data.kv(rng, "kv_eval", 20, "synth,cot"), pad),
            "copy": one_sample_rows(512, 32 // k, lambda: data.copy(rng, "val", 100, "synth,cot"), pad),
        }
        for S in sorted({short, context}):
            self.sets[f"needle_{S}"] = one_sample_rows(
                S, (64 if S <= 1024 else 32) // k, lambda: data.needle(rng, "val", "needle_eval", S, "synth,cot"), pad)
        r = data.v["rniah"]
        self.code = np.array(data.v["forbidden"]["code_ids"], np.int64)
        self.answer = np.concatenate([self.code, [data.eos]])
        self.keyword = r["keyword"].lower()
        self.cells = [c for c in r["cells"] if len(c["ids"]) + len(self.answer) <= context]
        for c in self.cells:
            row = D.Row(len(c["ids"]) + len(self.answer), pad)
            row.add([(np.array(c["ids"], np.int64), True, -1), (self.answer, False, D.NEEDLE)])
            c["row"] = row.close()
        self.decode = data.v["decode"]
        self.eos = data.eos

    @torch.no_grad()
    def rows(self, model, rows, device, autocast):
        """Mean CE per family and the share of rows whose every target is the argmax (exact greedy answers)."""
        S = len(rows[0].ids)
        chunk = max(1, 32768 // S)
        ce_sum, count, exact = torch.zeros(4, device=device), torch.zeros(4, device=device), 0
        for i in range(0, len(rows), chunk):
            part = rows[i:i + chunk]
            t = device_batch(D.stack(part), device)
            logits, labels, fam = forward_targets(model, t, autocast)
            ce = F.cross_entropy(logits, labels, reduction="none")
            ce_sum.index_add_(0, fam, ce)
            count.index_add_(0, fam, torch.ones_like(ce))
            wrong = torch.zeros(len(part), device=device)
            wrong.index_add_(0, t["targets"] // S, (logits.argmax(-1) != labels).float())
            exact += int((wrong == 0).sum())
        loss = (ce_sum / count.clamp(min=1)).tolist()
        return {f: round(loss[i], 4) for i, f in enumerate(D.FAMILIES) if count[i] > 0} | {
            "exact": round(exact / len(rows), 4)}

    def run(self, model, device, autocast):
        out = {name: self.rows(model, rows, device, autocast) for name, rows in self.sets.items()}
        hits = []
        for c in self.cells:
            r = self.rows(model, [c["row"]], device, autocast)
            hits.append({"length": c["length"], "position": c["position"], "exact": r["exact"], "ce": r["needle"]})
        out["rniah_default_teacher_forced"] = hits
        return out

    @torch.no_grad()
    def greedy(self, model, device, new_tokens=20):
        """R-NIAH's default cells decoded greedily in f32 (as REFRACT runs the embedded model), no cache: each
        step runs prompt (one prefix block) + the tokens so far (causal). Hit = the keyword in the decoded text."""
        out = []
        for c in self.cells:
            ids, P = list(c["ids"]), len(c["ids"])
            for _ in range(new_tokens):
                n = len(ids)
                t = {"ids": torch.tensor([ids], device=device), "pos": torch.arange(n, device=device)[None],
                     "seg": torch.zeros(1, n, dtype=torch.long, device=device),
                     "prefix": (torch.arange(n, device=device) < P)[None]}
                z = model.hidden(t["ids"], t["pos"], prefix_lm_mask(t["seg"], t["prefix"]))
                nxt = int(model.logits(z[0, -1:]).argmax(-1))
                if nxt == self.eos:
                    break
                ids.append(nxt)
            text = "".join(self.decode[i] for i in ids[P:])
            out.append({"length": c["length"], "position": c["position"], "text": text,
                        "hit": self.keyword in text.lower()})
        return out
