// The real HRM-Text-1B shape with random weights made on the GPU (no file): weights plus a 4096-token cache must
// fit an adapter that binds only 128 MiB at once (lm_head and embed_tokens are 192 MiB: they split), and a
// forward must run through the split tensors.
import { describe, expect, it } from 'vitest';
import { Gpu } from '../../src/kernels/gpu.ts';
import { HRM_TEXT_1B, parameterCount } from '../../src/hrm/config.ts';
import { disposeWeights } from '../../src/hrm/weights.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import { cacheBytes } from '../../src/hrm/cache.ts';

const MiB = 2 ** 20;

describe('HRM-Text-1B shape', () => {
  it('weights and a 4096-token bf16 cache fit a 128 MiB-binding adapter through splitting', async () => {
    const gpu = await Gpu.create({ bindingLimit: 128 * MiB });
    const c = HRM_TEXT_1B;
    const w = await randomWeights(gpu, c, 1);
    expect(w.bytes).toBe(parameterCount(c) * 2 - c.hidden_size * 2); // everything but z_L_init (zeros, host-side)
    expect(w.lmHead.chunks.length).toBe(2);
    expect(w.embed.chunks.length).toBe(2);
    for (const t of [...w.lmHead.chunks, ...w.embed.chunks,
      ...w.L.flatMap((l) => [l.gqkv, l.o, l.gateUp, l.down].flatMap((x) => x.chunks))]) {
      expect(t.byteLength).toBeLessThanOrEqual(gpu.maxBinding);
    }
    const m = new HrmModel(gpu, c, w, 'bf16');
    const cache = m.newCache({ capacity: 4096 });
    expect(cache.bytes).toBe(cacheBytes(c, 4096, 'bf16'));
    expect(cache.bytes).toBe(3 * 2 ** 30); // 768 KiB per token
    console.log(`[1B] weights ${(w.bytes / 2 ** 30).toFixed(2)} GiB + ` +
      `bf16 cache @4096 ${(cache.bytes / 2 ** 30).toFixed(2)} GiB; ` +
      `lm_head in ${w.lmHead.chunks.length} chunks of <= ${gpu.maxBinding / MiB} MiB`);
    // Two prompt tokens through every split tensor (the embedding gather and lm_head read both chunks).
    const t = m.forward([6, 65535], cache, { mask: 'prefix', logits: 'last' });
    const logits = await t.readF32();
    expect(logits.length).toBe(c.vocab_size);
    expect(logits.every(Number.isFinite)).toBe(true);
    expect(new Set(logits.slice(0, 1000)).size).toBeGreaterThan(100);
    cache.dispose();
    disposeWeights(w);
    gpu.destroy();
  }, 600_000);
});
