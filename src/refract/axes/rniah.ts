// Axis C: R-NIAH (REFRACT axes/rniah.py). A needle sentence is hidden in haystack text at relative positions of
// contexts of doubling lengths; hit = the answer contains the keyword (case-insensitive). Per (length, position)
// cell: degradation = max(0, base_acc - cand_acc); score = 100 * (1 - mean degradation) over the cells run.
// Cells longer than the context ceiling (the caller's and the model's `context_length`) are skipped and listed.
// Unlike the original, which scores 100 when the reference never retrieves the needle (no cell can degrade) and 0
// when no cell ran, both are n/a here: score null, left out of the composite, with a note saying why.
import { contextLengthOf, DEFAULTS, type Backend } from '../backend.ts';
import { InputError } from '../../errors.ts';

export const DEFAULT_NEEDLE = 'Note: APRICOT-7-BLUE is the rare paint color featured in this article.';
export const DEFAULT_QUESTION = 'Q: What is the rare paint color featured in this article?\nA:';
export const DEFAULT_POSITIONS = [0.1, 0.5, 0.9] as const;
export const DEFAULT_UP_TO = 16384;
const CHARS_PER_TOKEN_HEAD = 32768;
const BOUNDARY_WINDOW = 200;

/** Lengths doubling from 4096 up to `upTo` (just [upTo] if it is below 4096). */
export function rniahLengths(upTo: number): number[] {
  const out: number[] = [];
  for (let n = 4096; n <= upTo; n *= 2) out.push(n);
  return out.length ? out : [upTo];
}

/** The longest all-caps run (`[A-Z][A-Z0-9-]{2,}`) of the needle, else its last word without a final period. */
export function extractNeedleKeyword(needle: string): string {
  const c = needle.match(/[A-Z][A-Z0-9-]{2,}/g);
  if (c) return c.reduce((best, s) => (s.length > best.length ? s : best));
  const parts = needle.split(/\s+/).filter(Boolean);
  return parts.length ? parts[parts.length - 1].replace(/\.+$/, '') : needle;
}

/** Snap to just after the nearest ". " or ".\n" within 200 characters (scanning outward), else keep the target. */
export function nearestSentenceBoundary(text: string, target: number): number {
  if (target <= 0) return 0;
  if (target >= text.length) return text.length;
  const lo = Math.max(0, target - BOUNDARY_WINDOW);
  const hi = Math.min(text.length, target + BOUNDARY_WINDOW);
  for (let delta = 0; delta < BOUNDARY_WINDOW; delta++) {
    for (const c of [target - delta, target + delta]) {
      if (c < lo || c + 1 >= hi) continue;
      if (text[c] === '.' && (text[c + 1] === ' ' || text[c + 1] === '\n')) return c + 2;
    }
  }
  return target;
}

/** (system, user) messages of one cell: the haystack with the needle inserted becomes the system message. */
export function buildRniahPrompt(haystackChunk: string, needle: string, question: string,
  position: number): { system: string; user: string } {
  const at = nearestSentenceBoundary(haystackChunk, Math.trunc(haystackChunk.length * position));
  return { system: `${haystackChunk.slice(0, at)} ${needle} ${haystackChunk.slice(at)}`, user: question };
}

export interface RniahCell {
  length: number;
  position: number;
  n_trials: number;
  base_acc: number;
  cand_acc: number;
  degradation: number;
  base_hits: number;
  cand_hits: number;
}

export interface RniahAxisResult {
  /** null (n/a): no cell ran, or the reference retrieved the needle in none, so nothing could degrade. */
  score: number | null;
  n_cells: number;
  cells: RniahCell[];
  /** [length, position] pairs not run. */
  skipped_cells: [number, number][];
  needle: string;
  password_keyword: string;
  notes: string[];
}

