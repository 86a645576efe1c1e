// A decode step with the MLP folded into one dispatch (DeviceOptions.kernels.decodeMlp 'fold', gemv_mlp) against the
// two products on a Gpu of their own: the same greedy tokens, logits within the f32 sums' reordering, fewer
// dispatches a layer call, and a captured step that replays it bit for bit.
import { describe, expect, it } from 'vitest';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { generate } from '../../src/hrm/generate.ts';
import { cacheSlots } from '../../src/hrm/config.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel, type LoadedModel } from '../../src/hrm/load.ts';
import { kernelPolicy } from '../../src/kernels/plan/options.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { getGpu } from '../helpers/gpu.ts';
import { PROMPT } from '../helpers/decode.ts';
import { fixtureDir, model } from '../../testkit/helpers/model.ts';

const FEED = [11, 300, 42];

describe('decode MLP in one dispatch', { timeout: 300_000 }, () => {
  it('brown: the two products\' tokens and logits, fewer dispatches a layer call; a captured step replays it',
    async () => {
    const folded = await Gpu.create({ kernels: { decodeMlp: 'fold' } });
    const lms: Record<'fold' | 'separate', LoadedModel> = {
      separate: await model(await getGpu(), 'brown', 'f32'),
      fold: await loadModel(dirFiles(fixtureDir('brown')), { gpu: folded, dtype: 'f32' }),
    };
    expect(kernelPolicy(lms.separate.model.gpu).decodeMlp).toBe('separate');
    try {
      const steps: Record<string, { logits: Float32Array[]; dispatches: number }> = {};
      for (const form of ['separate', 'fold'] as const) {
        const lm = lms[form], gpu = lm.model.gpu;
        const cache = lm.model.newCache({ capacity: PROMPT.length + FEED.length, mode: 'after-prefill' });
        await lm.model.forward(PROMPT, cache, { mask: 'prefix', logits: 'last' }).readF32();
        const logits: Float32Array[] = [];
        let dispatches = 0;
        for (const t of FEED) {
          const d0 = gpu.dispatchCount;
          const out = lm.model.forward([t], cache, { mask: 'causal' });
          dispatches = gpu.dispatchCount - d0;
          logits.push(await out.readF32());
          out.dispose();
        }
        cache.dispose();
        steps[form] = { logits, dispatches };
      }
      // The same roundings, f32 sums in another order: logits of O(10) within 1e-4 of each other.
      for (const [i, want] of steps.separate.logits.entries()) {
        const got = steps.fold.logits[i];
        const worst = want.reduce((m, w, j) => Math.max(m, Math.abs(got[j] - w)), 0);
        expect(worst, `step ${i}`).toBeLessThan(1e-4);
        expect(got.indexOf(Math.max(...got)), `step ${i}'s greedy pick`).toBe(want.indexOf(Math.max(...want)));
      }
      // On a CPU driver the separate MLP is three dispatches (its norm runs apart), on a GPU two; folded, one.
      const fewer = (steps.separate.dispatches - steps.fold.dispatches) / cacheSlots(lms.fold.config);
      expect(fewer).toBe(folded.cpu ? 2 : 1);

      // A captured step replays the fold: the recorded forward's logits, bit for bit.
      const lm = lms.fold;
      const caches = [0,
        1].map(() => lm.model.newCache({ capacity: PROMPT.length + FEED.length, mode: 'after-prefill' }));
      for (const c of caches) await lm.model.forward(PROMPT, c, { mask: 'prefix', logits: 'last' }).readF32();
      const g = DecodeGraph.tryBuild(lm.model, caches[1], 'logits');
      if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
      for (const t of FEED) {
        const want = await lm.model.forward([t], caches[0], { mask: 'causal' }).readF32();
        g.feed(t);
        expect(await g.nextLogits()).toEqual(want);
      }
      g.dispose();
      for (const c of caches) c.dispose();
    } finally {
      lms.fold.model.dispose();
      folded.destroy();
    }
  });

  it('generate() in bf16 with the MLP folded picks the two products\' tokens, on bf16, 4- and 8-bit weights',
    async () => {
    const folded = await Gpu.create({ kernels: { decodeMlp: 'fold' } });
    try {
      const layerCalls = cacheSlots((await model(await getGpu(), 'brown', 'bf16')).config);
      for (const quantize of [undefined, { bits: 4, groupSize: 64 }, { bits: 8, groupSize: 32 }]) {
        const texts: string[] = [];
        const dispatches: number[] = [];
        for (const gpu of [await getGpu(), folded]) {
          const lm = await loadModel(dirFiles(fixtureDir('brown')), { gpu, dtype: 'bf16', quantize });
          try {
            const cache = lm.model.newCache({ capacity: 3 });
            lm.model.forward([5, 9], cache, { mask: 'prefix' }).dispose();
            const d1 = gpu.dispatchCount;
            lm.model.forward([7], cache, { mask: 'causal' }).dispose();
            dispatches.push(gpu.dispatchCount - d1);
            cache.dispose();
            for await (const ev of generate(lm, 'The jury said',
              { maxTokens: 24 })) if (ev.type === 'done') texts.push(ev.text);
          } finally {
            lm.model.dispose();
          }
        }
        const what = quantize ? `${quantize.bits}-bit weights` : 'bf16 weights';
        expect(texts[1], what).toBe(texts[0]);
        // Each decode layer call's MLP is one dispatch where it was two (three on a CPU driver).
        expect(dispatches[0] - dispatches[1], what).toBe((folded.cpu ? 2 : 1) * layerCalls);
      }
    } finally {
      folded.destroy();
    }
  });
});
