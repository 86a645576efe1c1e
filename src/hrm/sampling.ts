// Next-token sampling on the CPU: greedy at temperature 0, else softmax(logits / T) in float64, top-p (nucleus)
// filtering, and a draw from a seeded xoshiro128** generator, so one seed gives one sequence in every runtime.
import { InputError } from '../errors.ts';
import { argmaxRow } from '../math/f64.ts';

/**
 * xoshiro128** (Blackman & Vigna, 2018): 128-bit state, 32-bit outputs, period 2^128 - 1. The state is filled by
 * splitmix32 (a Weyl sequence, step 0x9e3779b9, through murmur3's fmix32) from the seed's low 32 bits; the high
 * bits of a seed >= 2^32 are mixed into the last word. Integer-only arithmetic: identical in every JS engine.
 */
export class Xoshiro128ss {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new InputError('Xoshiro128ss', `seed must be a safe integer, got ${seed}`);
    let x = seed >>> 0;
    const next = () => {
      x = (x + 0x9e3779b9) >>> 0;
      return fmix32(x);
    };
    this.s0 = next();
    this.s1 = next();
    this.s2 = next();
    this.s3 = (next() ^ fmix32(Math.floor(seed / 4294967296) >>> 0)) >>> 0;
  }

  /** Set the raw state (for checking against the reference C code); must not be all zero. */
  static fromState(s: readonly [number, number, number, number]): Xoshiro128ss {
    if (s.every((w) => w >>> 0 === 0)) throw new InputError('Xoshiro128ss', 'state must not be all zero');
    const g = new Xoshiro128ss(0);
    [g.s0, g.s1, g.s2, g.s3] = s.map((w) => w >>> 0);
    return g;
  }

  /** Next 32-bit output, as an unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    this.s0 >>>= 0;
    this.s1 >>>= 0;
    this.s2 >>>= 0;
    this.s3 >>>= 0;
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits: (a >> 5) * 2^26 + (b >> 6), over 2^53 (as MT19937's genrand_res53). */
  nextFloat(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

function fmix32(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function checkLogits(op: string, logits: ArrayLike<number>): void {
  if (logits.length === 0) throw new InputError(op, 'logits are empty');
  for (let i = 0; i < logits.length; i++) {
    if (Number.isNaN(logits[i])) throw new InputError(op, `logits[${i}] is NaN (of ${logits.length})`);
  }
}

/** argmax_i logits[i]; the first index on ties. */
export function argmax(logits: ArrayLike<number>): number {
  checkLogits('argmax', logits);
  return argmaxRow(logits, 0, logits.length);
}

/** p_i = exp(l_i / T - max_j l_j / T) / sum_j exp(l_j / T - max_j l_j / T), in float64. */
export function softmax(logits: ArrayLike<number>, temperature = 1): Float64Array {
  checkLogits('softmax', logits);
  if (!(temperature > 0 && Number.isFinite(temperature))) throw new InputError('softmax',
    `temperature must be > 0 and finite, got ${temperature}`);
  const out = new Float64Array(logits.length);
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) out[i] = logits[i] / temperature;
  for (let i = 0; i < out.length; i++) if (out[i] > max) max = out[i];
  if (max === -Infinity) throw new InputError('softmax', `all ${logits.length} logits are -Infinity`);
  if (max === Infinity) throw new InputError('softmax', `logits[${out.indexOf(Infinity)}] is +Infinity`);
  let sum = 0;
  for (let i = 0; i < out.length; i++) sum += out[i] = Math.exp(out[i] - max);
  for (let i = 0; i < out.length; i++) out[i] /= sum;
  return out;
}

/** A running mass within this of p counts as reaching it (float64 rounding of a sum over a 65536-entry vocabulary). */
export const TOP_P_SLACK = 1e-9;

/**
 * Nucleus filter: sort probs descending (ties: lower index first), keep the smallest prefix whose mass reaches
 * p * sum(probs) (always at least one token), renormalise. Returns a new array: kept entries p_i / kept mass, dropped
 * ones 0.
 */
export function topPFilter(probs: ArrayLike<number>, p: number): Float64Array {
  if (!(p > 0 && p <= 1)) throw new InputError('topPFilter', `p must be in (0, 1], got ${p}`);
  if (probs.length === 0) throw new InputError('topPFilter', 'probs are empty');
  const n = probs.length;
  const out = Float64Array.from(probs as ArrayLike<number>);
  let total = 0;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const v = out[i];
    if (!(v >= 0 && v < Infinity)) throw new InputError('topPFilter',
      `probs[${i}] is ${v}; probabilities must be finite and >= 0`);
    total += v;
    if (v > max) max = v;
  }
  if (!(total > 0)) throw new InputError('topPFilter', `probs sum to ${total}`);
  if (p === 1) return renormalise(out, 0, n);
  const goal = p * total - TOP_P_SLACK;
  // Sorting 65536 values costs ~6 ms; instead bucket the entries by octave below the largest, (max/2^(b+1), max/2^b].
  // Buckets above the one where the running mass reaches the goal are kept whole: only that one is sorted.
  const bucket = new Uint8Array(n);
  const mass = new Float64Array(OCTAVES);
  const count = new Int32Array(OCTAVES);
  const top = Float64Array.from({ length: OCTAVES + 1 }, (_, b) => max * 2 ** -b); // octave b is (top[b+1], top[b]]
  for (let i = 0; i < n; i++) {
    const v = out[i];
    if (v === 0) continue;
    let b = Math.min(OCTAVES - 1, Math.floor(Math.log2(max / v)));
    // Powers of two scale exactly: this makes the octaves exact, whatever log2 rounds to.
    while (b > 0 && v > top[b]) b--;
    while (b < OCTAVES - 1 && v <= top[b + 1]) b++;
    bucket[i] = b;
    mass[b] += v;
    count[b]++;
  }
  let cum = 0;
  let k = 0; // entries kept
  let b = 0;
  for (; b < OCTAVES; b++) {
    if (count[b] > 0 && cum + mass[b] >= goal) break;
    cum += mass[b];
    k += count[b];
  }
  if (b === OCTAVES) return renormalise(out, 0, n); // rounding never reached the goal: keep all mass
  const inB = new Float64Array(count[b]);
  for (let i = 0, j = 0; i < n; i++) if (out[i] > 0 && bucket[i] === b) inB[j++] = out[i];
  inB.sort();
  let j = inB.length - 1;
  for (; j > 0; j--, k++) {
    cum += inB[j];
    if (cum >= goal) break;
  }
  k++;
  const cut = inB[j]; // the smallest kept value
  let above = 0;
  for (let i = 0; i < n; i++) if (out[i] > cut) above++;
  return renormalise(out, cut, k - above);
}

