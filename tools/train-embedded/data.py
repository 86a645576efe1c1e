"""Training rows for train.py, from what prepare.ts wrote (numpy only: no torch, no tokenizer).

A row is S tokens packed with samples. Each sample is one prompt as our HrmBackend feeds it: a bidirectional
block (token type 1: <|im_start|> + condition ids + text + <|im_end|>) and a causal continuation (type 0), or
plain causal text (REFRACT's KLD passes). Positions restart at 0 in each sample; attention never crosses samples.
Loss is on the causal tokens that a sample marks as targets, each tagged with its family:
  text    Brown continuation after a prefix-LM prompt, and plain causal Brown text
  needle  the code after a haystack of Brown text holding 1-3 needle sentences and a question (R-NIAH's layout)
  kv      a value after a list of `KEY-12: value` lines and a question
  copy    a Brown span repeated after `Repeat the text above.`-style instructions
"""
import json
import os

import numpy as np

FAMILIES = ("text", "needle", "kv", "copy")
TEXT, NEEDLE, KV, COPY = range(4)
# Row kinds and their default shares of a batch (train.py --mix overrides).
DEFAULT_MIX = {"text_plm": 0.40, "text_causal": 0.10, "needle": 0.30, "kv": 0.10, "copy": 0.10}
# Condition tags per family: REFRACT and the CLI default to synth,cot; the current model was trained on noisy.
TEXT_CONDITIONS = {"noisy": 0.5, "synth,cot": 0.3, "synth": 0.1, "direct": 0.05, "cot": 0.05}
TASK_CONDITIONS = {"synth,cot": 0.7, "direct": 0.1, "noisy": 0.1, "synth": 0.05, "cot": 0.05}


def kv_floats(spec, what, known):
    """'a=0.4,b=1' -> {a: 0.4, b: 1.0}; a key outside `known` stops the run naming the flag (`what`)."""
    out = {}
    for part in spec.split(","):
        k, _, v = part.partition("=")
        if k.strip() not in known:
            raise SystemExit(f"{what}: unknown key {k.strip()!r} (known: {', '.join(known)})")
        out[k.strip()] = float(v)
    return out


class Row:
    """Parallel arrays of one row, filled sample by sample."""

    def __init__(self, S, pad):
        self.ids = np.full(S, pad, np.int64)
        self.pos = np.zeros(S, np.int64)
        self.seg = np.zeros(S, np.int64)
        self.prefix = np.zeros(S, bool)
        self.family = np.full(S, -1, np.int8)  # family of the token at this position when it is a target
        self.used = 0
        self.segments = 0

    def room(self):
        return len(self.ids) - self.used

    def add(self, parts):
        """parts: (ids, prefix flag, target family or -1) triples, in order; one sample (one segment)."""
        a = self.used
        if sum(len(p[0]) for p in parts) > self.room():
            raise ValueError(f"sample of {sum(len(p[0]) for p in parts)} tokens does not fit the row's {self.room()}")
        for ids, prefix, family in parts:
            b = a + len(ids)
            self.ids[a:b], self.prefix[a:b], self.family[a:b] = ids, prefix, family
            a = b
        self.pos[self.used:a] = np.arange(a - self.used)
        self.seg[self.used:a] = self.segments
        self.family[self.used] = -1  # a segment's first token has nothing before it
        self.segments += 1
        self.used = a

    def close(self):
        """The rest is padding: one segment of its own (so no query row is fully masked), no targets."""
        if self.used < len(self.ids):
            self.pos[self.used:] = np.arange(len(self.ids) - self.used)
            self.seg[self.used:] = self.segments
        return self


