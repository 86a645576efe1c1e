"""Safetensors checkpoints as numpy arrays over a memory map, for the peers' converters (llama-cpp/to-gguf.py,
transformers-js/export-onnx.py): one reader, with the checks both need (dtype, truncation, shape)."""
import json
import os
import struct

import numpy as np


class Safetensors:
    """The tensors of one or several safetensors files, as numpy arrays over a memory map (no copy)."""
    DTYPES = {"BF16": np.uint16, "F16": np.float16, "F32": np.float32}

    def __init__(self, model_dir, tool):
        self.tool = tool
        index = os.path.join(model_dir, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        else:
            files = ["model.safetensors"]
        self.entries = {}
        for name in files:
            path = os.path.join(model_dir, name)
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
            data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
            for key, e in header.items():
                if key == "__metadata__":
                    continue
                if e["dtype"] not in self.DTYPES:
                    raise SystemExit(f"{self.tool}: {name}: tensor {key} has dtype {e['dtype']} (BF16, F16, F32 only)")
                a, b = e["data_offsets"]
                if b > data.size:
                    raise SystemExit(f"{self.tool}: {name} is truncated: tensor {key} ends at {b}, the data at {data.size}")
                self.entries[key] = (e["dtype"], e["shape"], data, a, b)

    def has(self, key):
        return key in self.entries

    def get(self, key, shape=None):
        if key not in self.entries:
            raise SystemExit(f"{self.tool}: the checkpoint has no tensor {key}")
        dtype, sh, data, a, b = self.entries[key]
        if shape is not None and list(sh) != list(shape):
            raise SystemExit(f"{self.tool}: tensor {key} has shape {sh}, expected {list(shape)}")
        return dtype, data[a:b].view(self.DTYPES[dtype]).reshape(sh)


def to_f32(dtype, a):
    """A tensor Safetensors.get returned, as float32 (bf16 widened exactly)."""
    if dtype == "BF16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)
