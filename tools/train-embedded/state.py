"""The whole training state of a run that stops and goes on in a later call (train.py --state, --resume)."""
import os

import torch

# What a resumed run takes from the saved one: everything but where it writes, its budget and its logging.
CALL_ONLY = ("out", "minutes", "state", "resume", "until", "device", "eval_every", "log_every")


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
    st = torch.load(path, map_location="cpu")  # load_state_dict moves weights and moments to the model's device
    for k, v in st["args"].items():
        if k not in CALL_ONLY:
            setattr(args, k, v)
    return st
