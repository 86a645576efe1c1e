#!/usr/bin/env python3
"""Write MLX reference logits for any HRM-Text checkpoint, in the file format of `hrm logits`.

For people with MLX (Apple silicon). Follows the seed's MLX port (hrm_mlx.py) with the fixes the spec lists:
model.z_L_init is loaded (zeros only when absent), the prefix-LM mask is built over `offset + S` keys, and the
quantized cache follows mlx-lm (QuantizedKVCache, group 64; quantized before the pass, as REFRACT's KLD does).

    python tools/mlx_reference.py --model DIR --ids 6,12,495,7 --mode prefix --dtype bf16 --out mlx.safetensors
    npx hrm logits --model DIR --ids 6,12,495,7 --mode prefix --dtype bf16 --out ours.safetensors
    npx hrm compare mlx.safetensors ours.safetensors

Quantized checkpoints in MLX's layout (`hrm convert`, mlx-lm's convert: `<m>.weight` uint32, `<m>.scales`,
`<m>.biases`, config.json `quantization`) run through mx.quantized_matmul / mx.dequantize; `--quantize 4|8
[--q-group-size 64]` quantizes a dense checkpoint with mx.quantize first, as `hrm ... --quantize` does on load.

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


def load_weights(model_dir):
    files = [model_dir / "model.safetensors"]
    index = model_dir / "model.safetensors.index.json"
    if index.exists():
        files = sorted({model_dir / f for f in json.loads(index.read_text())["weight_map"].values()})
    elif not files[0].exists():
        files = [model_dir / "model_mlx.safetensors"]
    out = {}
    for f in files:
        # mx.load reads bf16 and the packed uint32 levels of quantized checkpoints as stored.
        out.update(mx.load(str(f)))
    return out


def to_dtype(w, dtype):
    """Float tensors in the activation dtype (packed levels stay uint32)."""
    return {k: t if t.dtype == mx.uint32 else t.astype(dtype) for k, t in w.items()}


def quant_spec(qcfg, module):
    """(group_size, bits) of a quantized module: its own config entry (mlx-lm's per-layer form) or the default."""
    e = qcfg.get(module, qcfg)
    return e.get("group_size", qcfg.get("group_size", 64)), e["bits"]


def quantize_weights(w, group_size, bits):
    """mx.quantize every matrix (projections, embedding, lm_head) in its stored dtype (scales and biases keep it),
    as `hrm --quantize` does while loading."""
    for k in [k for k in w if k.endswith(".weight") and w[k].ndim == 2 and w[k].shape[-1] % group_size == 0]:
        m = k[: -len(".weight")]
        w[k], w[m + ".scales"], w[m + ".biases"] = mx.quantize(w[k], group_size=group_size, bits=bits)
    return {"group_size": group_size, "bits": bits}


def linear(w, qcfg, module, x):
    """x @ W^T, through mx.quantized_matmul where the module is quantized."""
    if module + ".scales" not in w:
        return x @ w[module + ".weight"].T
    gs, bits = quant_spec(qcfg, module)
    return mx.quantized_matmul(x, w[module + ".weight"], w[module + ".scales"], w[module + ".biases"],
                               transpose=True, group_size=gs, bits=bits)


def embed(w, qcfg, ids):
    m = "model.embed_tokens"
    if m + ".scales" not in w:
        return w[m + ".weight"][ids]
    gs, bits = quant_spec(qcfg, m)
    return mx.dequantize(w[m + ".weight"][ids], w[m + ".scales"][ids], w[m + ".biases"][ids], group_size=gs, bits=bits)


def make_cache(slots, bits):
    from mlx_lm.models.cache import KVCache, QuantizedKVCache
    if bits is None:
        return [KVCache() for _ in range(slots)]
    return [QuantizedKVCache(group_size=64, bits=bits) for _ in range(slots)]


def attention(c, w, p, x, mask, offset, cache):
    from mlx_lm.models.base import scaled_dot_product_attention
    B, S, _ = x.shape
    H, D = c["heads"], c["hd"]
    gqkv = linear(w, c["quant"], p + "attn.gqkv_proj", x)
    gate, q, k, v = mx.split(gqkv, 4, axis=-1)
    q, k, v = (t.reshape(B, S, H, D).transpose(0, 2, 1, 3) for t in (q, k, v))
    q = mx.fast.rope(q, D, traditional=False, base=c["rope"], scale=1.0, offset=offset)
    k = mx.fast.rope(k, D, traditional=False, base=c["rope"], scale=1.0, offset=offset)
    k, v = cache.update_and_fetch(k, v)
    o = scaled_dot_product_attention(q, k, v, cache=cache, scale=1.0 / math.sqrt(D), mask=mask)
    o = o.transpose(0, 2, 1, 3)
    o = (mx.sigmoid(gate.reshape(B, S, H, D)) * o).reshape(B, S, H * D)
    return linear(w, c["quant"], p + "attn.o_proj", o)


def stack(c, w, name, x, mask, offset, cache, base):
    for i in range(c["per"]):
        p = f"model.{name}_module.layers.{i}."
        q = c["quant"]
        x = x + attention(c, w, p, mx.fast.rms_norm(x, None, c["eps"]), mask, offset, cache[base + i])
        h = mx.fast.rms_norm(x, None, c["eps"])
        g, u = mx.split(linear(w, q, p + "mlp.gate_up_proj", h), 2, axis=-1)
        x = x + linear(w, q, p + "mlp.down_proj", nn.silu(g) * u)
    return mx.fast.rms_norm(x, None, c["eps"])


def forward(c, w, ids, mode, cache, dtype):
    S = len(ids)
    offset = cache[0].offset
    idx = mx.arange(offset + S)
    causal = idx[None, :] <= (offset + mx.arange(S))[:, None]
    allow = mx.ones((S, offset + S), dtype=mx.bool_) if mode == "prefix" else causal
    mask = allow[None, None]
    z_H = embed(w, c["quant"], mx.array(ids))[None] * c["scale"]
    z_L = mx.broadcast_to(w.get("model.z_L_init", mx.zeros((c["hidden"],), dtype=dtype)), z_H.shape)
    for h in range(c["H"]):
        for l in range(c["L"]):
            z_L = stack(c, w, "L", z_L + z_H, mask, offset, cache, (h * (c["L"] + 1) + l) * c["per"])
        z_H = stack(c, w, "H", z_H + z_L, mask, offset, cache, (h * (c["L"] + 1) + c["L"]) * c["per"])
    return linear(w, c["quant"], "model.embed_tokens" if c["tied"] else "lm_head", z_H)[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, type=Path)
    ap.add_argument("--ids", required=True, help="comma-separated token ids")
    ap.add_argument("--mode", choices=["prefix", "causal"], default="prefix")
    ap.add_argument("--dtype", choices=["f32", "bf16"], default="f32")
    ap.add_argument("--kv-bits", type=int, choices=[4, 8], default=None, help="quantize the cache before the pass")
    ap.add_argument("--quantize", type=int, choices=[4, 8], default=None, help="mx.quantize the dense weights first")
    ap.add_argument("--q-group-size", type=int, choices=[32, 64, 128], default=64)
    ap.add_argument("--out", required=True, type=Path)
    a = ap.parse_args()
    dtype = mx.float32 if a.dtype == "f32" else mx.bfloat16
    raw = json.loads((a.model / "config.json").read_text())
    c = parse_config(raw)
    w = load_weights(a.model)
    c["quant"] = raw.get("quantization") or raw.get("quantization_config") or {}
    if a.quantize:
        c["quant"] = quantize_weights(w, a.q_group_size, a.quantize)
    w = to_dtype(w, dtype)
    ids = [int(t) for t in a.ids.split(",")]
    cache = make_cache(c["H"] * (c["L"] + 1) * c["per"], a.kv_bits)
    logits = forward(c, w, ids, a.mode, cache, dtype).astype(mx.float32)
    mx.eval(logits)
    from safetensors.numpy import save_file
    save_file({"logits": np.array(logits)}, str(a.out),
              metadata={"tool": "mlx_reference.py", "mode": a.mode, "dtype": a.dtype, "kv_bits": str(a.kv_bits),
                        "quantize": str(a.quantize)})
    print(f"wrote {a.out}: logits {list(logits.shape)}")


if __name__ == "__main__":
    main()
