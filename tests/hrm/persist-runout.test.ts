// A persistent decode step whose grid barrier runs out (issue 39): the step and every one queued after it are redone
// on the per-op path from that position, so the tokens are the per-op path's; the Gpu warns once, says why in
// fastPaths and stays per-op. Forced two ways: one barrier of the persistent kernel waiting for a workgroup that
// never comes (the kernel's `absentAt` test mode, through a mock of persist/mlp.ts): the first (nothing written yet)
// or the NEXT variant's last (x updated, the next layer's gqkv unwritten), and the flag word set from the host
// between steps (mid-generation: queued greedy steps, a sampled step from logits, a recorded step). The per-op tail is
// the three gemv_wide products a GPU runs (gpuPerOpMlp), so that the steps that did run persistent compare too.
import { describe, expect, it, vi } from 'vitest';
import { Gpu } from '../../src/kernels/gpu.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';
import { Sampler } from '../../src/hrm/sampling.ts';
import { Stepper } from '../../src/hrm/stepper.ts';
import { DecodeGraph } from '../../src/hrm/decode.ts';
import { flagWord } from '../../src/kernels/persist/mlp.ts';
import { PERSIST_STEP, persistOff } from '../../src/kernels/plan/persist.ts';
import { randomModel } from '../../testkit/helpers/model.ts';
import { gpuPerOpMlp, greedy, PERSIST_SHAPE } from '../helpers/persist.ts';
import { PROMPT } from '../helpers/decode.ts';

type Pick = (o: { oProj?: unknown; next?: unknown }) => number | undefined;
/** The barrier each persistent dispatch is made to run out at (`pick`; none when null), and how many were. */
const hook = vi.hoisted(() => ({ pick: null as Pick | null, forced: 0 }));
vi.mock('../../src/kernels/persist/mlp.ts', async (load) => {
  const real = await load<typeof import('../../src/kernels/persist/mlp.ts')>();
  return { ...real, mlpPersistent: (...[x, gu, down, o]: Parameters<typeof real.mlpPersistent>) => {
    const absentAt = hook.pick?.(o);
    const ran = real.mlpPersistent(x, gu, down, { ...o, absentAt });
    if (ran && absentAt !== undefined) hook.forced++;
    return ran;
  } };
});
/** NEXT's last barrier: after the MLP's (1, or 2 after o_proj's); no barrier of the other variants. */
const NEXT_LAST: Pick = (o) => o.next ? (o.oProj ? 2 : 1) : undefined;

/** A Gpu running the persistent MLP at a grid of 1 (a barrier waited on few spins), its warnings, a model on it. */
async function setup(): Promise<{ gpu: Gpu; warnings: string[]; lm: LoadedModel }> {
  const warnings: string[] = [];
  const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistGrid: 1, persistSpin: 2 ** 12 },
    warn: (m) => warnings.push(m) });
  return { gpu, warnings, lm: await randomModel(gpu, PERSIST_SHAPE, { dtype: 'f32', seed: 5 }) };
}

/** The Gpu went per-op for good, warning once with the reason. */
function expectPerOp(gpu: Gpu, warnings: string[]): void {
  const why = persistOff(gpu);
  expect(why).toMatch(/^a grid barrier of the persistent MLP ran out of spins at a grid of 1: per-op path/);
  expect(warnings).toEqual([`hrm-webgpu: ${why}`]);
  expect(gpu.summary.fastPaths[PERSIST_STEP]).toEqual({ on: false, why });
}

/**
 * `count` tokens of a Stepper after PROMPT's prefill (`recorded`: no graph), the flag word set before step `at` is
 * queued (-1: never): a replayed one as the graph queues it, a recorded one as it is asked for.
 */
async function stepped(lm: LoadedModel, sampler: Sampler, o: { count: number; at: number; recorded: boolean }):
  Promise<number[]> {
  const { count, at } = o;
  const cache = lm.model.newCache({ capacity: PROMPT.length + count, mode: 'after-prefill' });
  const first = await lm.model.forward(PROMPT, cache, { mask: 'prefix', logits: 'last' }).readF32();
  await lm.model.prepareDecode();
  const s = new Stepper(lm.model, cache, sampler, o.recorded ? 'recorded' : null, sampler.sample(first), count);
  const gpu = lm.model.gpu;
  const setFlag = () => gpu.write(flagWord(gpu).buffer, flagWord(gpu).offset, new Uint32Array([1]));
  let queued = 0;
  const spies = (['next', 'nextLogits'] as const).map((m) => {
    const own = DecodeGraph.prototype[m] as (this: DecodeGraph) => Promise<never>;
    return vi.spyOn(DecodeGraph.prototype, m).mockImplementation(function (this: DecodeGraph) {
      if (queued++ === at) setFlag();
      return own.call(this);
    });
  });
  const out: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      if (o.recorded && i === at) setFlag();
      out.push(await s.next());
    }
    expect(s.persistentSteps, 'the steps before the run-out ran persistent').toBe(Math.max(at, 0));
    expect(s.path, 'the steps after it').toHaveProperty(o.recorded ? 'recorded' : 'replayed');
  } finally {
    for (const spy of spies) spy.mockRestore();
    await s.close();
    cache.dispose();
  }
  return out;
}

describe('persistent decode step: a barrier that runs out', { timeout: 300_000 }, () => {
  const runouts: Array<[string, Pick]> = [['the first barrier', () => 0], ['NEXT\'s last barrier only', NEXT_LAST]];
  for (const [which, pick] of runouts) {
    it(`${which} waiting for an absent workgroup: greedy tokens of the per-op path, a warning, per-op after`,
      async () => {
      const { gpu, warnings, lm } = await setup();
      try {
        hook.pick = pick;
        hook.forced = 0;
        const got = await gpuPerOpMlp(() => greedy(lm, 10), true);
        hook.pick = null;
        expect(hook.forced, 'dispatches made to run out').toBeGreaterThan(0);
        expectPerOp(gpu, warnings);
        expect(got.persistentSteps).toBe(0);
        // The Gpu is per-op now: the same generation is the reference, and no step runs persistent any more.
        const want = await gpuPerOpMlp(() => greedy(lm, 10), true);
        expect(got.ids).toEqual(want.ids);
        expect(got.decodePath, 'the redo replays a per-op step').toEqual(want.decodePath);
        expect(want.persistentSteps).toBe(0);
        expect(warnings.length).toBe(1);
      } finally {
        hook.pick = null;
        lm.model.dispose();
        gpu.destroy();
      }
    });
  }

  const cases: Array<[string, () => Sampler, number, boolean]> = [
    ['greedy steps queued on the GPU', () => new Sampler(), 3, false],
    ['a step sampled from logits', () => new Sampler({ temperature: 0.8, seed: 7 }), 2, false],
    ['recorded steps', () => new Sampler(), 4, true],
  ];
  for (const [what, sampler, at, recorded] of cases) {
    it(`the flag set before step ${at} of 7, ${what}: redone per op from there`, async () => {
      const { gpu, warnings, lm } = await setup();
      try {
        const got = await gpuPerOpMlp(() => stepped(lm, sampler(), { count: 7, at, recorded }), true);
        expectPerOp(gpu, warnings);
        const want = await gpuPerOpMlp(() => stepped(lm, sampler(), { count: 7, at: -1, recorded }), true);
        expect(got).toEqual(want);
        expect(warnings.length).toBe(1);
      } finally {
        lm.model.dispose();
        gpu.destroy();
      }
    });
  }
});
