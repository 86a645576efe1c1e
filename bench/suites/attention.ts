// Decode attention's paths over cache lengths (--sweep-gemv): one query against a bf16 cache full to its capacity,
// through 32-key chunks with the merge folded into the split or in a dispatch of its own, and through split keys.
import type { Gpu } from '../../src/gpu/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { fillRandom } from '../../testkit/init/random.ts';
import { sdpa } from '../../src/kernels/attention/sdpa.ts';
import type { Settings } from '../harness/settings.ts';
import { timeCalls } from '../timing/calls.ts';
import { randomX } from './figures.ts';

/**
 * Decode attention (one query, bf16 cache full to its capacity) on one path. 'one': sdpa_one with its merge folded
 * into the split; 'one-separate': with a merge dispatch of its own.
 */
export interface AttnPoint {
  heads: number; dim: number; keys: number; path: 'one' | 'one-separate' | 'decode'; wallUs: number;
}

/**
 * Decode attention with the gate, 32-key chunks (merge folded or separate) vs split keys, over cache lengths: wall
 * time per call.
 */
export async function attentionSweep(gpu: Gpu, heads: number, dim: number, s: Settings): Promise<AttnPoint[]> {
  const out: AttnPoint[] = [];
  for (const keys of [256, 641, 1024, 2048, 4096]) {
    const q = randomX(gpu, heads, dim, s.seed + 7).reshape([heads, 1, dim]);
    const kv = Tensor.empty(gpu, [heads, keys, dim], 'bf16', 'attn.kv');
    fillRandom(kv, { seed: s.seed + 8, scale: 1 });
    const gate = randomX(gpu, 1, 4 * heads * dim, s.seed + 9);
    try {
      for (const path of ['one', 'one-separate', 'decode'] as const) {
        const side = { kind: 'full' as const, data: kv };
        const how = path === 'one-separate'
          ? { path: 'one' as const, merge: 'separate' as const }
          : { path, merge: 'fold' as const };
        const opts = {
          kvLen: keys, offset: keys - 1, mask: { kind: 'none' as const }, scale: 1 / Math.sqrt(dim),
          round: 'bf16' as const, gate, ...how,
        };
        const t = await timeCalls(gpu, () => sdpa(q, side, side, opts).dispose(), { samples: Math.min(s.samples, 3) });
        out.push({ heads, dim, keys, path, wallUs: t.wallMs.median * 1000 });
      }
    } finally {
      q.dispose(); kv.dispose(); gate.dispose();
    }
  }
  return out;
}
