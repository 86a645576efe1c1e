"""HRM-Text in plain torch, the math of src/hrm/model.ts (and of transformers' HrmText and the seed's MLX port):

  z_H = embed(ids) * embedding_scale;  z_L = z_L_init (zeros, frozen)
  for h < H_cycles: (for l < L_cycles: z_L = L_stack(z_L + z_H));  z_H = H_stack(z_H + z_L)
  logits = lm_head(z_H)
  stack(x) = rms(for each layer: x += attn(rms(x)); x += mlp(rms(x)))      (RMSNorm without weights)
  attn(x) = o_proj(sigmoid(gate) * sdpa(rope(q), rope(k), v)),  gate | q | k | v = gqkv_proj(x)  (rows in that order)
  mlp(x) = down_proj(silu(gate) * up),  gate | up = gate_up_proj(x)

RoPE is the rotate-half (GPT-NeoX) form on the whole head, angles in f32. Attention takes an explicit boolean mask
(True = may attend), so one call serves prefix-LM blocks, causal text and packed samples. Parameter names are the
checkpoint's tensor names (models/hrm-text-brown-10m/model.safetensors), so state_dict() is what gets saved.
"""
import json
import math
import struct
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    vocab_size: int = 2048
    hidden_size: int = 320
    intermediate_size: int = 960
    num_layers_per_stack: int = 3
    num_attention_heads: int = 5
    head_dim: int = 64
    H_cycles: int = 2
    L_cycles: int = 3
    max_position_embeddings: int = 4096
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0

    @property
    def embedding_scale(self):
        return math.sqrt(self.hidden_size)

    def to_json(self, special):
        """config.json as the current embedded model has it (transformers-style; our loader reads it)."""
        return {
            "model_type": "hrm_text", "architectures": ["HrmTextForCausalLM"],
            "vocab_size": self.vocab_size, "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.num_layers_per_stack * self.H_cycles * (self.L_cycles + 1),
            "num_layers_per_stack": self.num_layers_per_stack, "num_attention_heads": self.num_attention_heads,
            "num_key_value_heads": self.num_attention_heads, "head_dim": self.head_dim,
            "H_cycles": self.H_cycles, "L_cycles": self.L_cycles,
            "max_position_embeddings": self.max_position_embeddings, "rms_norm_eps": self.rms_norm_eps,
            "rope_parameters": {"rope_type": "default", "rope_theta": self.rope_theta},
            "initializer_range": 1 / self.embedding_scale, "embedding_scale": self.embedding_scale,
            "prefix_lm": True, "tie_word_embeddings": False,
            "bos_token_id": special["bos"], "eos_token_id": special["eos"], "pad_token_id": special["pad"],
            "torch_dtype": "bfloat16",
        }


def rms(x, eps):
    """Parameterless RMSNorm in f32 (as transformers' HrmTextRMSNorm), back in x's dtype."""
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def layer_forward(x, gqkv_w, o_w, gate_up_w, down_w, cos, sin, mask, eps: float):
    """One pre-norm layer on x [B, S, hidden]; cos, sin [B, S, 1, head_dim] f32; mask [B, 1, S, S] bool.
    A plain function of its tensors, so that torch.compile makes one graph for every layer of both stacks."""
    B, S, _ = x.shape
    D = cos.shape[-1]
    g, q, k, v = F.linear(rms(x, eps), gqkv_w).view(B, S, 4, -1, D).unbind(2)
    q = (q.float() * cos + rotate_half(q.float()) * sin).to(v.dtype)
    k = (k.float() * cos + rotate_half(k.float()) * sin).to(v.dtype)
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
    if isinstance(mask, torch.Tensor):
        a = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask)
    else:  # a flex_attention BlockMask (flex_mask)
        a = flex_attention()(qt, kt, vt, block_mask=mask)
    a = torch.sigmoid(g) * a.transpose(1, 2)
    x = x + F.linear(a.reshape(B, S, -1), o_w)
    gate, up = F.linear(rms(x, eps), gate_up_w).chunk(2, dim=-1)
    return x + F.linear(F.silu(gate) * up, down_w)


class Attn(nn.Module):
    def __init__(self, c):
        super().__init__()
        a = c.num_attention_heads * c.head_dim
        self.gqkv_proj = nn.Linear(c.hidden_size, 4 * a, bias=False)
        self.o_proj = nn.Linear(a, c.hidden_size, bias=False)


