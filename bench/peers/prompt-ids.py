"""The fixed prompt of the token check, as tools/parity-1b/make.py draws it (bos, then len - 1 seeded ids past the
special tokens, numpy's default_rng(seed + 1)), for a model folder that make.py did not write (the embedded model):

  python3 bench/peers/prompt-ids.py --model DIR [--len 512] [--seed 0] --out FILE.json

writes make.py's prompts.json format ({"steps", "prompts": [{"text", "condition", "ids"}]}); for make.py's folders
use their prompts.json as it is (the same ids for the same vocabulary and seed)."""
import argparse
import json
import os

import numpy as np

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--model", required=True)
p.add_argument("--len", type=int, default=512)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--steps", type=int, default=128)
p.add_argument("--out", required=True)
a = p.parse_args()
with open(os.path.join(a.model, "config.json")) as f:
    c = json.load(f)
ids = [c["bos_token_id"]] + np.random.default_rng(a.seed + 1).integers(16, c["vocab_size"], a.len - 1).tolist()
with open(a.out, "w") as f:
    json.dump({"steps": a.steps, "prompts": [{"text": f"{a.len} seeded random ids (seed {a.seed})", "condition": None,
                                              "ids": ids}]}, f)
print(f"[prompt-ids] {a.out}: {len(ids)} ids, vocabulary {c['vocab_size']}")
