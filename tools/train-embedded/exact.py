"""Float64 logits of a checkpoint on reference.py's prompts: model.py's math (the same as src/hrm/model.ts) in float64
on the CPU, next to transformers' f32 reference, so that the parity checks can tell an f32 implementation's own
error (its distance from these) from the reference's (bench/harness/tf-parity.ts):

  prompt{i}.f64.prefix_logits|causal_logits  F32 [P, V]   the prompt alone, one prefix block / causal
  prompt{i}.f64.gen_logits                   F32 [N, V]   teacher-forced on reference.safetensors' f32 greedy ids

  python3 tools/train-embedded/exact.py --model DIR   (reads DIR/reference.safetensors, writes DIR/exact.safetensors)

Needs torch and numpy only; float64 of the embedded model's 4 prompts takes seconds on a CPU. Debian's torch 1.13
lacks F.scaled_dot_product_attention: model.py then gets the plain masked softmax(QK^T / sqrt(d))V.
"""
import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import HrmText, config_from_json, load_safetensors, prefix_lm_mask, save_safetensors  # noqa: E402

if not hasattr(F, "scaled_dot_product_attention"):
    def _sdpa(q, k, v, attn_mask=None):
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        return torch.softmax(s.masked_fill(~attn_mask, float("-inf")), -1) @ v
    F.scaled_dot_product_attention = _sdpa


def read_ints(path):
    """{name: list of ints} of the I32 tensors of a safetensors file (the prompts' ids and greedy ids)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for name, e in json.loads(raw[8:8 + n]).items():
        if name != "__metadata__" and e["dtype"] == "I32":
            a, b = (8 + n + x for x in e["data_offsets"])
            out[name] = list(struct.unpack(f"<{(b - a) // 4}i", raw[a:b]))
    return out


@torch.no_grad()
def logits(m, ids, n_prefix):
    """Logits of every position: the first n_prefix ids one bidirectional block, the rest causal."""
    x = torch.tensor([ids])
    prefix = torch.tensor([[i < n_prefix for i in range(len(ids))]])
    return m.logits(m.hidden(x, torch.arange(len(ids))[None], prefix_lm_mask(torch.zeros_like(x), prefix)))[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a model folder holding reference.safetensors (reference.py's)")
    a = p.parse_args()
    with open(os.path.join(a.model, "config.json")) as f:
        m = HrmText(config_from_json(json.load(f)))
    m.load_state_dict(load_safetensors(os.path.join(a.model, "model.safetensors")), strict=True)
    m.double().eval()
    m.logits = lambda z: m.lm_head(z)  # model.py's logits() rounds to f32; keep float64 until the file
    ref = read_ints(os.path.join(a.model, "reference.safetensors"))
    out = {}
    for i in range(sum(1 for k in ref if k.endswith(".ids"))):
        ids, gen = ref[f"prompt{i}.ids"], ref[f"prompt{i}.f32.gen_ids"]
        out[f"prompt{i}.f64.prefix_logits"] = logits(m, ids, len(ids))
        out[f"prompt{i}.f64.causal_logits"] = logits(m, ids, 0)
        # Step k's logits come from the prompt block and the first k generated ids (the last position's row).
        full = [logits(m, ids + gen[:k + 1], len(ids))[-1] for k in range(len(gen) - 1)]
        out[f"prompt{i}.f64.gen_logits"] = torch.stack([out[f"prompt{i}.f64.prefix_logits"][-1]] + full)
        print(f"[exact] prompt {i}: {len(ids)} ids, {len(gen)} teacher-forced steps", flush=True)
    path = os.path.join(a.model, "exact.safetensors")
    save_safetensors(path, {k: v.float() for k, v in out.items()}, cast=None)
    print(f"[exact] wrote {path}", flush=True)


if __name__ == "__main__":
    main()
