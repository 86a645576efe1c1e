// Axis D: PLAD (Perturbation-Locality-Aware Drift), REFRACT axes/plad.py. Per prompt P and perturbation t:
// drift = min(1, Levenshtein(ids(anchor), ids(perturbed)) / len(ids(anchor))) for each KV config,
// excess = max(0, cand_drift - ref_drift), plad_pp = 100 * exp(-alpha * excess); score = mean over records.
// Perturbations use CPython's RNG seeded `seed + prompt_index`, so the perturbed prompts equal the original's.
import { DEFAULTS, RefractError, type Backend } from '../backend.ts';
import { InputError } from '../../errors.ts';
import { PyRandom } from '../pyrandom.ts';
import type { Prompt } from '../prompts.ts';

export const DEFAULT_PERTURBATIONS = ['typo', 'case', 'punct', 'paraphrase'] as const;
export type Perturbation = (typeof DEFAULT_PERTURBATIONS)[number];
export const DEFAULT_ALPHA = 5.0;

/** Closed synonym table (transparent synonyms only), as in the original. */
export const SYNONYMS: Readonly<Record<string, string>> = {
  big: 'large', large: 'big', small: 'tiny', tiny: 'small', fast: 'quick', quick: 'fast', begin: 'start',
  start: 'begin', happy: 'glad', sad: 'unhappy', smart: 'clever', clever: 'smart', show: 'display',
  display: 'show', build: 'construct', create: 'make', make: 'create', find: 'locate', locate: 'find',
};

/** Function words that typo and paraphrase never touch. */
export const STOPWORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'the', 'is', 'are', 'was', 'were', 'be', 'been', 'being', 'in', 'on', 'at', 'to', 'of', 'for',
  'with', 'by', 'as', 'and', 'or', 'but', 'not', 'no', 'do', 'does', 'did', 'i', 'you', 'he', 'she', 'it', 'we',
  'they', 'this', 'that', 'these', 'those', 'have', 'has', 'had',
]);

interface Word {
  start: number;
  end: number;
  word: string;
}

function words(prompt: string): Word[] {
  return [...prompt.matchAll(/[A-Za-z]{2,}/g)].map((m) => ({ start: m.index, end: m.index + m[0].length, word: m[0] }));
}

function eligibleWords(prompt: string): Word[] {
  return words(prompt).filter((w) => !STOPWORDS.has(w.word.toLowerCase()));
}

/** Swap two adjacent letters of a random non-stopword of >= 4 letters; null if none (or the swap is a no-op). */
export function applyTypo(prompt: string, rng: PyRandom): string | null {
  const eligible = eligibleWords(prompt).filter((w) => w.word.length >= 4);
  if (eligible.length === 0) return null;
  const { start, end, word: w } = rng.choice(eligible);
  const i = rng.randrange(0, w.length - 1);
  const swapped = w.slice(0, i) + w[i + 1] + w[i] + w.slice(i + 2);
  if (swapped === w) return null;
  return prompt.slice(0, start) + swapped + prompt.slice(end);
}

/** Lower-case the first letter of every capitalised word of >= 2 letters; null if nothing changes. */
export function applyCase(prompt: string): string | null {
  let changed = false;
  const out = prompt.replace(/[A-Za-z]{2,}/g, (w) => {
    if (!/[A-Z]/.test(w[0])) return w;
    changed = true;
    return w[0].toLowerCase() + w.slice(1);
  });
  return changed ? out : null;
}

/** Drop a trailing `?` or `.` (before trailing whitespace), else add `?`. */
export function applyPunct(prompt: string): string {
  const p = prompt.trimEnd();
  const tail = prompt.slice(p.length);
  if (p.endsWith('?') || p.endsWith('.')) return p.slice(0, -1) + tail;
  return `${p}?${tail}`;
}

/** Replace one random word found in SYNONYMS, keeping a capital first letter; null if none. */
export function applyParaphrase(prompt: string, rng: PyRandom): string | null {
  const eligible = eligibleWords(prompt).filter((w) => w.word.length >= 3 && w.word.toLowerCase() in SYNONYMS);
  if (eligible.length === 0) return null;
  const { start, end, word: w } = rng.choice(eligible);
  let sub = SYNONYMS[w.toLowerCase()];
  if (/[A-Z]/.test(w[0])) sub = sub[0].toUpperCase() + sub.slice(1);
  return prompt.slice(0, start) + sub + prompt.slice(end);
}

/** Apply one perturbation; the RNG is shared across a prompt's perturbations, in order, as in the original. */
export function perturb(kind: Perturbation, prompt: string, rng: PyRandom): string | null {
  switch (kind) {
    case 'typo':
      return applyTypo(prompt, rng);
    case 'case':
      return applyCase(prompt);
    case 'punct':
      return applyPunct(prompt);
    case 'paraphrase':
      return applyParaphrase(prompt, rng);
  }
}

/** Edit distance (insert, delete, substitute; unit costs) between two id sequences. */
export function levenshtein(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let prev = Int32Array.from({ length: b.length + 1 }, (_, j) => j);
  let cur = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    const ai = a[i - 1];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ai === b[j - 1] ? 0 : 1));
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length];
}

