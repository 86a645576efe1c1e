"""Third-party references for a checkpoint train.py wrote: transformers' HrmTextForCausalLM (f32, TF32 off;
and bf16) runs the reference prompts and writes reference.safetensors / reference.json in the layout of
tests/fixtures/hrm-text-brown-6m/reference.* (MLX's) (whose prompts and ids it reuses: same tokenizer, so no tokenizer is needed):

  prompt{i}.ids                                   I32 [P]
  prompt{i}.{f32,bf16}.gen_ids                    I32 [N]      greedy, the prompt as one prefix block, no cache
  prompt{i}.{f32,bf16}.gen_logits                 F32 [N, V]   the logits each generated token was picked from
  prompt{i}.{f32,bf16}.prefix_logits|causal_logits F32 [P, V]  the prompt alone, prefix-LM block / causal

  python3 tools/train-embedded/reference.py --model DIR [--out DIR] [--prompts tests/fixtures/hrm-text-brown-6m/reference.json]
                                            [--steps N]

N: --steps, else the prompts file's "steps" (tools/parity-1b/make.py writes 32), else 24.

It also runs model.py's HrmText (train.py's math) on the same weights and prints how far its f32 logits are from
transformers': the training math and transformers' agree, or this says by how much.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import HrmText, config_from_json, load_safetensors, prefix_lm_mask, save_safetensors  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = 24


def transformers_state(ours, target):
    """Our fused tensors (gqkv_proj rows gate|q|k|v, gate_up_proj rows gate|up) under transformers' names, when its
    modules are split; names it already has are kept. Refuses a missing or unexpected name (never a silent init)."""
    out = {}
    for k, v in ours.items():
        if k in target:
            out[k] = v
        elif k.endswith(".attn.gqkv_proj.weight"):
            p = k[:-len("attn.gqkv_proj.weight")] + "self_attn."
            for name, part in zip(("gate_proj", "q_proj", "k_proj", "v_proj"), v.chunk(4, 0)):
                out[f"{p}{name}.weight"] = part
        elif k.endswith(".attn.o_proj.weight"):
            out[k.replace(".attn.", ".self_attn.")] = v
        elif k.endswith(".mlp.gate_up_proj.weight"):
            p = k[:-len("gate_up_proj.weight")]
            out[f"{p}gate_proj.weight"], out[f"{p}up_proj.weight"] = v.chunk(2, 0)
        else:
            out[k] = v
    missing, extra = sorted(set(target) - set(out)), sorted(set(out) - set(target))
    if missing or extra:
        raise SystemExit(f"reference.py: checkpoint and HrmTextForCausalLM disagree: missing {missing[:6]}, "
                         f"unexpected {extra[:6]}")
    return out


def load_transformers(model_dir, ours, device):
    try:
        from transformers import HrmTextConfig, HrmTextForCausalLM
    except ImportError as e:
        raise SystemExit(f"reference.py: this transformers has no HrmTextForCausalLM ({e}); it needs transformers 5 "
                         "with the hrm_text model")
    config = HrmTextConfig.from_pretrained(model_dir)
    model = HrmTextForCausalLM(config).float()
    model.load_state_dict(transformers_state(ours, model.state_dict().keys()), strict=True)
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation("eager")  # the plain softmax(QK^T)V: no fused kernel in the reference
    return model.to(device).eval()


@torch.no_grad()
def run(model, ids, steps):
    """prefix and causal logits of the prompt, then `steps` greedy tokens (each step recomputes from scratch: the
    prompt one prefix block, the generated tokens causal)."""
    dev = next(model.parameters()).device
    x = torch.tensor([ids], device=dev)
    out = {"prefix_logits": model(input_ids=x, token_type_ids=torch.ones_like(x)).logits[0].float(),
           "causal_logits": model(input_ids=x).logits[0].float()}
    gen, logits = [], []
    for _ in range(steps):
        x = torch.tensor([ids + gen], device=dev)
        tt = torch.tensor([[1] * len(ids) + [0] * len(gen)], device=dev)
        row = model(input_ids=x, token_type_ids=tt, use_cache=False).logits[0, -1].float()
        logits.append(row)
        gen.append(int(row.argmax()))
    out.update(gen_ids=torch.tensor(gen, dtype=torch.int32), gen_logits=torch.stack(logits))
    return out


@torch.no_grad()
def ours_prefix_logits(model_dir, state, ids, device):
    with open(os.path.join(model_dir, "config.json")) as f:
        m = HrmText(config_from_json(json.load(f)))
    m.load_state_dict(state, strict=True)
    m.to(device).eval()
    x = torch.tensor([ids], device=device)
    mask = prefix_lm_mask(torch.zeros_like(x), torch.ones_like(x, dtype=torch.bool))
    return m.logits(m.hidden(x, torch.arange(len(ids), device=device)[None], mask))[0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a folder train.py wrote")
    p.add_argument("--out", help="where reference.* go (default: --model)")
    p.add_argument("--prompts", default=os.path.join(REPO, "tests", "fixtures", "hrm-text-brown-6m", "reference.json"))
    p.add_argument("--steps", type=int, help=f"greedy steps (default: the prompts file's 'steps', else {STEPS})")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    a = p.parse_args()
    out_dir = a.out or a.model
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(a.prompts) as f:
        spec = json.load(f)
    prompts, steps = spec["prompts"], a.steps or spec.get("steps", STEPS)
    state = load_safetensors(os.path.join(a.model, "model.safetensors"))
    model = load_transformers(a.model, state, a.device)
    import transformers
    tensors, record = {}, []
    for i, pr in enumerate(prompts):
        tensors[f"prompt{i}.ids"] = torch.tensor(pr["ids"], dtype=torch.int32)
        entry = {"text": pr["text"], "condition": pr["condition"], "ids": pr["ids"]}
        for name, dtype in (("f32", torch.float32), ("bf16", torch.bfloat16)):
            r = run(model.to(dtype), pr["ids"], steps)
            for k, v in r.items():
                tensors[f"prompt{i}.{name}.{k}"] = v
            entry[f"{name}_gen_ids"] = r["gen_ids"].tolist()
        model.float()
        ours = ours_prefix_logits(a.model, state, pr["ids"], a.device)
        diff = float((ours - tensors[f"prompt{i}.f32.prefix_logits"]).abs().max())
        entry["model_py_vs_transformers_f32_prefix_max_abs"] = diff
        print(f"[reference] prompt {i} {pr['text']!r}: f32 {entry['f32_gen_ids'][:8]}... bf16 "
              f"{entry['bf16_gen_ids'][:8]}...; model.py vs transformers f32 prefix logits max |diff| {diff:.3g}",
              flush=True)
        record.append(entry)
    save_safetensors(os.path.join(out_dir, "reference.safetensors"), tensors, cast=None)
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump({"source": f"transformers {transformers.__version__} HrmTextForCausalLM, torch {torch.__version__}, "
                   f"{a.device}, TF32 off, eager attention, no KV cache (quantized caches: not run)",
                   "steps": steps, "prompts": record}, f, indent=1)
    print(f"[reference] wrote {out_dir}/reference.safetensors and reference.json", flush=True)


if __name__ == "__main__":
    main()
