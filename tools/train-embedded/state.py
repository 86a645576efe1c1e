"""A run that stops and goes on in a later call: the whole training state (train.py --state, --resume), or an
earlier call's outputs alone (--init: the weights, without AdamW's moments)."""
import json
import os

import torch

from model import load_safetensors

# What a resumed run takes from the saved one: everything but where it writes, its budget and its logging.
CALL_ONLY = ("out", "minutes", "state", "resume", "init", "until", "device", "eval_every", "log_every")


def save_state(run, folder):
    """Everything a later call needs to go on as if the run had not stopped: the f32 weights, AdamW's moments, the
    step, the step count, the best checkpoint and the record. Data order depends on (seed, step) only."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "state.pt")
    torch.save({"args": vars(run.args), "step": run.start_step, "total": run.total, "tokens": run.tokens,
                "model": run.model.state_dict(), "opt": run.opt.state_dict(), "best": run.best,
                "record": run.record}, path + ".tmp")
    os.replace(path + ".tmp", path)  # a call killed while saving leaves the previous state whole
    return path


def load_state(args):
    path = os.path.join(args.resume, "state.pt")
    if not os.path.exists(path):
        raise SystemExit(f"--resume {args.resume}: no state.pt (written by a run with --state)")
    st = torch.load(path, map_location="cpu", weights_only=False)  # our own file (record, RNG states); load_state_dict moves weights and moments to the model's device
    for k, v in st["args"].items():
        if k not in CALL_ONLY:
            setattr(args, k, v)
    return st


def load_init(args):
    """An earlier call's --out folder (model.safetensors, train-log.json): its run's arguments into `args`, and
    {step, total, weights (f32), score, record}. The weights are the saved checkpoint's, so the run goes on from
    the checkpoint's step (data order depends on (seed, step) only); what the record holds past that step is
    dropped, since those steps are trained again."""
    log_path, model_path = (os.path.join(args.init, f) for f in ("train-log.json", "model.safetensors"))
    for path in (log_path, model_path):
        if not os.path.exists(path):
            raise SystemExit(f"--init {args.init}: no {os.path.basename(path)} (the --out folder of an earlier call)")
    with open(log_path) as f:
        record = json.load(f)
    step = record.get("checkpoint_step")
    total = next((record[k] for k in ("steps_total", "steps_replanned", "steps_planned") if record.get(k)), None)
    total = total or record["args"].get("steps")
    if not isinstance(step, int) or not total or record.get("checkpoint_metric", "").startswith("none"):
        raise SystemExit(f"--init {args.init}: train-log.json names no evaluated checkpoint step and step count "
                         f"(checkpoint_step {step!r}, steps_total {total!r})")
    for k, v in record["args"].items():
        if k not in CALL_ONLY:
            setattr(args, k, v)
    record["loss_curve"] = [p for p in record["loss_curve"] if p["step"] <= step]
    record["evals"] = [e for e in record["evals"] if e["step"] <= step]
    for k in ("rniah_default_greedy", "error"):
        record.pop(k, None)
    return {"step": step, "total": total, "weights": load_safetensors(model_path), "score": record["checkpoint_value"],
            "record": record}