/** drift = min(1, lev(anchor, perturbed) / len(anchor)); 0 if both empty, 1 if only the anchor is empty. */
export function normalizedDrift(anchor: ArrayLike<number>, perturbed: ArrayLike<number>): number {
  if (anchor.length === 0 && perturbed.length === 0) return 0;
  if (anchor.length === 0) return 1;
  return Math.min(1, levenshtein(anchor, perturbed) / anchor.length);
}

export interface PladRecord {
  prompt_id: string;
  perturbation: Perturbation;
  perturbed_prompt: string;
  ref_drift: number;
  cand_drift: number;
  excess_drift: number;
  plad_pp: number;
}

export interface PladAxisResult {
  score: number;
  /** Mean plad_pp per perturbation; NaN where it never applied (JSON: null). */
  per_perturbation_score: Record<string, number>;
  per_prompt: PladRecord[];
  n_prompts: number;
  n_perturbations: number;
  notes: string[];
  /** Which ids the drift compares: the generated ids, or the original's re-tokenized completion text. */
  token_source: 'generated' | 'retokenized';
}

export interface PladOptions {
  model: string;
  reference: string;
  candidate: string;
  prompts: readonly Prompt[];
  nPredict?: number;
  ctx?: number;
  seed?: number;
  perturbations?: readonly Perturbation[];
  alpha?: number;
  /**
   * 'retokenized' (default, as the original): runCompletion text through tokenizeToIds; 'generated': decode-time
   * ids.
   */
  tokenSource?: 'generated' | 'retokenized';
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
}

interface Cell {
  promptIndex: number;
  perturbation: Perturbation | null;
  text: string;
}

/** Run PLAD: all reference generations first, then all candidate ones (two cache configs, not 2N switches). */
export async function runPlad(backend: Backend, o: PladOptions): Promise<PladAxisResult> {
  const perts = o.perturbations ?? DEFAULT_PERTURBATIONS;
  const unknown = perts.filter((p) => !(DEFAULT_PERTURBATIONS as readonly string[]).includes(p));
  if (unknown.length) throw new InputError('plad',
    `unknown perturbations ${unknown.join(', ')}; valid: ${DEFAULT_PERTURBATIONS.join(', ')}`);
  if (o.prompts.length === 0) throw new InputError('plad', 'no prompts');
  const seed = o.seed ?? DEFAULTS.seed;
  const alpha = o.alpha ?? DEFAULT_ALPHA;
  const source = o.tokenSource ?? 'retokenized';

  const cells: Cell[] = [];
  let skipped = 0;
  o.prompts.forEach((p, i) => {
    cells.push({ promptIndex: i, perturbation: null, text: p.prompt });
    const rng = new PyRandom(seed + i);
    for (const kind of perts) {
      const text = perturb(kind, p.prompt, rng);
      if (text === null || text === p.prompt) skipped++;
      else cells.push({ promptIndex: i, perturbation: kind, text });
    }
  });

  const total = cells.length * 2;
  let done = 0;
  const generate = async (kv: string): Promise<number[][]> => {
    const out: number[][] = [];
    for (const cell of cells) {
      const common = { model: o.model, prompt: cell.text, kvConfig: kv, nPredict: o.nPredict ?? 64,
        ctx: o.ctx ?? DEFAULTS.ctx, seed, signal: o.signal };
      if (source === 'generated') {
        out.push((await backend.runCompletionTrajectory(common)).tokenIds);
      } else {
        const { text } = await backend.runCompletion(common);
        out.push(text ? await backend.tokenizeToIds({ model: o.model, text }) : []);
      }
      o.onProgress?.(++done, total);
    }
    return out;
  };
  const refIds = await generate(o.reference);
  const candIds = await generate(o.candidate);

  const records: PladRecord[] = [];
  const perPert = new Map<string, number[]>(perts.map((p) => [p, []]));
  const anchorOf = new Map<number, number>();
  cells.forEach((c, j) => c.perturbation === null && anchorOf.set(c.promptIndex, j));
  cells.forEach((c, j) => {
    if (c.perturbation === null) return;
    const a = anchorOf.get(c.promptIndex)!;
    const refDrift = normalizedDrift(refIds[a], refIds[j]);
    const candDrift = normalizedDrift(candIds[a], candIds[j]);
    const excess = Math.max(0, candDrift - refDrift);
    const pp = 100 * Math.exp(-alpha * excess);
    records.push({
      prompt_id: String(o.prompts[c.promptIndex].id), perturbation: c.perturbation, perturbed_prompt: c.text,
      ref_drift: refDrift, cand_drift: candDrift, excess_drift: excess, plad_pp: pp,
    });
    perPert.get(c.perturbation)!.push(pp);
  });
  if (records.length === 0) {
    throw new RefractError('plad', 'PLAD ran zero (prompt, perturbation) cells: every perturbation was skipped');
  }
  const notes: string[] = [];
  if (skipped) {
    notes.push(`${skipped} (prompt, perturbation) pairs were skipped (perturbation could not apply, ` +
      'e.g. no ≥4-char word for typo).');
  }
  const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : Number.NaN);
  return {
    score: mean(records.map((r) => r.plad_pp)),
    per_perturbation_score: Object.fromEntries([...perPert].map(([k, v]) => [k, mean(v)])),
    per_prompt: records,
    n_prompts: o.prompts.length,
    n_perturbations: perts.length,
    notes,
    token_source: source,
  };
}
