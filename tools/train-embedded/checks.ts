// prepare.ts's checks, against REFRACT's own prompt code: the token pieces splice (as tools/train-embedded/data.py
// splices them) into the ids our tokenizer gives the whole prompt text, and R-NIAH's default cells as runRniah
// builds them (eval only: train.py reports the model's recall on them, it never trains on them).
import type { HrmTokenizer } from '../../src/hrm/tokenizer.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import {
  BackendCapabilityError, type Backend, type CompletionOptions, type CompletionResult,
} from '../../src/refract/backend.ts';
import { buildRniahPrompt, runRniah } from '../../src/refract/axes/rniah.ts';
import { defaultHaystack } from '../../src/refract/corpus.ts';
import { Xoshiro128ss } from '../../src/hrm/sampling.ts';
import type { NeedleText } from './pools.ts';

interface Spec {
  special: { im_start: number; im_end: number; space: number; eos: number | null };
  conditions: Record<string, number[]>;
  strings: { kv_header: number[]; copy_suffixes: number[][] };
}
type Pools = Record<string, { fields: string[]; first: number; count: number }>;

/** HrmBackend.promptIds (formatPrompt with REFRACT's default condition, then encode) without a model. */
function promptIdsOf(tok: HrmTokenizer): (o: { prompt: string; system?: string }) => number[] {
  const lm = { tokenizer: tok, chatTemplate: null, name: 'prepare' } as unknown as LoadedModel;
  const backend = new HrmBackend(lm);
  return (o) => backend.promptIds({ ...o, applyChatTemplate: true });
}

/** Positions k of `ids` after a sentence: decode(ids[k-1]) ends in '.', decode(ids[k]) starts with ' ' + a letter. */
export function sentenceStarts(ids: number[], decode: string[]): number[] {
  const out: number[] = [];
  for (let k = 1; k < ids.length; k++) if (decode[ids[k - 1]].endsWith('.') && /^ \S/.test(decode[ids[k]])) out.push(k);
  return out;
}

export interface SpliceReport {
  ok: boolean; summary: string; needle: [number, number]; roundtrip: [number, number]; first_mismatch?: string;
}

/**
 * Needle prompts: the splice [im_start, synth, cot] + hay[:k] + [space] + sentence + hay[k:] + question + [im_end]
 * against promptIds of buildRniahPrompt's text. KV and copy prompts: encode(decode(ids)) === ids.
 */
export function checkSplices(
  tok: HrmTokenizer, stream: number[], ns: NeedleText[], pools: Pools, pieces: number[][], spec: Spec, decode: string[],
): SpliceReport {
  const g = new Xoshiro128ss(99);
  const promptIds = promptIdsOf(tok);
  const { im_start: s0, im_end: s1, space } = spec.special;
  const cond = spec.conditions['synth,cot'];
  const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  let needleOk = 0;
  let first: string | undefined;
  const starts = sentenceStarts(stream, decode);
  const np = pools.needle_train;
  for (let i = 0; i < ns.length; i++) {
    const a = starts[Math.floor(g.nextFloat() * (starts.length - 1))];
    const hay = stream.slice(a, a + 100 + Math.floor(g.nextFloat() * 400));
    const inner = sentenceStarts(hay, decode);
    if (!inner.length) continue;
    const k = inner[Math.floor(g.nextFloat() * inner.length)];
    const text = tok.decode(hay);
    const at = tok.decode(hay.slice(0, k)).length + 1;
    const { system, user } = buildRniahPrompt(text, ns[i].sentence, ns[i].question, at / text.length);
    const want = promptIds({ prompt: user, system });
    const [sentence, question] = [pieces[np.first + 3 * i], pieces[np.first + 3 * i + 1]];
    const got = [s0, ...cond, ...hay.slice(0, k), space, ...sentence, ...hay.slice(k), ...question, s1];
    if (same(want, got)) needleOk++;
    else first ??= `needle ${i}: ${JSON.stringify(tok.decode(want).slice(-160))}`;
  }
  let rtOk = 0;
  let rtAll = 0;
  const roundtrip = (ids: number[]) => {
    rtAll++;
    if (same(tok.encode(tok.decode(ids)), ids)) rtOk++;
    else first ??= `roundtrip: ${JSON.stringify(tok.decode(ids).slice(-160))}`;
  };
  const kv = pools.kv_train;
  for (let i = 0; i < 100; i++) {
    const lines = Array.from({ length: 3 + (i % 20) }, (_, j) => pieces[kv.first + 3 * ((i * 31 + j) % kv.count)]);
    const q = (i * 31) % kv.count;
    const [question, answer] = [pieces[kv.first + 3 * q + 1], pieces[kv.first + 3 * q + 2]];
    roundtrip([s0, ...cond, ...spec.strings.kv_header, ...lines.flat(), ...question, s1, ...answer]);
    const a = starts[(i * 97) % starts.length];
    const span = stream.slice(a, a + 20 + i * 3);
    roundtrip([s0, ...cond, ...span, ...spec.strings.copy_suffixes[i % 3], s1, ...span]);
  }
  const ok = needleOk >= 0.97 * ns.length && rtOk >= 0.97 * rtAll;
  const summary = `needle prompts equal to REFRACT's ids ${needleOk}/${ns.length}, ` +
    `kv/copy round trips ${rtOk}/${rtAll}`;
  return { ok, summary, needle: [needleOk, ns.length], roundtrip: [rtOk, rtAll], first_mismatch: first };
}

/** Records runRniah's prompts (system, user) instead of completing them. */
class Recorder implements Backend {
  readonly name = 'prepare-recorder';
  readonly calls: CompletionOptions[] = [];
  constructor(private readonly tok: HrmTokenizer, private readonly ctx: number) {}
  async runCompletion(o: CompletionOptions): Promise<CompletionResult> {
    this.calls.push(o);
    return { text: '', nTokens: 0, metadata: {} };
  }
  runCompletionTrajectory(): never { throw new BackendCapabilityError('prepare', 'no trajectories'); }
  runKld(): never { throw new BackendCapabilityError('prepare', 'no KLD'); }
  async tokenizeToIds(o: { text: string }): Promise<number[]> { return this.tok.encode(o.text); }
  async modelMetadata() { return { context_length: this.ctx }; }
}

export interface RniahCell { length: number; position: number; ids: number[] }

/** R-NIAH's default cells (default needle, question, positions, haystack, n_predict) at `lengths`, as prompt ids. */
export async function rniahCells(tok: HrmTokenizer, lengths: number[], ctx = 4096): Promise<RniahCell[]> {
  const promptIds = promptIdsOf(tok);
  const haystack = await defaultHaystack();
  const cells: RniahCell[] = [];
  for (const length of lengths) {
    const rec = new Recorder(tok, ctx);
    const r = await runRniah(rec, {
      model: 'embedded', reference: 'f16', candidate: 'f16', haystack, lengths: [length],
    });
    // Two completions a cell (reference, candidate) with the same prompt.
    r.cells.forEach((c, i) => {
      const call = rec.calls[2 * i];
      const ids = promptIds({ prompt: call.prompt, system: call.system ?? undefined });
      cells.push({ length, position: c.position, ids });
    });
  }
  return cells;
}
