"""Random weights of the HRM-Text-1B shape for the cross-check against transformers (bench/h200.sh runs it):

  python3 tools/parity-1b/make.py --out DIR [--config tools/parity-1b/config.json] [--seed 0] [--prompt-len 512]
                                  [--steps 32]

writes DIR/config.json (the --config file as it is: tools/parity-1b/config.ts writes it from src/hrm/config.ts's
HRM_TEXT_1B), DIR/model.safetensors (our fused layout: gqkv_proj rows gate|q|k|v, gate_up_proj rows gate|up; the
names of models/hrm-text-brown-10m/model.safetensors) and DIR/prompts.json (one prompt of --prompt-len seeded ids and
the decode length, in the format tools/train-embedded/reference.py's --prompts reads).

The scales mirror randomWeights in src/hrm/weights.ts (uniform in [-s, s]: s = 1/sqrt(fan_in) for every projection
and lm_head, 0.02 for the embedding), the init the library's 1B benchmarks run, under which activations stay O(1)
through the 128 layer calls: embed * embedding_scale has rms 0.02 * sqrt(1536) / sqrt(3) = 0.45, each projection
keeps the rms of its input within a factor sqrt(1/3), every stack ends in an RMSNorm, so logits have rms ~0.58.
z_L_init is zeros, as in every HRM-Text checkpoint.

The values are bf16 (stored as BF16): transformers widens them to f32 exactly, so its f32 run computes the very
function ours does, and our loader keeps them bf16 on the GPU, where the tensor-core prefill (bf16 weights only)
and the quantized weights' path run, as on the real checkpoint. numpy only (no torch), so that it also runs on a
machine without torch (the CPU machine checks it on the embedded model's shape).
"""
import argparse
import json
import os
import struct

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bf16_bits(x):
    """float32 array -> uint16 bf16 bits, round to nearest even (as fill_bf16 in src/kernels/init/random.wgsl)."""
    b = x.astype(np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(c):
    """(name, shape, scale) of every weight (write fills them in name order)."""
    h, a, i = c["hidden_size"], c["num_attention_heads"] * c["head_dim"], c["intermediate_size"]
    yield "model.embed_tokens.weight", (c["vocab_size"], h), 0.02
    for stack in ("L_module", "H_module"):
        for l in range(c["num_layers_per_stack"]):
            p = f"model.{stack}.layers.{l}."
            yield p + "attn.gqkv_proj.weight", (4 * a, h), h ** -0.5
            yield p + "attn.o_proj.weight", (h, a), a ** -0.5
            yield p + "mlp.gate_up_proj.weight", (2 * i, h), h ** -0.5
            yield p + "mlp.down_proj.weight", (h, i), i ** -0.5
    yield "lm_head.weight", (c["vocab_size"], h), h ** -0.5


def write(path, c, seed):
    """model.safetensors, streamed tensor by tensor (the 1B shape is 2.4 GB: never all in memory)."""
    rng = np.random.default_rng(seed)
    specs = sorted([*tensors(c), ("model.z_L_init", (c["hidden_size"],), 0.0)], key=lambda t: t[0])
    header, at = {"__metadata__": {"format": "pt"}}, 0
    for name, shape, _ in specs:
        n = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for name, shape, scale in specs:  # sorted by name: the same seed gives the same file
            x = rng.uniform(-scale, scale, size=shape).astype(np.float32) if scale else np.zeros(shape, np.float32)
            f.write(bf16_bits(x).tobytes())
    return at


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="the folder to write (created)")
    p.add_argument("--config", default=os.path.join(HERE, "config.json"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--prompt-len", type=int, default=512)
    p.add_argument("--steps", type=int, default=32, help="greedy decode steps reference.py and the runner take")
    a = p.parse_args()
    with open(a.config) as f:
        c = json.load(f)
    if a.prompt_len + a.steps > c["max_position_embeddings"]:
        raise SystemExit(f"make.py: --prompt-len {a.prompt_len} + --steps {a.steps} exceeds {a.config}'s "
                         f"max_position_embeddings {c['max_position_embeddings']}")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    n = write(os.path.join(a.out, "model.safetensors"), c, a.seed)
    # Ids drawn past the special tokens (ids below 16 are bos/eos/pad and condition tags in HRM-Text's vocabulary).
    ids = [c["bos_token_id"]] + np.random.default_rng(a.seed + 1).integers(16, c["vocab_size"], a.prompt_len - 1).tolist()
    prompt = {"text": f"{a.prompt_len} seeded random ids (make.py --seed {a.seed})", "condition": None, "ids": ids}
    with open(os.path.join(a.out, "prompts.json"), "w") as f:
        json.dump({"steps": a.steps, "prompts": [prompt]}, f)
    print(f"[make] wrote {a.out}: model.safetensors {n / 2**30:.2f} GiB (seed {a.seed}), prompts.json "
          f"({a.prompt_len} ids, {a.steps} steps)", flush=True)


if __name__ == "__main__":
    main()