export interface RniahOptions {
  model: string;
  reference: string;
  candidate: string;
  haystack: string;
  /** Largest length tried (lengths double from 4096); default 16384. */
  upTo?: number;
  /** Explicit lengths (overrides upTo). */
  lengths?: readonly number[];
  positions?: readonly number[];
  /** Context ceiling; default max(lengths). The model's context_length (modelMetadata) also caps it. */
  ctxMax?: number;
  nTrials?: number;
  needle?: string;
  question?: string;
  needleKeyword?: string;
  nPredict?: number; // default 256
  seed?: number;
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

/**
 * A cell's haystack cut until every position's prompt takes at most `budget` tokens. Cells are sized from the
 * corpus' average characters a token, without the chat template, so a cell as long as a model's whole context can
 * come out longer than it (4151 tokens at 4096 on the embedded model). The original's MLX backend runs such a prompt
 * past max_position_embeddings (mlx-lm sizes its cache as it goes); a model whose context is a hard limit cannot.
 */
async function fitToContext(backend: Backend, model: string, chunk: string, needle: string, question: string,
  positions: readonly number[], budget: number): Promise<{ chunk: string; before: number; after: number }> {
  const longest = async (c: string) => {
    let n = 0;
    for (const p of positions) {
      const { system, user } = buildRniahPrompt(c, needle, question, p);
      n = Math.max(n, await backend.promptTokens!({ model, prompt: user, system, applyChatTemplate: true }));
    }
    return n;
  };
  const before = await longest(chunk);
  let after = before;
  // Characters a token are near constant along the text: a cut in proportion lands within a few tokens.
  for (let i = 0; i < 8 && after > budget && chunk.length > 0; i++) {
    chunk = chunk.slice(0, Math.max(0, Math.floor(chunk.length * (budget - 2) / after) - 8));
    after = await longest(chunk);
  }
  return { chunk, before, after };
}

/** Run R-NIAH. The reference and candidate generations of a cell share the seed (seed + trial). */
export async function runRniah(backend: Backend, o: RniahOptions): Promise<RniahAxisResult> {
  const lengths = o.lengths ?? rniahLengths(o.upTo ?? DEFAULT_UP_TO);
  const positions = o.positions ?? DEFAULT_POSITIONS;
  const nTrials = o.nTrials ?? 1;
  const needle = o.needle ?? DEFAULT_NEEDLE;
  const question = o.question ?? DEFAULT_QUESTION;
  const keyword = o.needleKeyword ?? extractNeedleKeyword(needle);
  const nPredict = o.nPredict ?? 256;
  const seed = o.seed ?? DEFAULTS.seed;
  if (lengths.length === 0 || lengths.some((l) => !Number.isInteger(l) || l < 1)) throw new InputError('rniah',
    `lengths must be positive integers, got [${lengths.join(', ')}]`);
  if (positions.some((p) => !(p >= 0 && p <= 1))) throw new InputError('rniah',
    `positions must lie in [0, 1], got [${positions.join(', ')}]`);
  if (keyword.trim() === '') throw new InputError('rniah',
    'the needle keyword is empty (every answer would count as a hit); give needleKeyword or a needle with a word ' +
    'in it');
  if (!(nTrials >= 1)) throw new InputError('rniah', `nTrials must be >= 1, got ${nTrials}`);

  const modelCtx = await contextLengthOf(backend, o.model);
  const ctxMax = Math.min(o.ctxMax ?? Math.max(...lengths), modelCtx);
  const head = o.haystack.slice(0, CHARS_PER_TOKEN_HEAD);
  const headTokens = head ? (await backend.tokenizeToIds({ model: o.model, text: head })).length : 0;
  const cpt = headTokens ? head.length / headTokens : 4.0;
  const overhead = Math.max(1, Math.trunc(needle.length / Math.max(cpt, 1))) + Math.max(1,
    Math.trunc(question.length / Math.max(cpt, 1))) + nPredict + 16;

  const cells: RniahCell[] = [];
  const skipped: [number, number][] = [];
  const notes: string[] = [];
  const tooLong = lengths.filter((l) => l > ctxMax);
  if (tooLong.length) {
    const why = modelCtx <= (o.ctxMax ?? Infinity) &&
      modelCtx < Infinity ? `the model's context_length ${modelCtx}` : `ctx_max ${ctxMax}`;
    notes.push(`Skipped length(s) ${tooLong.join(', ')}: longer than ${why}.`);
  }
  const runnable = lengths.filter((l) => l <= ctxMax && l - overhead > 0);
  const total = runnable.length * positions.length * nTrials * 2;
  let done = 0;
  const hit = (text: string) => (text.toLowerCase().includes(keyword.toLowerCase()) ? 1 : 0);

  for (const length of lengths) {
    if (length > ctxMax) {
      for (const pos of positions) skipped.push([length, pos]);
      continue;
    }
    const usableTokens = length - overhead;
    if (usableTokens <= 0) {
      for (const pos of positions) skipped.push([length, pos]);
      notes.push(`Skipped length=${length}: ≤0 tokens available for haystack after needle/question/n_predict ` +
        `overhead (${overhead}).`);
      continue;
    }
    let usableChars = Math.trunc(usableTokens * cpt);
    if (usableChars > o.haystack.length) {
      notes.push(`Haystack corpus only has ${o.haystack.length} chars; length=${length} would need ` +
        `~${usableChars}. Cell may run with a shorter context than nominal.`);
      usableChars = o.haystack.length;
    }
    let chunk = o.haystack.slice(0, usableChars);
    if (Number.isFinite(modelCtx) && backend.promptTokens) {
      const fit = await fitToContext(backend, o.model, chunk, needle, question, positions, modelCtx - nPredict);
      if (fit.after > modelCtx - nPredict) {
        for (const pos of positions) skipped.push([length, pos]);
        notes.push(`Skipped length=${length}: even without a haystack its prompts take ${fit.after} tokens, ` +
          `more than the model's context_length ${modelCtx} leaves for ${nPredict} predicted tokens.`);
        continue;
      }
      if (fit.chunk.length < chunk.length) {
        notes.push(`Length ${length}: its prompts came to ${fit.before} tokens with the chat template, more than ` +
          `the model's context_length ${modelCtx} leaves for ${nPredict} predicted tokens; the haystack was cut ` +
          `to ${fit.chunk.length} characters (${fit.after} tokens) to fit.`);
        chunk = fit.chunk;
      }
    }
    for (const position of positions) {
      const { system, user } = buildRniahPrompt(chunk, needle, question, position);
      let baseHits = 0;
      let candHits = 0;
      for (let trial = 0; trial < nTrials; trial++) {
        const common = { model: o.model, prompt: user, system, applyChatTemplate: true, nPredict,
          ctx: Math.min(length + nPredict + 32, modelCtx), seed: seed + trial, signal: o.signal };
        baseHits += hit((await backend.runCompletion({ ...common, kvConfig: o.reference })).text);
        o.onProgress?.(++done, total);
        candHits += hit((await backend.runCompletion({ ...common, kvConfig: o.candidate })).text);
        o.onProgress?.(++done, total);
      }
      const baseAcc = baseHits / nTrials;
      const candAcc = candHits / nTrials;
      cells.push({ length, position, n_trials: nTrials, base_acc: baseAcc, cand_acc: candAcc,
        degradation: Math.max(0, baseAcc - candAcc), base_hits: baseHits, cand_hits: candHits });
    }
  }
  let score: number | null = null;
  if (cells.length === 0) {
    notes.push('No R-NIAH cells were run — every (length, position) pair was skipped (typically because ' +
      'length > ctx_max for every cell). Consider lowering --rniah-lengths. R-NIAH is n/a and left out of the ' +
      'composite.');
  } else if (cells.every((c) => c.base_hits === 0)) {
    notes.push(`The reference never retrieved the needle (0 hits in ${cells.length} cells), so there was nothing ` +
      'for the candidate to lose: R-NIAH is n/a and left out of the composite. Try shorter --rniah-lengths or ' +
      'another needle.');
  } else {
    score = 100 * (1 - cells.reduce((s, c) => s + c.degradation, 0) / cells.length);
  }
  return { score, n_cells: cells.length, cells, skipped_cells: skipped, needle, password_keyword: keyword, notes };
}
