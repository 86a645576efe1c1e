// The persistent kernel inside decode (DeviceOptions.kernels.decodeStep 'persistent', issue 39) on a small model of
// random weights whose layer tail (o_proj, the MLP, the next layer's norm + gqkv) the kernel takes on a CPU driver
// (hidden 512, H*D 512, intermediate 1024, bf16 weights, f32 activations: bf16 ones round away what the sums' order
// changes): at grids of 1 and 2 workgroups, greedy generation picks the per-op path's tokens and a replayed logits
// step gives its logits bit for bit, the per-op tail being the gemv_wide products a GPU runs (gpuPerOpMlp; the CPU
// driver's own 'rows' kernels differ in the last bits), with two dispatches fewer a layer call (o_proj, gate_up and
// down in one) and one more for each layer with a next in its stack (its tail takes that layer's gqkv), every step
// counted as persistent.
// Where the kernel does not take the weights (the embedded model, K 320; quantized weights) decode stays per op.
import { describe, expect, it } from 'vitest';
import { Gpu } from '../../src/kernels/gpu.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { cacheSlots, stackCalls } from '../../src/hrm/config.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { PERSIST_STEP } from '../../src/kernels/plan/persist.ts';
import { mlpRuns } from '../../src/kernels/persist/mlp.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';
import { randomModel } from '../../testkit/helpers/model.ts';
import { countPersistent, gpuPerOpMlp, greedy, PERSIST_SHAPE, TEST_SPIN } from '../helpers/persist.ts';
import { PROMPT } from '../helpers/decode.ts';

const FEED = [11, 300, 42];

describe('persistent MLP in decode', { timeout: 300_000 }, () => {
  for (const grid of [1, 2]) {
    it(`grid ${grid}: the per-op path's greedy tokens and logits bit for bit, a stack's second layer call 2 dispatches`,
      async () => {
      const kernels = { decodeStep: 'persistent', persistGrid: grid, persistSpin: TEST_SPIN } as const;
      const gpu = await Gpu.create({ kernels });
      const lm = await randomModel(gpu, PERSIST_SHAPE, { dtype: 'f32', seed: 3 });
      try {
        expect(gpu.summary.fastPaths[PERSIST_STEP]).toEqual({ on: true });
        const want = await gpuPerOpMlp(() => greedy(lm, 10));
        const got = await countPersistent(() => greedy(lm, 10));
        expect(got.result.ids).toEqual(want.ids);
        expect(want.persistentSteps).toBe(0);
        expect(got.result.persistentSteps, 'every step ran persistent').toBe(got.result.decodeTokens);
        expect(got.result.decodeTokens).toBe(9);
        expect(got.dispatched, 'persist.mlp dispatches recorded').toBeGreaterThan(0);
        // 4 layer calls a token (2 stacks of 2 layers): 5 dispatches each per op; persistent, 3 for a stack's first
        // (gqkv, attention, the tail) and 2 for its second (attention, the tail with the first's next gqkv).
        const layerCalls = cacheSlots(lm.config);
        const withNext = stackCalls(lm.config) * (lm.config.num_layers_per_stack - 1);
        expect([layerCalls, withNext]).toEqual([4, 2]);
        expect(got.result.decodePath).toEqual({
          replayed: (want.decodePath as { replayed: number }).replayed - 2 * layerCalls - withNext });

        // Logits mode: a replayed step against the recorded per-op forward.
        const caches = [0, 1].map(() => lm.model.newCache({ capacity: PROMPT.length + FEED.length }));
        for (const c of caches) await lm.model.forward(PROMPT, c, { mask: 'prefix', logits: 'last' }).readF32();
        const g = DecodeGraph.tryBuild(lm.model, caches[1], 'logits');
        if (!(g instanceof DecodeGraph)) throw new Error(`no graph: ${g.reason}`);
        expect(g.persistent).toBe(true);
        for (const t of FEED) {
          const want = await gpuPerOpMlp(() => lm.model.forward([t], caches[0], { mask: 'causal' }).readF32());
          g.feed(t);
          expect(await g.nextLogits(), `logits at ${caches[1].offset}`).toEqual(want);
        }
        g.dispose();
        for (const c of caches) c.dispose();
      } finally {
        lm.model.dispose();
        gpu.destroy();
      }
    });
  }

  it('with no grid forced, measures it once per Gpu ahead of decoding (prepareDecode), never inside a step',
    async () => {
    const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistSpin: 2 ** 22 } });
    const lm = await randomModel(gpu, PERSIST_SHAPE, { dtype: 'f32', seed: 3 });
    const cache = lm.model.newCache({ capacity: 8 });
    try {
      lm.model.forward(PROMPT, cache, { mask: 'prefix' }).dispose();
      const runs = () => mlpRuns(gpu);
      const step = () => lm.model.forward([7], cache, { mask: 'causal', persistent: true }).dispose();
      const r0 = runs();
      step();
      expect(runs(), 'a grid not measured yet: per op').toBe(r0);
      await lm.model.prepareDecode();
      const r1 = runs();
      expect(r1, 'measured').toBeGreaterThan(r0);
      await lm.model.prepareDecode();
      expect(runs(), 'once').toBe(r1);
      step();
      expect(runs() - r1, 'a persistent tail a layer call').toBe(cacheSlots(lm.config));
      const stats = await greedy(lm, 6);
      expect(stats.persistentSteps).toBe(stats.decodeTokens);
    } finally {
      cache.dispose();
      lm.model.dispose();
      gpu.destroy();
    }
  });

  it('keeps the per-op path where the kernel does not take the weights: the embedded model, 8-bit weights',
    async () => {
    const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistGrid: 1, persistSpin: TEST_SPIN } });
    try {
      const embedded = await loadModel(dirFiles(EMBEDDED), { gpu, dtype: 'bf16' });
      const q8 = await randomModel(gpu, PERSIST_SHAPE, { dtype: 'bf16', seed: 3, quant: { bits: 8, groupSize: 64 } });
      for (const [what, lm] of [['the embedded model (K 320)', embedded], ['8-bit weights', q8]] as const) {
        try {
          const run = await countPersistent(() => greedy(lm, 4));
          expect(run.dispatched, what).toBe(0);
          expect(run.result.persistentSteps, what).toBe(0);
          expect(run.result.decodePath, what).toHaveProperty('replayed');
        } finally {
          lm.model.dispose();
        }
      }
      expect(gpu.summary.fastPaths[PERSIST_STEP], 'the Gpu still would').toEqual({ on: true });
    } finally {
      gpu.destroy();
    }
  });
});