class Mlp(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_up_proj = nn.Linear(c.hidden_size, 2 * c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = Attn(c)
        self.mlp = Mlp(c)


class Stack(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleList([Layer(c) for _ in range(c.num_layers_per_stack)])


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.L_module = Stack(c)
        self.H_module = Stack(c)
        # HRM-Text's z_L_init: zeros and never trained (transformers keeps it frozen); saved with the checkpoint.
        self.register_buffer("z_L_init", torch.zeros(c.hidden_size))


class HrmText(nn.Module):
    def __init__(self, c, layer_fn=layer_forward):
        super().__init__()
        self.c = c
        self.model = Inner(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)
        self.layer_fn = layer_fn
        inv = 1.0 / (c.rope_theta ** (torch.arange(0, c.head_dim, 2, dtype=torch.float32) / c.head_dim))
        self.register_buffer("inv_freq", inv, persistent=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        """Upstream HRM-Text's init: truncated (2 sigma) LeCun normal for every projection and the head, and the
        embedding at std 1 / embedding_scale (so that embed * scale has unit scale)."""
        def trunc(w, std):
            nn.init.trunc_normal_(w, std=std, a=-2 * std, b=2 * std)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                trunc(m.weight, m.in_features ** -0.5)
        trunc(self.model.embed_tokens.weight, 1 / self.c.embedding_scale)

    def stack(self, stack, x, cos, sin, mask):
        for layer in stack.layers:
            x = self.layer_fn(x, layer.attn.gqkv_proj.weight, layer.attn.o_proj.weight, layer.mlp.gate_up_proj.weight,
                              layer.mlp.down_proj.weight, cos, sin, mask, self.c.rms_norm_eps)
        return rms(x, self.c.rms_norm_eps)

    def hidden(self, ids, pos, mask, bp_cycles=None):
        """Final z_H [B, S, hidden] of ids [B, S] at positions pos [B, S] under mask [B, 1, S, S].
        bp_cycles: None backpropagates through every cycle; a list gives, per H cycle, how many of the last L
        cycles keep gradients (transformers' L_bp_cycles, left-padded with 1s); the others run under no_grad."""
        c = self.c
        ang = pos[..., None].float() * self.inv_freq
        ang = torch.cat((ang, ang), dim=-1)[:, :, None, :]
        cos, sin = ang.cos(), ang.sin()
        z_h = self.model.embed_tokens(ids) * c.embedding_scale
        z_l = self.model.z_L_init.expand_as(z_h)
        for h in range(c.H_cycles):
            keep = c.L_cycles if bp_cycles is None else bp_cycles[h]
            for l in range(c.L_cycles):
                with torch.set_grad_enabled(torch.is_grad_enabled() and l >= c.L_cycles - keep):
                    z_l = self.stack(self.model.L_module, z_l + z_h, cos, sin, mask)
            z_h = self.stack(self.model.H_module, z_h + z_l, cos, sin, mask)
        return z_h

    def logits(self, z):
        return self.lm_head(z).float()


def prefix_lm_mask(seg, prefix):
    """[B, 1, S, S] bool: i may attend j when both are in one sample and j <= i, or both are in its prefix block."""
    S = seg.shape[1]
    causal = torch.ones(S, S, dtype=torch.bool, device=seg.device).tril()
    same = seg[:, :, None] == seg[:, None, :]
    both = prefix[:, :, None] & prefix[:, None, :]
    return (same & (causal | both))[:, None]


_FLEX = []


def flex_attention():
    """torch's flex_attention, compiled once (uncompiled it runs the dense math); torch >= 2.5."""
    if not _FLEX:
        try:
            from torch.nn.attention.flex_attention import flex_attention as fa
        except ImportError as e:
            raise SystemExit(f"--sdpa flex: this torch ({torch.__version__}) has no flex_attention ({e})") from e
        _FLEX.append(torch.compile(fa, dynamic=False))
    return _FLEX[0]


def flex_mask(seg, prefix):
    """prefix_lm_mask as a flex_attention BlockMask: the blocks in which no query may attend any key (other samples
    of a packed row, the causal upper triangle) are skipped instead of computed and masked."""
    from torch.nn.attention.flex_attention import create_block_mask

    def may_attend(b, h, q, kv):
        return (seg[b, q] == seg[b, kv]) & ((kv <= q) | (prefix[b, q] & prefix[b, kv]))
    B, S = seg.shape
    return create_block_mask(may_attend, B, None, S, S, device=seg.device)


def bp_cycles_list(spec, c):
    """--bp-cycles 'full' -> None; '2' or '1,2' -> per-H-cycle counts, left-padded with 1s as transformers does."""
    if spec == "full":
        return None
    xs = [int(x) for x in spec.split(",")]
    if any(not 1 <= x <= c.L_cycles for x in xs) or len(xs) > c.H_cycles:
        raise ValueError(f"--bp-cycles {spec!r}: at most H_cycles={c.H_cycles} counts, each in 1..{c.L_cycles}")
    return [1] * (c.H_cycles - len(xs)) + xs


ST_DTYPES = {torch.bfloat16: "BF16", torch.float32: "F32", torch.int32: "I32"}


def save_safetensors(path, tensors, cast=torch.bfloat16):
    """A safetensors file (the format's header by hand: no safetensors package needed), names sorted. Every
    tensor is cast to `cast` (None: kept as it is: bf16, f32 or i32)."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().to("cpu", cast or tensors[name].dtype).contiguous()
        b = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    """{name: f32 tensor} of a bf16 / f16 / f32 safetensors file (the checkpoint train.py writes)."""
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    out = {}
    for name, e in json.loads(raw[8:8 + n]).items():
        if name == "__metadata__":
            continue
        a, b = (8 + n + x for x in e["data_offsets"])
        if e["dtype"] == "BF16":
            x = (np.frombuffer(raw[a:b], "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            x = np.frombuffer(raw[a:b], {"F16": "<f2", "F32": "<f4"}[e["dtype"]]).astype(np.float32)
        out[name] = torch.from_numpy(x.reshape(e["shape"]).copy())
    return out


def config_from_json(d):
    """model.py's Config from a config.json train.py wrote."""
    return Config(vocab_size=d["vocab_size"], hidden_size=d["hidden_size"], intermediate_size=d["intermediate_size"],
                  num_layers_per_stack=d["num_layers_per_stack"], num_attention_heads=d["num_attention_heads"],
                  head_dim=d["head_dim"], H_cycles=d["H_cycles"], L_cycles=d["L_cycles"],
                  max_position_embeddings=d["max_position_embeddings"], rms_norm_eps=d["rms_norm_eps"],
                  rope_theta=d["rope_parameters"]["rope_theta"])


def parameter_count(c):
    """As src/hrm/config.ts parameterCount: embeddings, lm_head, both stacks, z_L_init."""
    h, a, i = c.hidden_size, c.num_attention_heads * c.head_dim, c.intermediate_size
    layer = 4 * a * h + h * a + 2 * i * h + h * i
    return 2 * c.vocab_size * h + 2 * c.num_layers_per_stack * layer + h
