// What the decode-graph tests share (tests/hrm/decode*.test.ts): a prompt prefilled into a fresh cache, and a
// graph built on it or the test fails with the reason.
import { DecodeGraph } from '../../src/hrm/decode.ts';
import type { HrmCache, KvStorage } from '../../src/hrm/cache.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';

export const PROMPT = [5, 9, 100, 7, 31];

/** Prefill PROMPT into a fresh cache holding `extra` more positions. */
export async function prefilled(lm: LoadedModel, extra: number, kv?: KvStorage): Promise<HrmCache> {
  const cache = lm.model.newCache({ capacity: PROMPT.length + extra, kv, mode: 'after-prefill' });
  (await lm.model.forward(PROMPT, cache, { mask: 'prefix', logits: 'last' }).readF32());
  return cache;
}

/** The decode graph of `cache`'s next step in `mode`; a cache that cannot have one fails the test with why. */
export function build(lm: LoadedModel, cache: HrmCache, mode: 'greedy' | 'logits'): DecodeGraph {
  const g = DecodeGraph.tryBuild(lm.model, cache, mode);
  if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
  return g;
}
