"""f32 logits of a checkpoint train.py wrote, from model.py (train.py's math), in the file format of `hrm logits`,
so that `npx hrm compare` measures train.py's math against hrm-webgpu's on the same weights:

  python3 tools/train-embedded/logits.py --model DIR --ids 6,13,9,464,7 --mode prefix --out torch.safetensors
  npx hrm logits --model DIR --ids 6,13,9,464,7 --mode prefix --out ours.safetensors
  npx hrm compare torch.safetensors ours.safetensors
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import HrmText, config_from_json, load_safetensors, prefix_lm_mask, save_safetensors  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="a folder train.py wrote (config.json, model.safetensors)")
    p.add_argument("--ids", required=True, help="comma-separated token ids")
    p.add_argument("--mode", choices=("prefix", "causal"), required=True, help="the ids as one block, or causal")
    p.add_argument("--out", required=True, help="a .safetensors path: one f32 tensor 'logits' [S, V]")
    a = p.parse_args()
    try:
        ids = [int(x) for x in a.ids.split(",")]
    except ValueError:
        raise SystemExit(f"--ids {a.ids!r}: comma-separated integers expected")
    with open(os.path.join(a.model, "config.json")) as f:
        m = HrmText(config_from_json(json.load(f)))
    m.load_state_dict(load_safetensors(os.path.join(a.model, "model.safetensors")), strict=True)
    m.eval()
    x = torch.tensor([ids])
    mask = prefix_lm_mask(torch.zeros_like(x), torch.full_like(x, a.mode == "prefix", dtype=torch.bool))
    with torch.no_grad():
        logits = m.logits(m.hidden(x, torch.arange(len(ids))[None], mask))[0]
    save_safetensors(a.out, {"logits": logits}, cast=None)
    print(f"wrote {a.out}: logits {list(logits.shape)} ({a.mode}, f32)")


if __name__ == "__main__":
    main()
