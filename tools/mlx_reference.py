#!/usr/bin/env python3
"""Write MLX reference logits for any HRM-Text checkpoint, in the file format of `hrm logits`.

For people with MLX (Apple silicon). Follows the seed's MLX port (hrm_mlx.py) with the fixes the spec lists:
model.z_L_init is loaded (zeros only when absent), the prefix-LM mask is built over `offset + S` keys, and the
quantized cache follows mlx-lm (QuantizedKVCache, group 64; quantized before the pass, as REFRACT's KLD does).

    python tools/mlx_reference.py --model DIR --ids 6,12,495,7 --mode prefix --dtype bf16 --out mlx.safetensors
    npx hrm logits --model DIR --ids 6,12,495,7 --mode prefix --dtype bf16 --out ours.safetensors
    npx hrm compare mlx.safetensors ours.safetensors

Output: one f32 tensor `logits` [S, V] (f32 copies of the model-dtype values), metadata with the settings.
Requires: mlx, mlx-lm (for the quantized cache), numpy, safetensors.
"""
import argparse
import json
import math
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
import numpy as np


def parse_config(d):
    H, L = d["H_cycles"], d["L_cycles"]
    per = d.get("num_layers_per_stack", d["num_hidden_layers"])
    rope = d.get("rope_theta", (d.get("rope_parameters") or {}).get("rope_theta"))
    scale = d.get("embedding_scale") or 1.0 / d["initializer_range"]
    heads = d["num_attention_heads"]
    return dict(V=d["vocab_size"], hidden=d["hidden_size"], inter=d["intermediate_size"], per=per, heads=heads,
                hd=d.get("head_dim", d["hidden_size"] // heads), eps=d.get("rms_norm_eps", 1e-6), rope=rope,
                H=H, L=L, scale=scale, tied=d.get("tie_word_embeddings", False))


def load_weights(model_dir, dtype):
    from safetensors import safe_open
    import torch  # bf16 tensors go through torch, as in the seed

    files = [model_dir / "model.safetensors"]
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted({model_dir / f for f in json.loads(index.read_text())["weight_map"].values()})
    elif not files[0].exists():
        files = [model_dir / "model_mlx.safetensors"]
    out = {}
    for f in files:
        with safe_open(str(f), framework="pt") as st:
            for k in st.keys():
                out[k] = mx.array(st.get_tensor(k).float().numpy()).astype(dtype)
    return out


def make_cache(slots, bits):
    from mlx_lm.models.cache import KVCache, QuantizedKVCache
    if bits is None:
        return [KVCache() for _ in range(slots)]
    return [QuantizedKVCache(group_size=64, bits=bits) for _ in range(slots)]


def attention(c, w, p, x, mask, offset, cache):
    from mlx_lm.models.base import scaled_dot_product_attention
    B, S, _ = x.shape
    H, D = c["heads"], c["hd"]
    gqkv = x @ w[p + "attn.gqkv_proj.weight"].T
    gate, q, k, v = mx.split(gqkv, 4, axis=-1)
    q, k, v = (t.reshape(B, S, H, D).transpose(0, 2, 1, 3) for t in (q, k, v))
    q = mx.fast.rope(q, D, traditional=False, base=c["rope"], scale=1.0, offset=offset)
    k = mx.fast.rope(k, D, traditional=False, base=c["rope"], scale=1.0, offset=offset)
    k, v = cache.update_and_fetch(k, v)
    o = scaled_dot_product_attention(q, k, v, cache=cache, scale=1.0 / math.sqrt(D), mask=mask)
    o = o.transpose(0, 2, 1, 3)
    o = (mx.sigmoid(gate.reshape(B, S, H, D)) * o).reshape(B, S, H * D)
    return o @ w[p + "attn.o_proj.weight"].T


def stack(c, w, name, x, mask, offset, cache, base):
    for i in range(c["per"]):
        p = f"model.{name}_module.layers.{i}."
        x = x + attention(c, w, p, mx.fast.rms_norm(x, None, c["eps"]), mask, offset, cache[base + i])
        h = mx.fast.rms_norm(x, None, c["eps"])
        g, u = mx.split(h @ w[p + "mlp.gate_up_proj.weight"].T, 2, axis=-1)
        x = x + (nn.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    return mx.fast.rms_norm(x, None, c["eps"])


def forward(c, w, ids, mode, cache, dtype):
    S = len(ids)
    offset = cache[0].offset
    idx = mx.arange(offset + S)
    causal = idx[None, :] <= (offset + mx.arange(S))[:, None]
    allow = mx.ones((S, offset + S), dtype=mx.bool_) if mode == "prefix" else causal
    mask = allow[None, None]
    z_H = w["model.embed_tokens.weight"][mx.array(ids)][None] * c["scale"]
    z_L = mx.broadcast_to(w.get("model.z_L_init", mx.zeros((c["hidden"],), dtype=dtype)), z_H.shape)
    for h in range(c["H"]):
        for l in range(c["L"]):
            z_L = stack(c, w, "L", z_L + z_H, mask, offset, cache, (h * (c["L"] + 1) + l) * c["per"])
        z_H = stack(c, w, "H", z_H + z_L, mask, offset, cache, (h * (c["L"] + 1) + c["L"]) * c["per"])
    head = w["model.embed_tokens.weight"] if c["tied"] else w["lm_head.weight"]
    return (z_H @ head.T)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--mode", choices=["prefix", "causal"], default="prefix")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--kv-bits", type=int, choices=[4, 8], default=None, help="quantize the cache before the pass")
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    dtype = mx.float32 if a.dtype == "f32" else mx.bfloat16
    c = parse_config(json.loads((a.model / "config.json").read_text()))
    w = load_weights(a.model, dtype)
    ids = [int(t) for t in a.ids.split(",")]
    cache = make_cache(c["H"] * (c["L"] + 1) * c["per"], a.kv_bits)
    logits = forward(c, w, ids, a.mode, cache, dtype).astype(mx.float32)
    mx.eval(logits)
    from safetensors.numpy import save_file
    save_file({"logits": np.array(logits)}, str(a.out),
              metadata={"tool": "mlx_reference.py", "mode": a.mode, "dtype": a.dtype, "kv_bits": str(a.kv_bits)})
    print(f"wrote {a.out}: logits {list(logits.shape)}")


if __name__ == "__main__":
    main()
