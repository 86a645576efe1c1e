"""The peers' figures of one call as Markdown, for bench/results/README.md's table (issue 44):

  python3 bench/peers/table.py OUT/peers.json       (or a bench result's JSON: its `peers` entry)

llama-bench's pp512 / tg128 tok/s (mean +- sd over its repetitions) per weights and cache type; transformers.js's
prefill and decode tok/s per dtype (its timed second run: 512 / prompt_ms, decode_tokens / decode_ms); and the token
checks (agree.py's figures). Ours and PyTorch's come from the same call's bench JSON (its model and `anchors`)."""
import json
import os
import sys

d = json.load(open(sys.argv[1]))
d = d.get("peers", d) or {}
L = []
lc = d.get("llama_cpp") or {}
if lc:
    v = (lc.get("version") or ["llama.cpp"])[0]
    L += [f"llama.cpp ({v}; {lc.get('bench_flags', '')})", "",
          "| weights | K/V cache | prefill (pp) tok/s | decode (tg) tok/s |", "|---|---|---|---|"]
    rows = {}
    for r in lc.get("bench") or []:
        if "error" in r:
            L.append(f"| error | {r['error']} | | |")
            continue
        key = (os.path.basename(r["model_filename"]).rsplit("-", 1)[-1].replace(".gguf", ""), r["type_k"])
        test = "pp" if r["n_gen"] == 0 else "tg"
        rows.setdefault(key, {})[test] = f"{r['avg_ts']:.1f} +- {r['stddev_ts']:.1f}"
    for (w, kv), t in rows.items():
        L.append(f"| {w} | {kv} | {t.get('pp', '-')} | {t.get('tg', '-')} |")
    L.append("")
tj = d.get("transformers_js") or {}
if tj:
    L += [f"transformers.js ({', '.join(tj.get('versions') or [])}; WebGPU in Chrome)", "",
          "| dtype | prefill tok/s | decode tok/s | load s |", "|---|---|---|---|"]
    for t, r in (tj.get("runs") or {}).items():
        if "error" in r:
            L.append(f"| {t} | {r['error']} | | |")
            continue
        L.append(f"| {t} | {1000 * r['prompt_tokens'] / r['prompt_ms']:.1f} | "
                 f"{1000 * r['decode_tokens'] / r['decode_ms']:.1f} | {r.get('load_ms', 0) / 1000:.1f} |")
    L.append("")
checks = d.get("token_checks") or {}
if checks:
    L += ["| ours | peer | common prefix | equal | teacher-forced | worst gap / rms |", "|---|---|---|---|---|---|"]
    for name, c in checks.items():
        for r in c.get("peers", []):
            tf = f"{r['forced_agree']} / {r['forced_steps']}" if "forced_agree" in r else "-"
            L.append(f"| {name} | {os.path.basename(r['peer'])} | {r['common']} / {r['n']} | {r['equal']} / {r['n']} | "
                     f"{tf} | {r.get('worst_gap_over_rms', '-')} |")
print("\n".join(L))
