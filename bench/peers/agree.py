"""How many of a peer's greedy ids agree with ours (issue 44's token check), from the JSON lines the runs print:

  python3 bench/peers/agree.py OURS.json PEER.json [PEER.json ...] [--json OUT]

OURS.json is bench/peers/ours-greedy.ts's line (run with --against the same PEER files for the teacher-forced
figures); each PEER.json is bench/peers/llama-cpp/greedy.cpp's line or the transformers.js page's. Per peer:
  - common: the length of the common prefix of the two free-running greedy sequences (after the first differing
    token the contexts differ, so later positions compare different questions);
  - equal: positions i < n where both picked the same id (as asked: "how many of the 128 agree");
  - forced: of the teacher-forced steps (the peer's own ids fed to our model), how many of our argmaxes equal the
    peer's pick in the same context, and for each that does not, our gap logit[ours] - logit[peer's] over our logits'
    rms. A gap of a few hundredths of the rms is a near-tie that the two precisions may break either way; a gap of the
    order of the rms, or many differing steps, means a different model (a wrong conversion, a missing z_L_init, the
    wrong mask): find out why before quoting the peer's speed.
Prints a Markdown table and writes the figures as JSON (--json) for the run's `peers` entry. No dependencies.
"""
import argparse
import json
import os


def last_json(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit(f"agree: {path} holds no JSON line")
    return json.loads(lines[-1])


def compare(ours, peer, peer_path):
    a, b = ours["ids"], peer["ids"]
    n = min(len(a), len(b))
    common = next((i for i in range(n) if a[i] != b[i]), n)
    equal = sum(1 for i in range(n) if a[i] == b[i])
    row = {"peer": peer_path, "engine": peer.get("engine"), "n": n, "common": common, "equal": equal}
    for k in ("model", "dtype", "fa", "ctk", "ctv", "mask"):
        if k in peer:
            row[k] = peer[k]
    same = lambda a, b: os.path.realpath(a) == os.path.realpath(b) or os.path.basename(a) == os.path.basename(b)
    forced = next((f for f in ours.get("teacher_forced", []) if same(f["peer"], peer_path)), None)
    if forced:
        worst = max((d["gap"] / d["rms"] for d in forced["differing"] if d["rms"]), default=0.0)
        row.update(forced_agree=forced["agree"], forced_steps=forced["steps"], worst_gap_over_rms=round(worst, 4),
                   differing=forced["differing"][:8])
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("ours")
    p.add_argument("peers", nargs="+")
    p.add_argument("--json")
    a = p.parse_args()
    ours = last_json(a.ours)
    rows = [compare(ours, last_json(path), path) for path in a.peers]
    print(f"Ours: {ours.get('engine')} {ours.get('dtype')} {ours.get('mask')} mask on {ours.get('adapter')}, "
          f"{ours.get('prompt_tokens')} prompt ids\n")
    print("| peer | common prefix | equal positions | teacher-forced agree | worst gap / rms |")
    print("|---|---|---|---|---|")
    for r in rows:
        name = r["peer"].rsplit("/", 1)[-1]
        forced = f"{r['forced_agree']} / {r['forced_steps']}" if "forced_agree" in r else "-"
        gap = f"{r['worst_gap_over_rms']:.3g}" if "forced_agree" in r else "-"
        print(f"| {name} | {r['common']} / {r['n']} | {r['equal']} / {r['n']} | {forced} | {gap} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"ours": {k: ours.get(k) for k in ("engine", "model", "dtype", "mask", "adapter", "prompt_tokens")},
                       "peers": rows}, f, indent=1)


if __name__ == "__main__":
    main()