class Data:
    def __init__(self, folder):
        with open(os.path.join(folder, "vocab.json")) as f:
            self.v = json.load(f)
        v = self.v
        brown = np.fromfile(os.path.join(folder, "brown.u16"), "<u2").astype(np.int64)
        self.tasks = np.fromfile(os.path.join(folder, "tasks.u16"), "<u2").astype(np.int64)
        self.offsets = np.fromfile(os.path.join(folder, "tasks.off.u32"), "<u4").astype(np.int64)
        sp = v["special"]
        self.im_start, self.im_end, self.eos, self.pad, self.space = (
            sp["im_start"], sp["im_end"], sp["eos"], sp["pad"], sp["space"])
        self.conditions = {k: np.array(x, np.int64) for k, x in v["conditions"].items()}
        self.kv_header = np.array(v["strings"]["kv_header"], np.int64)
        self.copy_suffixes = [np.array(s, np.int64) for s in v["strings"]["copy_suffixes"]]
        dec = v["decode"]
        self.ends_sentence = np.array([s.endswith(".") for s in dec])
        self.starts_word = np.array([len(s) > 1 and s[0] == " " and not s[1].isspace() for s in dec])
        self.newline = np.array(["\n" in s for s in dec])
        self.forbidden = np.array(v["forbidden"]["code_ids"], np.int64)
        self.streams = {}
        for split in ("train", "val"):
            docs = [d for d in v["documents"] if d["split"] == split]
            sep = np.array(v["sep"], np.int64)
            parts, doc_starts, at = [], [], 0
            for i, d in enumerate(docs):
                if i:
                    parts.append(sep)
                    at += len(sep)
                doc_starts.append(at)
                parts.append(brown[d["offset"]:d["offset"] + d["length"]])
                at += d["length"]
            ids = np.concatenate(parts)
            self.streams[split] = (ids, np.array(doc_starts), self.sentence_starts(ids))

    def sentence_starts(self, ids):
        """Indices k with ids[k-1] ending a sentence ('.') and ids[k] starting a word with a space."""
        k = np.nonzero(self.ends_sentence[ids[:-1]] & self.starts_word[ids[1:]])[0] + 1
        return k

    def piece(self, pool, i, field):
        p = self.v["pools"][pool]
        j = p["first"] + len(p["fields"]) * i + p["fields"].index(field)
        return self.tasks[self.offsets[j]:self.offsets[j + 1]]

    def pool_size(self, pool):
        return self.v["pools"][pool]["count"]

    @staticmethod
    def choose(rng, weights):
        keys = list(weights)
        p = np.array([weights[k] for k in keys], float)
        return keys[rng.choice(len(keys), p=p / p.sum())]

    def window(self, rng, split, n, at="sentence"):
        """n tokens of a stream from a sentence start, a document start or anywhere (`at`)."""
        ids, doc_starts, starts = self.streams[split]
        if at == "any":
            a = int(rng.integers(0, max(1, len(ids) - n)))
        else:
            ok = (starts if at == "sentence" else doc_starts)
            ok = ok[ok + n <= len(ids)]
            a = int(ok[rng.integers(len(ok))]) if len(ok) else 0
        return ids[a:a + n]

    # --- samples: lists of (ids, prefix, family) parts -------------------------------------------------------
    def text_plm(self, rng, split, n, cond):
        c = self.conditions[cond]
        w = self.window(rng, split, n - 2 - len(c))
        p = int(np.exp(rng.uniform(np.log(4), np.log(max(5, len(w) // 2)))))
        head = np.concatenate([[self.im_start], c, w[:p], [self.im_end]])
        return [(head, True, -1), (w[p:], False, TEXT)]

    def text_causal(self, rng, split, n):
        return [(self.window(rng, split, n, at="any"), False, TEXT)]

    def needle(self, rng, split, pool, n, cond, distractors=0):
        """A haystack of about n tokens in all, 1 + distractors needles at sentence starts, a question on one."""
        c = self.conditions[cond]
        count = self.pool_size(pool)
        picks, descs = [], set()
        while len(picks) < 1 + distractors:
            i = int(rng.integers(count))
            d = self.v["pools"][pool]["descriptor"][i]
            if d not in descs:
                picks.append(i)
                descs.add(d)
        asked = picks[int(rng.integers(len(picks)))]
        sentences = [np.concatenate([[self.space], self.piece(pool, i, "sentence")]) for i in picks]
        question, answer = self.piece(pool, asked, "question"), self.piece(pool, asked, "answer")
        h = n - (2 + len(c) + sum(len(s) for s in sentences) + len(question) + len(answer) + 1)
        # R-NIAH's haystack starts at a document; half of these do, the rest at a sentence.
        hay = self.window(rng, split, max(h, 16), at="doc" if rng.random() < 0.5 else "sentence")
        while len(hay) > 1 and self.newline[hay[-1]]:  # "\n\n" + question must not merge with a newline
            hay = hay[:-1]
        inner = self.sentence_starts(hay)
        at = sorted(int(x) for x in (rng.choice(inner, len(picks)) if len(inner) else [0] * len(picks)))
        body, last = [], 0
        for k, s in zip(at, sentences):
            body += [hay[last:k], s]
            last = k
        body.append(hay[last:])
        head = np.concatenate([[self.im_start], c, *body, question, [self.im_end]])
        return [(head, True, -1), (np.concatenate([answer, [self.eos]]), False, NEEDLE)]

    def kv(self, rng, pool, lines, cond):
        c = self.conditions[cond]
        picks = rng.choice(self.pool_size(pool), lines, replace=False)
        asked = int(picks[rng.integers(lines)])
        head = np.concatenate([[self.im_start], c, self.kv_header, *[self.piece(pool, int(i), "line") for i in picks],
                               self.piece(pool, asked, "question"), [self.im_end]])
        return [(head, True, -1), (np.concatenate([self.piece(pool, asked, "answer"), [self.eos]]), False, KV)]

    def copy(self, rng, split, span, cond):
        w = self.window(rng, split, span)
        suffix = self.copy_suffixes[int(rng.integers(len(self.copy_suffixes)))]
        head = np.concatenate([[self.im_start], self.conditions[cond], w, suffix, [self.im_end]])
        return [(head, True, -1), (np.concatenate([w, [self.eos]]), False, COPY)]

    # --- rows and batches ------------------------------------------------------------------------------------
    def row(self, rng, S, kind, split="train", suffix="train", fill=True):
        """One row of `kind`; the rest filled with causal text (fill) or padding. Eval rows: split val, suffix eval."""
        r = Row(S, self.pad)
        tcond = lambda: self.choose(rng, TEXT_CONDITIONS)  # noqa: E731
        kcond = lambda: self.choose(rng, TASK_CONDITIONS)  # noqa: E731
        if kind == "text_plm":
            r.add(self.text_plm(rng, split, S, tcond()))
        elif kind == "text_causal":
            r.add(self.text_causal(rng, split, S))
        elif kind == "needle":
            n = int(rng.integers(S // 2, S + 1))
            distractors = int(rng.choice(3, p=[0.7, 0.2, 0.1]))
            r.add(self.needle(rng, split, "needle_" + suffix, n, kcond(), distractors))
        elif kind in ("kv", "copy"):
            while r.room() >= 64:
                s = (self.kv(rng, "kv_" + suffix, int(rng.integers(4, 41)), kcond()) if kind == "kv"
                     else self.copy(rng, split, int(rng.integers(16, 161)), kcond()))
                if sum(len(p[0]) for p in s) > r.room():
                    break
                r.add(s)
        else:
            raise ValueError(f"unknown row kind {kind!r} (known: {', '.join(DEFAULT_MIX)})")
        if fill and r.room() >= 32:  # the rest of the row: plain causal text
            r.add(self.text_causal(rng, split, r.room()))
        return r.close()

    def batch(self, rng, rows, S, mix):
        return stack([self.row(rng, S, self.choose(rng, mix)) for _ in range(rows)])

    def no_forbidden(self, b):
        """True when no row holds the default needle's code ids (R-NIAH's needle stays out of training)."""
        f = self.forbidden
        for row in b["ids"]:
            hits = np.nonzero(row[:len(row) - len(f) + 1] == f[0])[0]
            if any(np.array_equal(row[h:h + len(f)], f) for h in hits):
                return False
        return True


def stack(rows):
    """Batch arrays: ids, pos, seg, prefix [B, S]; labels [B, S] (the next token where it is a target, else -1)
    and family [B, S] (its family, else -1): position t predicts token t + 1."""
    b = {k: np.stack([getattr(r, k) for r in rows]) for k in ("ids", "pos", "seg", "prefix", "family")}
    fam = np.full_like(b["family"], -1)
    fam[:, :-1] = b["family"][:, 1:]
    labels = np.where(fam >= 0, np.roll(b["ids"], -1, axis=1), -1)
    return {**b, "family": fam, "labels": labels}
