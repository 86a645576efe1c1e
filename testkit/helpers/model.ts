// Load test models from the repository (fixtures and the embedded model), make small ones of random weights, and run
// teacher-forced passes.
import { readFileSync } from 'node:fs';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel, type LoadedModel } from '../../src/hrm/load.ts';
import type { ActDtype, KvStorage, QuantMode } from '../../src/hrm/cache.ts';
import { compareLogits } from '../../src/hrm/compare.ts';
import { parseConfig, type HrmConfig, type QuantSpec } from '../../src/hrm/config.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { HrmTokenizer } from '../../src/hrm/tokenizer.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { randomWeights } from '../hrm/random-weights.ts';
import { BROWN, FIXTURES } from './fixtures.ts';

export function fixtureDir(name: 'hrm-tiny-a' | 'hrm-tiny-b' | 'brown'): string {
  return name === 'brown' ? BROWN : `${FIXTURES}${name}/`;
}

const loaded = new Map<string, Promise<LoadedModel>>();

/** A model loaded once per worker and dtype. */
export function model(gpu: Gpu, name: 'hrm-tiny-a' | 'hrm-tiny-b' | 'brown', dtype: ActDtype): Promise<LoadedModel> {
  const key = `${name}:${dtype}`;
  let m = loaded.get(key);
  if (!m) loaded.set(key, (m = loadModel(dirFiles(fixtureDir(name)), { gpu, dtype })));
  return m;
}

/**
 * A model of random weights made on the GPU (random-weights.ts; bf16, or quantized with `quant`): the fixture model's
 * config (tests/fixtures/hrm-text-brown-6m) with `shape` over it, and its tokenizer (2048 ids), so that generate()
 * runs on it. The caller disposes `model`.
 */
export async function randomModel(gpu: Gpu, shape: Partial<HrmConfig>,
  o: { dtype: ActDtype; seed: number; quant?: QuantSpec }): Promise<LoadedModel> {
  const read = (f: string) => readFileSync(BROWN + f, 'utf8');
  const raw = JSON.parse(read('config.json')) as Record<string, unknown>;
  const config: HrmConfig = { ...parseConfig(raw), ...shape };
  const tokenizer = new HrmTokenizer(read('tokenizer.json'),
    { config: read('tokenizer_config.json'), modelConfig: raw });
  const weights = await randomWeights(gpu, config, o.seed, o.quant);
  return { config, tokenizer, model: new HrmModel(gpu, config, weights, o.dtype), chatTemplate: null,
    checkpoint: 'random weights', name: 'random' };
}

/** Logits of one forward over `ids` from an empty cache. */
export async function logitsOf(lm: LoadedModel, ids: number[], mask: 'prefix' | 'causal', kv?: KvStorage,
  mode: QuantMode = 'before-pass'): Promise<Float32Array> {
  const cache = lm.model.newCache({ capacity: ids.length, kv, mode });
  const t = lm.model.forward(ids, cache, { mask });
  const out = await t.readF32();
  t.dispose();
  cache.dispose();
  return out;
}

/**
 * Teacher-forced generation: prefill `prompt` as one prefix block, then feed `gen[0..n-2]` one token at a time.
 * Returns the logits each generated token was picked from ([n, V]) and our own greedy picks.
 */
export async function teacherForced(lm: LoadedModel, prompt: number[], gen: number[],
  kv?: KvStorage): Promise<{ logits: Float32Array; picks: number[] }> {
  const V = lm.config.vocab_size;
  const cache = lm.model.newCache({ capacity: prompt.length + gen.length, kv, mode: 'after-prefill' });
  const logits = new Float32Array(gen.length * V);
  const picks: number[] = [];
  for (let i = 0; i < gen.length; i++) {
    const t = i === 0 ? lm.model.forward(prompt, cache,
      { mask: 'prefix', logits: 'last' }) : lm.model.forward([gen[i - 1]], cache, { mask: 'causal' });
    const row = await t.readF32();
    t.dispose();
    logits.set(row, i * V);
    let best = 0;
    for (let v = 1; v < V; v++) if (row[v] > row[best]) best = v;
    picks.push(best);
  }
  cache.dispose();
  return { logits, picks };
}

/** Mean per-position KL(ref || ours). */
export function meanKl(ref: Float32Array, ours: Float32Array, V: number): number {
  return compareLogits(ref, ours, [ref.length / V, V]).meanKl;
}

/** Positions where the reference's top-2 margin exceeds `margin` (safe to demand the same argmax). */
export function clearMargins(ref: Float32Array, V: number, margin: number): boolean[] {
  const out: boolean[] = [];
  for (let s = 0; s < ref.length / V; s++) {
    let a = -Infinity, b = -Infinity;
    for (let v = 0; v < V; v++) {
      const x = ref[s * V + v];
      if (x > a) { b = a; a = x; } else if (x > b) b = x;
    }
    out.push(a - b > margin);
  }
  return out;
}
