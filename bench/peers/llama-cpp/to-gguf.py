"""An HRM-Text checkpoint folder -> GGUF for llama.cpp's `hrm_text` architecture, with numpy and llama.cpp's own gguf-py
(the packed source's gguf-py/, found through --gguf-py or GGUF_PY), without torch or transformers:

  python3 bench/peers/llama-cpp/to-gguf.py --model DIR --out FILE.gguf [--outtype bf16|f32|f16]
                                           [--tokenizer tokenizer.json] [--gguf-py PATH]

Why not llama.cpp's convert_hf_to_gguf.py: it needs torch and transformers (AutoTokenizer), which this repository's
CPU machine lacks, and it names a BPE pre-tokenizer by hashing the tokenizer's output on a test text: it knows
DFM-Mimir's hash only, so it stops on sapientinc's HRM-Text tokenizer ("BPE pre-tokenizer was not recognized") and on
the embedded model's. The layout written here is the one its HrmTextModel class (conversion/hrm_text.py) writes:
  - block_count = layers_per_stack * H_cycles * (L_cycles + 1) (the cache slots; llama.cpp aliases them) and
    hrm.{layers_per_stack,h_cycles,l_cycles,prefix_lm}; embedding_scale; head_dim as key/value length and rope
    dimension count;
  - the L stack's layers in blocks [0, layers_per_stack), the H stack's after them;
  - attn.gqkv_proj rows split into attn_gate | attn_q | attn_k | attn_v (in that order, as the checkpoint fuses
    them), mlp.gate_up_proj rows into ffn_gate | ffn_up; o_proj -> attn_output, down_proj -> ffn_down;
    embed_tokens -> token_embd, lm_head -> output, z_L_init -> hrm.z_l_init (F32; zeros when absent);
  - the vocabulary as gpt2 BPE (tokens by id, merges, CONTROL for the added special tokens), padded to vocab_size
    with [PAD{i}] as the upstream converter pads; pre-tokenizer "qwen2" when the split regex is Qwen2's (HRM-Text's
    is), else "default".
Split checkpoints (q/k/v/gate_proj, gate/up_proj apart) and sharded ones (model.safetensors.index.json) are read
too. Matrices go out as --outtype (bf16 keeps a bf16 checkpoint's bits exactly; f32 widens them exactly); 1-D
tensors as F32. Quantized types (Q8_0, Q4_0) come from llama-quantize on the bf16 file (bench/peers/llama-cpp/run.sh).
A checkpoint without tokenizer.json (tools/parity-1b/make.py's random weights) takes --tokenizer's, padded.
"""
import argparse
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from safetensors_np import Safetensors, to_f32  # noqa: E402

QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")


def import_gguf(path):
    for p in [path, os.environ.get("GGUF_PY"), "/tmp/hrm-peers/src/gguf-py"]:
        if p and os.path.isdir(os.path.join(p, "gguf")):
            sys.path.insert(0, p)
            break
    import gguf  # noqa: E402
    return gguf


