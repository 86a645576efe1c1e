"""An HRM-Text checkpoint folder -> the ONNX model transformers.js 4.3.1 runs for `hrm_text` (issue 44), written with
numpy and onnx only (no torch, no optimum: optimum has no hrm_text; the GPU machine has onnx and onnxruntime):

  python3 bench/peers/transformers-js/export-onnx.py --model DIR --out OUT [--dtype fp16|fp32] [--q4f16]
                                                     [--chunk-bytes 2000000000]

OUT/ gets config.json (the checkpoint's, num_hidden_layers = the 128 cache slots, with "transformers.js_config"
naming the external data chunks), generation_config.json, tokenizer files where the checkpoint has them, and
  onnx/model_fp16.onnx (+ model_fp16.onnx_data, _data_1, ...: chunks under 2 GB, as onnx-community's exports and
  transformers.js's use_external_data_format expect), or onnx/model.onnx for --dtype fp32;
  onnx/model_q4f16.onnx (+ _data) with --q4f16: every MatMul's weight to 4 bits, block 32, by onnxruntime's
  MatMulNBitsQuantizer (needs the onnxruntime Python package; the embedding stays fp16).

What transformers.js feeds and reads (src/models/hrm_text/modeling_hrm_text.js, modeling_utils.js, configs.js):
  inputs   input_ids int64 [batch_size, sequence_length]; attention_mask int64 [batch_size, total_sequence_length];
           position_ids int64 [batch_size, sequence_length] (made from attention_mask when the graph lists it);
           token_type_ids int64 [batch_size, sequence_length]: 1 on the prompt (prefill, no past), 0 on decode steps
           (HrmTextForCausalLM.prepare_inputs_for_generation);
           past_key_values.{i}.key / .value, i in 0..127 (getCacheNames: num_hidden_layers of the config),
           T [batch_size, num_key_value_heads, past_sequence_length, head_dim], empty (past 0) on the first call;
           num_logits_to_keep int64 [] (0: every position, 1: the last; transformers.js sets 1 when generating).
  outputs  logits T [batch_size, num_logits, vocab]; present.{i}.key / .value T [batch_size, heads,
           total_sequence_length, head_dim] (kept on the GPU: preferredOutputLocation 'gpu-buffer' for WebGPU).
Cache slot i is HRM's (stack invocation, layer) slot: (h*(L_cycles+1)+l)*layers_per_stack + layer for the L stack's
call (h, l), (h*(L_cycles+1)+L_cycles)*layers_per_stack + layer for the H stack's; the slots of one stack share its
weights (one initializer each, referenced by every invocation).

The graph: standard ONNX ops (opset 17) only, so that onnxruntime-web's WebGPU EP and its graph optimizer take it as
they take any exported decoder. Per layer: parameterless RMSNorm in f32 (Cast up, mean of squares, rsqrt, Cast down),
one MatMul to [gate|q|k|v] (the checkpoint's fused row order), rotate-half RoPE from cos/sin tables gathered at
position_ids, K/V concatenated to the past (the present outputs), softmax(q k^T / sqrt(d) + mask) in f32, the sigmoid
gate, o_proj, the residual; SwiGLU MLP from one MatMul to [gate|up]; every stack ends in RMSNorm. The mask is HRM's
prefix-LM mask: key j visible to query i when j <= past + i (causal) or both are prompt tokens (token_type 1 in this
call), and attention_mask[j] = 1. Weights transposed to [in, out] (MatMul's B) in fp16 (from bf16: exact widening,
then round to nearest fp16) or fp32.
onnx-community/HRM-Text-1B-ONNX's own graph is not public as a script; a third party's script that refits it
(initializers model.{L,H}_module.layers.N.self_attn.qkvg_proj.weight [q|k|v|gate], model.hrm_text.rmsnorm.weight,
cos_cache / sin_cache, lm_head.MatMul.weight, logits [batch_size, num_logits_to_keep, vocab]) shows that it uses
onnxruntime's fused contrib ops (ONNX Runtime GenAI builder style) instead of the standard ops here: expect its
speed to differ from this export's, not its outputs.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from safetensors_np import Safetensors, to_f32  # noqa: E402

F32, F16, I64, BOOL = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.BOOL


class Graph:
    def __init__(self, T):
        self.T, self.nodes, self.inits, self.n = T, [], [], 0
        self.np_t = np.float16 if T == F16 else np.float32

    def name(self, base):
        self.n += 1
        return f"{base}_{self.n}"

    def op(self, op, inputs, out=None, **attrs):
        out = out or self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=self.name("n_" + op), **attrs))
        return out

    def ops(self, op, inputs, n_out, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name("n_" + op), **attrs))
        return outs

    def const(self, value, dtype, name=None):
        name = name or self.name("c")
        self.inits.append(helper.make_tensor(name, dtype, np.shape(value), np.asarray(value).flatten().tolist()))
        return name


def build(c, w, T, lps, hc, lc):
    H, I, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    nh = c["num_attention_heads"]
    nkv = c.get("num_key_value_heads", nh)
    D = c.get("head_dim") or H // nh
    qd, kd = nh * D, nkv * D
    eps = float(c.get("rms_norm_eps", 1e-6))
    theta = float(c.get("rope_theta") or (c.get("rope_parameters") or {}).get("rope_theta") or 10000.0)
    scale = float(c.get("embedding_scale") or 1.0 / c["initializer_range"])
    max_pos = c.get("max_position_embeddings", 4096)
    g = Graph(T)
    slots = lps * hc * (lc + 1)

    # Inputs and outputs.
    inputs = [helper.make_tensor_value_info("input_ids", I64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("attention_mask", I64, ["batch_size", "total_sequence_length"]),
              helper.make_tensor_value_info("position_ids", I64, ["batch_size", "sequence_length"]),
              helper.make_tensor_value_info("token_type_ids", I64, ["batch_size", "sequence_length"])]
    outputs = [helper.make_tensor_value_info("logits", T, ["batch_size", "num_logits", V])]
    for i in range(slots):
        for kv in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{kv}", T,
                                                        ["batch_size", nkv, "past_sequence_length", D]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{kv}", T,
                                                         ["batch_size", nkv, "total_sequence_length", D]))
    inputs.append(helper.make_tensor_value_info("num_logits_to_keep", I64, []))

    # Weights (the external data is attached when saving).
    def weight(name, arr):
        g.inits.append(numpy_tensor(name, np.ascontiguousarray(arr.astype(g.np_t))))
        return name

    def get(key, shape):
        return to_f32(*w.get(key, shape))

    embed = weight("model.embed_tokens.weight", get("model.embed_tokens.weight", [V, H]))
    lm_key = "lm_head.weight" if w.has("lm_head.weight") else "model.embed_tokens.weight"
    lm = weight("lm_head.weight_t", get(lm_key, [V, H]).T)
    zl = weight("model.z_L_init", get("model.z_L_init", [H]) if w.has("model.z_L_init") else np.zeros(H, np.float32))
    inv = 1.0 / theta ** (np.arange(0, D, 2, dtype=np.float64) / D)
    ang = np.outer(np.arange(max_pos, dtype=np.float64), inv)
    cos_c = weight("cos_cache", np.cos(ang).astype(np.float32))
    sin_c = weight("sin_cache", np.sin(ang).astype(np.float32))
    layers = {}
    for stack in ("L", "H"):
        for i in range(lps):
            p = f"model.{stack}_module.layers.{i}."
            if w.has(p + "attn.gqkv_proj.weight"):
                gqkv = get(p + "attn.gqkv_proj.weight", [2 * qd + 2 * kd, H])
            else:
                a = "self_attn." if w.has(p + "self_attn.q_proj.weight") else "attn."
                gqkv = np.concatenate([get(p + a + n + "_proj.weight", [r, H])
                                       for n, r in (("gate", qd), ("q", qd), ("k", kd), ("v", kd))])
            a = "attn." if w.has(p + "attn.o_proj.weight") else "self_attn."
            if w.has(p + "mlp.gate_up_proj.weight"):
                gu = get(p + "mlp.gate_up_proj.weight", [2 * I, H])
            else:
                gu = np.concatenate([get(p + "mlp.gate_proj.weight", [I, H]), get(p + "mlp.up_proj.weight", [I, H])])
            layers[stack, i] = (weight(p + "gqkv_t", gqkv.T), weight(p + "o_t", get(p + a + "o_proj.weight", [H, qd]).T),
                                weight(p + "gate_up_t", gu.T), weight(p + "down_t", get(p + "mlp.down_proj.weight", [H, I]).T))

    # Constants.
    one = g.const([1], I64)
    zero_s, one_s = g.const(0, I64), g.const(1, I64)
    ax0, ax1, ax2 = g.const([0], I64), g.const([1], I64), g.const([2], I64)
    axm1 = g.const([-1], I64)
    big = g.const([2 ** 62], I64)
    cast_t = (lambda x: x) if T == F32 else (lambda x: g.op("Cast", [x], to=T))
    cast_f = (lambda x: x) if T == F32 else (lambda x: g.op("Cast", [x], to=F32))
    eps_c = g.const(eps, F32)
    g.inits.append(numpy_tensor("q_scale", np.array(1.0 / np.sqrt(D), g.np_t)))
    g.inits.append(numpy_tensor("emb_scale", np.array(scale, g.np_t)))
    qscale = "q_scale"
    split_d = g.const([D // 2, D // 2], I64)
    split_qkv = g.const([qd, qd, kd, kd], I64)
    split_gu = g.const([I, I], I64)
    shape_q = g.const([0, 0, nh, D], I64)
    shape_k = g.const([0, 0, nkv, D], I64)
    shape_o = g.const([0, 0, qd], I64)

    # Positions, RoPE tables [B, 1, S, D].
    cos = cast_t(g.op("Gather", [cos_c, "position_ids"]))
    sin = cast_t(g.op("Gather", [sin_c, "position_ids"]))
    cos = g.op("Unsqueeze", [g.op("Concat", [cos, cos], axis=-1), ax1])
    sin = g.op("Unsqueeze", [g.op("Concat", [sin, sin], axis=-1), ax1])

    # The prefix-LM mask as an additive f32 bias [B, 1, S, T].
    shp_ids, shp_am = g.op("Shape", ["input_ids"]), g.op("Shape", ["attention_mask"])
    b_dim = g.op("Gather", [shp_ids, zero_s])
    s_dim = g.op("Gather", [shp_ids, one_s])
    t_dim = g.op("Gather", [shp_am, one_s])
    p_dim = g.op("Sub", [t_dim, s_dim])
    qpos = g.op("Range", [p_dim, t_dim, one_s])
    kpos = g.op("Range", [zero_s, t_dim, one_s])
    causal = g.op("LessOrEqual", [g.op("Unsqueeze", [kpos, ax0]), g.op("Unsqueeze", [qpos, ax1])])  # [S, T]
    zeros_bp = g.op("ConstantOfShape", [g.op("Concat", [g.op("Unsqueeze", [b_dim, ax0]), g.op("Unsqueeze", [p_dim, ax0])], axis=0)],
                    value=helper.make_tensor("z", I64, [1], [0]))
    tt_full = g.op("Concat", [zeros_bp, "token_type_ids"], axis=1)  # [B, T]
    tt_q = g.op("Unsqueeze", [g.op("Equal", ["token_type_ids", one]), ax2])  # [B, S, 1]
    tt_k = g.op("Unsqueeze", [g.op("Equal", [tt_full, one]), ax1])  # [B, 1, T]
    allowed = g.op("Or", [g.op("Unsqueeze", [causal, ax0]), g.op("And", [tt_q, tt_k])])
    allowed = g.op("And", [allowed, g.op("Unsqueeze", [g.op("Equal", ["attention_mask", one]), ax1])])
    bias = g.op("Unsqueeze", [g.op("Where", [allowed, g.const(0.0, F32), g.const(-1e30, F32)]), ax1])

    def rms(x):
        x32 = cast_f(x)
        ms = g.op("ReduceMean", [g.op("Mul", [x32, x32])], axes=[-1], keepdims=1)
        return cast_t(g.op("Mul", [x32, g.op("Reciprocal", [g.op("Sqrt", [g.op("Add", [ms, eps_c])])])]))

    def rope(x):
        x1, x2 = g.ops("Split", [x, split_d], 2, axis=-1)
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rot, sin])])

    def layer(x, slot, wts):
        w_gqkv, w_o, w_gu, w_d = wts
        h = rms(x)
        gate, q, k, v = g.ops("Split", [g.op("MatMul", [h, w_gqkv]), split_qkv], 4, axis=-1)
        q = g.op("Transpose", [g.op("Reshape", [g.op("Mul", [q, qscale]), shape_q])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [k, shape_k])], perm=[0, 2, 1, 3])
        v = g.op("Transpose", [g.op("Reshape", [v, shape_k])], perm=[0, 2, 1, 3])
        q, k = rope(q), rope(k)
        pk = g.op("Concat", [f"past_key_values.{slot}.key", k], f"present.{slot}.key", axis=2)
        pv = g.op("Concat", [f"past_key_values.{slot}.value", v], f"present.{slot}.value", axis=2)
        if nkv != nh:  # grouped-query attention: repeat K/V heads
            pk = g.op("Reshape", [g.op("Tile", [g.op("Unsqueeze", [pk, ax2]), g.const([1, 1, nh // nkv, 1, 1], I64)]),
                                  g.const([0, nh, -1, D], I64)])
            pv = g.op("Reshape", [g.op("Tile", [g.op("Unsqueeze", [pv, ax2]), g.const([1, 1, nh // nkv, 1, 1], I64)]),
                                  g.const([0, nh, -1, D], I64)])
        s = g.op("MatMul", [q, g.op("Transpose", [pk], perm=[0, 1, 3, 2])])
        p = cast_t(g.op("Softmax", [g.op("Add", [cast_f(s), bias])], axis=-1))
        o = g.op("Reshape", [g.op("Transpose", [g.op("MatMul", [p, pv])], perm=[0, 2, 1, 3]), shape_o])
        o = g.op("MatMul", [g.op("Mul", [o, g.op("Sigmoid", [gate])]), w_o])
        x = g.op("Add", [x, o])
        gt, up = g.ops("Split", [g.op("MatMul", [rms(x), w_gu]), split_gu], 2, axis=-1)
        act = g.op("Mul", [g.op("Mul", [gt, g.op("Sigmoid", [gt])]), up])
        return g.op("Add", [x, g.op("MatMul", [act, w_d])])

    def stack(x, name, base):
        for i in range(lps):
            x = layer(x, base + i, layers[name, i])
        return rms(x)

    zh = g.op("Mul", [g.op("Gather", [embed, "input_ids"]), "emb_scale"])
    zlv = zl
    for h in range(hc):
        for l in range(lc):
            zlv = stack(g.op("Add", [zlv, zh]), "L", (h * (lc + 1) + l) * lps)
        zh = stack(g.op("Add", [zh, zlv]), "H", (h * (lc + 1) + lc) * lps)
    keep = g.op("Neg", [g.op("Unsqueeze", ["num_logits_to_keep", ax0])])
    last = g.op("Slice", [zh, keep, big, ax1])
    g.op("MatMul", [last, lm], "logits")

    graph = helper.make_graph(g.nodes, "hrm_text", inputs, outputs, initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="hrm-webgpu bench/peers")
    model.ir_version = 8
    return model


def numpy_tensor(name, arr):
    t = numpy_helper.from_array(arr, name)
    return t


def save_chunked(model, path, chunk_bytes):
    """Initializers over 1 KiB to external files of at most chunk_bytes (model.onnx_data, model.onnx_data_1, ...)."""
    base = os.path.basename(path)
    d = os.path.dirname(path)
    files, f, offset = [], None, 0
    for t in model.graph.initializer:
        if len(t.raw_data) < 1024:
            continue
        n = len(t.raw_data)
        if f is None or (offset and offset + n > chunk_bytes):
            if f:
                f.close()
            name = base + "_data" + (f"_{len(files)}" if files else "")
            files.append(name)
            f, offset = open(os.path.join(d, name), "wb"), 0
        f.write(t.raw_data)
        t.ClearField("raw_data")
        del t.external_data[:]
        for k, v in (("location", files[-1]), ("offset", str(offset)), ("length", str(n))):
            e = t.external_data.add()
            e.key, e.value = k, v
        t.data_location = TensorProto.EXTERNAL
        offset += n
        pad = -offset % 64
        f.write(b"\0" * pad)
        offset += pad
    if f:
        f.close()
    with open(path, "wb") as out:
        out.write(model.SerializeToString())
    return files


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", default="fp16", choices=["fp16", "fp32"])
    p.add_argument("--q4f16", action="store_true", help="also onnx/model_q4f16.onnx (onnxruntime's MatMulNBitsQuantizer)")
    p.add_argument("--chunk-bytes", type=int, default=2_000_000_000)
    a = p.parse_args()
    c = json.load(open(os.path.join(a.model, "config.json")))
    hc, lc = c["H_cycles"], c["L_cycles"]
    lps = c.get("num_layers_per_stack") or c["num_hidden_layers"]
    slots = lps * hc * (lc + 1)
    T = F16 if a.dtype == "fp16" else F32
    w = Safetensors(a.model, "export-onnx")
    model = build(c, w, T, lps, hc, lc)
    os.makedirs(os.path.join(a.out, "onnx"), exist_ok=True)
    fname = "model_fp16.onnx" if a.dtype == "fp16" else "model.onnx"
    path = os.path.join(a.out, "onnx", fname)
    files = save_chunked(model, path, a.chunk_bytes)
    ext = {fname: len(files)}
    print(f"[export-onnx] {path}: {len(model.graph.node)} nodes, {slots} cache slots, external data {files}", flush=True)
    if a.q4f16 and a.dtype == "fp16":
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
        q = MatMulNBitsQuantizer(model=path, bits=4, block_size=32, is_symmetric=True, op_types_to_quantize=("MatMul",))
        q.process()
        qpath = os.path.join(a.out, "onnx", "model_q4f16.onnx")
        qfiles = save_chunked(q.model.model, qpath, a.chunk_bytes)
        ext["model_q4f16.onnx"] = len(qfiles)
        print(f"[export-onnx] {qpath}: external data {qfiles}", flush=True)
    cfg = dict(c, num_hidden_layers=slots, num_layers_per_stack=lps)
    try:  # an earlier export into OUT (the other dtype) keeps its entry
        ext = {**json.load(open(os.path.join(a.out, "config.json")))["transformers.js_config"]["use_external_data_format"], **ext}
    except (OSError, KeyError, ValueError):
        pass
    cfg["transformers.js_config"] = {"use_external_data_format": ext}
    json.dump(cfg, open(os.path.join(a.out, "config.json"), "w"), indent=1)
    json.dump({"bos_token_id": c.get("bos_token_id"), "eos_token_id": c.get("eos_token_id"),
               "pad_token_id": c.get("pad_token_id")}, open(os.path.join(a.out, "generation_config.json"), "w"))
    for f in ("tokenizer.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(a.model, f)):
            shutil.copy(os.path.join(a.model, f), os.path.join(a.out, f))


if __name__ == "__main__":
    main()
