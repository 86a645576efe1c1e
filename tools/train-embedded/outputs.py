"""train.py's outputs, written however the run ended: the checkpoint, config.json, the tokenizer files,
train-log.json (with the versions it records) and loss.png (only where matplotlib is installed)."""
import json
import os
import platform
import shutil
import time

import numpy as np
import torch

from model import save_safetensors


def write_outputs(run, args, log, t0):
    out, rec = args.out, run.record
    model = getattr(run, "model", None)
    if model is not None:
        if run.best is not None:
            score, step, state = run.best
            rec.update(checkpoint_step=step, checkpoint_metric=args.select, checkpoint_value=score)
        else:  # no eval finished: the weights as they are
            state = {k: v.detach().to("cpu", torch.bfloat16) for k, v in model.state_dict().items()}
            rec.update(checkpoint_step=rec.get("steps"), checkpoint_metric="none (no eval finished)")
        save_safetensors(os.path.join(out, "model.safetensors"), state)
        with open(os.path.join(out, "config.json"), "w") as f:
            json.dump(run.c.to_json(run.data.v["special"]), f, indent=2)
        shutil.copy(os.path.join(args.tokenizer_dir, "tokenizer.json"), os.path.join(out, "tokenizer.json"))
        with open(os.path.join(args.tokenizer_dir, "tokenizer_config.json")) as f:
            tc = json.load(f)
        tc["model_max_length"] = run.c.max_position_embeddings
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
            json.dump(tc, f, indent=2)
    rec["wall_seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out, "train-log.json"), "w") as f:
        json.dump(rec, f, indent=1)
    try:
        plotted = "" if plot(rec, os.path.join(out, "loss.png")) else " (no matplotlib: no loss.png)"
    except Exception as e:  # noqa: BLE001 - a plot is never worth losing the run's exit status over
        plotted = f" (loss.png failed: {e!r})"
    log(f"wrote {out}: " + ", ".join(sorted(os.listdir(out))) + plotted)


def plot(rec, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    curve, evals = rec["loss_curve"], rec["evals"]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for key in ("loss", "text", "needle", "kv", "copy"):
        pts = [(p["step"], p[key]) for p in curve if key in p]
        if pts:
            ax[0].plot(*zip(*pts), label=f"train {key}")
    for key, sub in (("val_text", "text"), ("val_causal", "text")):
        ax[0].plot([e["step"] for e in evals], [e[key][sub] for e in evals], "o-", label=key)
    ax[0].set_xlabel("step")
    ax[0].set_ylabel("cross-entropy (nats/token)")
    ax[0].set_yscale("log")
    ax[0].legend(fontsize=7)
    for key in [k for k in (evals[0] if evals else {}) if k.startswith("needle_")] + ["kv", "copy"]:
        ax[1].plot([e["step"] for e in evals], [e[key]["exact"] for e in evals], "o-", label=key)
    ax[1].set_xlabel("step")
    ax[1].set_ylabel("exact answers (held out)")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def versions(cuda):
    from importlib import metadata
    v = {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__}
    for pkg in ("transformers", "safetensors"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            v[pkg] = None
    if cuda:
        v.update(gpu=torch.cuda.get_device_name(), cuda=torch.version.cuda)
    return v