def bf16_bits(dtype, a):
    if dtype == "BF16":
        return np.ascontiguousarray(a)
    b = a.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def config_of(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    h, l = c["H_cycles"], c["L_cycles"]
    lps = c.get("num_layers_per_stack")
    if lps is None:  # legacy: num_hidden_layers is per stack
        lps = c["num_hidden_layers"]
    elif c.get("num_hidden_layers") not in (None, lps * h * (l + 1)):
        raise SystemExit(f"to-gguf: num_hidden_layers {c['num_hidden_layers']} is neither the per-stack count {lps} nor "
                         f"the slot count {lps * h * (l + 1)}")
    theta = c.get("rope_theta") or (c.get("rope_parameters") or {}).get("rope_theta") or 10000.0
    scale = c.get("embedding_scale") or 1.0 / c["initializer_range"]
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return c, lps, h, l, float(theta), float(scale), head_dim


def vocab(path, vocab_size, gguf):
    with open(path) as f:
        t = json.load(f)
    m = t["model"]
    if m.get("type") != "BPE":
        raise SystemExit(f"to-gguf: {path}: tokenizer model {m.get('type')}, only BPE")
    tokens = [None] * vocab_size
    types = [gguf.TokenType.UNUSED] * vocab_size
    for tok, i in m["vocab"].items():
        if i < vocab_size:
            tokens[i], types[i] = tok, gguf.TokenType.NORMAL
    for a in t.get("added_tokens", []):
        if a["id"] < vocab_size:
            tokens[a["id"]] = a["content"]
            types[a["id"]] = gguf.TokenType.CONTROL if a.get("special") else gguf.TokenType.USER_DEFINED
    for i in range(vocab_size):
        if tokens[i] is None:
            tokens[i] = f"[PAD{i}]"
    merges = [m_ if isinstance(m_, str) else " ".join(m_) for m_ in m.get("merges", [])]
    regexes = []

    def walk(p):
        if isinstance(p, dict):
            if p.get("type") == "Split" and isinstance(p.get("pattern"), dict) and "Regex" in p["pattern"]:
                regexes.append(p["pattern"]["Regex"])
            for v in p.values():
                walk(v)
        elif isinstance(p, list):
            for v in p:
                walk(v)
    walk(t.get("pre_tokenizer"))
    pre = "qwen2" if regexes == [QWEN2_SPLIT] else "default"
    return tokens, types, merges, pre


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--outtype", default="bf16", choices=["bf16", "f32", "f16"])
    p.add_argument("--tokenizer", help="tokenizer.json for a checkpoint without one (padded to vocab_size)")
    p.add_argument("--gguf-py", help="llama.cpp's gguf-py folder (default: GGUF_PY, /tmp/hrm-peers/src/gguf-py)")
    a = p.parse_args()
    gguf = import_gguf(a.gguf_py)
    c, lps, hc, lc, theta, scale, head_dim = config_of(a.model)
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    heads, kv_heads = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    qd, kd = heads * head_dim, kv_heads * head_dim
    st = Safetensors(a.model, "to-gguf")

    w = gguf.GGUFWriter(a.out, "hrm_text")
    ftype = {"bf16": gguf.LlamaFileType.MOSTLY_BF16, "f32": gguf.LlamaFileType.ALL_F32,
             "f16": gguf.LlamaFileType.MOSTLY_F16}[a.outtype]
    w.add_name(os.path.basename(os.path.normpath(a.model)))
    w.add_block_count(lps * hc * (lc + 1))
    w.add_context_length(c.get("max_position_embeddings", 4096))
    w.add_embedding_length(H)
    w.add_feed_forward_length(I)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(theta)
    w.add_layer_norm_rms_eps(float(c.get("rms_norm_eps", 1e-6)))
    w.add_embedding_scale(scale)
    w.add_hrm_layers_per_stack(lps)
    w.add_hrm_h_cycles(hc)
    w.add_hrm_l_cycles(lc)
    w.add_hrm_prefix_lm(bool(c.get("prefix_lm", False)))
    w.add_vocab_size(V)
    w.add_file_type(ftype)

    tok_path = os.path.join(a.model, "tokenizer.json")
    if not os.path.exists(tok_path):
        if not a.tokenizer:
            raise SystemExit(f"to-gguf: {a.model} has no tokenizer.json: give --tokenizer (any HRM-Text tokenizer.json)")
        tok_path = a.tokenizer
    tokens, types, merges, pre = vocab(tok_path, V, gguf)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    for key, add in (("bos_token_id", w.add_bos_token_id), ("eos_token_id", w.add_eos_token_id),
                     ("pad_token_id", w.add_pad_token_id)):
        if isinstance(c.get(key), int):
            add(c[key])
    w.add_add_bos_token(False)

    def put(name, src):
        dtype, arr = src
        if arr.ndim == 1 or a.outtype == "f32":
            w.add_tensor(name, np.ascontiguousarray(to_f32(dtype, arr)))
        elif a.outtype == "f16":
            w.add_tensor(name, np.ascontiguousarray(to_f32(dtype, arr).astype(np.float16)))
        else:
            bits = bf16_bits(dtype, arr)
            w.add_tensor(name, bits, raw_shape=bits.shape, raw_dtype=gguf.GGMLQuantizationType.BF16)

    def rows(src, start, stop):
        dtype, arr = src
        return dtype, arr[start:stop]

    put("token_embd.weight", st.get("model.embed_tokens.weight", [V, H]))
    put("output.weight", st.get("lm_head.weight", [V, H]) if st.has("lm_head.weight")
        else st.get("model.embed_tokens.weight", [V, H]))
    z = st.get("model.z_L_init", [H]) if st.has("model.z_L_init") else ("F32", np.zeros(H, np.float32))
    put("hrm.z_l_init", z)
    for stack, base in (("L", 0), ("H", lps)):
        for i in range(lps):
            pre_ = f"model.{stack}_module.layers.{i}."
            blk = f"blk.{base + i}."
            if st.has(pre_ + "attn.gqkv_proj.weight"):
                g = st.get(pre_ + "attn.gqkv_proj.weight", [2 * qd + 2 * kd, H])
                at = 0
                for part, n in (("attn_gate", qd), ("attn_q", qd), ("attn_k", kd), ("attn_v", kd)):
                    put(blk + part + ".weight", rows(g, at, at + n))
                    at += n
            else:
                attn = "self_attn." if st.has(pre_ + "self_attn.q_proj.weight") else "attn."
                for part, src, n in (("attn_gate", "gate_proj", qd), ("attn_q", "q_proj", qd),
                                     ("attn_k", "k_proj", kd), ("attn_v", "v_proj", kd)):
                    put(blk + part + ".weight", st.get(pre_ + attn + src + ".weight", [n, H]))
            attn = "attn." if st.has(pre_ + "attn.o_proj.weight") else "self_attn."
            put(blk + "attn_output.weight", st.get(pre_ + attn + "o_proj.weight", [H, qd]))
            if st.has(pre_ + "mlp.gate_up_proj.weight"):
                gu = st.get(pre_ + "mlp.gate_up_proj.weight", [2 * I, H])
                put(blk + "ffn_gate.weight", rows(gu, 0, I))
                put(blk + "ffn_up.weight", rows(gu, I, 2 * I))
            else:
                put(blk + "ffn_gate.weight", st.get(pre_ + "mlp.gate_proj.weight", [I, H]))
                put(blk + "ffn_up.weight", st.get(pre_ + "mlp.up_proj.weight", [I, H]))
            put(blk + "ffn_down.weight", st.get(pre_ + "mlp.down_proj.weight", [H, I]))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"[to-gguf] wrote {a.out}: {a.outtype}, {2 * lps} blocks over {lps * hc * (lc + 1)} cache slots, vocab {V} "
          f"(pre {pre}, from {tok_path}), {os.path.getsize(a.out) / 2**20:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