const OCTAVES = 64;

/** Keep entries above `cut` and the first `ties` equal to it (index order); zero the rest; renormalise. */
function renormalise(out: Float64Array, cut: number, ties: number): Float64Array {
  let kept = 0;
  for (let i = 0; i < out.length; i++) {
    const v = out[i];
    if (v > cut || (v === cut && ties-- > 0)) kept += v;
    else out[i] = 0;
  }
  for (let i = 0; i < out.length; i++) out[i] /= kept;
  return out;
}

export interface SamplerOptions {
  /** 0 = greedy (default); > 0 divides the logits. */
  temperature?: number;
  /** Nucleus mass in (0, 1]; 1 (default) keeps every token. */
  topP?: number;
  /** Seed of the generator (a safe integer); default 0. */
  seed?: number;
}

export class Sampler {
  readonly temperature: number;
  readonly topP: number;
  readonly seed: number;
  private readonly rng: Xoshiro128ss;

  constructor({ temperature = 0, topP = 1, seed = 0 }: SamplerOptions = {}) {
    if (typeof temperature !== 'number' || !(temperature >= 0 && Number.isFinite(temperature))) {
      throw new InputError('Sampler', `--temperature must be a finite number >= 0, got ${temperature}`);
    }
    if (typeof topP !== 'number' || !(topP > 0 && topP <= 1)) throw new InputError('Sampler',
      `--top-p must be in (0, 1], got ${topP}`);
    if (typeof seed !== 'number' || !Number.isSafeInteger(seed)) throw new InputError('Sampler',
      `--seed must be a finite integer, got ${seed}`);
    this.temperature = temperature;
    this.topP = topP;
    this.seed = seed;
    this.rng = new Xoshiro128ss(seed);
  }

  /** Temperature 0: the pick is the first maximum, which the GPU's argmax computes the same way. */
  get greedy(): boolean { return this.temperature === 0; }

  /** Next token id: argmax at temperature 0, else a draw from topPFilter(softmax(logits / T), topP). */
  sample(logits: ArrayLike<number>): number {
    if (this.temperature === 0) return argmax(logits);
    let probs = softmax(logits, this.temperature);
    if (this.topP < 1) probs = topPFilter(probs, this.topP);
    return drawIndex(probs, this.rng.nextFloat());
  }
}

/** The first i with sum_{j<=i} probs[j] > u * sum(probs), walking in index order; u in [0, 1). */
export function drawIndex(probs: ArrayLike<number>, u: number): number {
  let total = 0;
  for (let i = 0; i < probs.length; i++) total += probs[i];
  const target = u * total;
  let acc = 0;
  let last = -1;
  for (let i = 0; i < probs.length; i++) {
    if (probs[i] <= 0) continue;
    acc += probs[i];
    last = i;
    if (acc > target) return i;
  }
  return last; // rounding left acc <= target: the last token with mass
}
