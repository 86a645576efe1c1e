// The bench survives a lost device: the harness runs in-process on the small model while the test destroys the
// device at the start of one kernel section, in the middle of a KV-cache configuration (after its decode, before
// its prefill), and at both attempts of another section. The run must complete, redo the first two on new
// devices (the model rebuilt), give up the third with an error naming it, and still hold every other figure.
import { describe, expect, it } from 'vitest';
import { runBench } from '../../bench/harness/harness.ts';
import { DeviceKeeper } from '../../bench/harness/recover.ts';
import { defaults } from '../../bench/harness/settings.ts';
import { InputError } from '../../src/errors.ts';
import type { Gpu } from '../../src/gpu/gpu.ts';
import { checkCache, nonFinite, positive } from './figures.ts';

describe('bench device loss', () => {
  const what = 'redoes a unit on a new device after a loss, gives it up after a second loss, keeps every other figure';
  it(what, async () => {
    const s = {
      ...defaults('tiny', true), prefill: [4], prompt: 4, decodeTokens: 3, warmup: 0, samples: 1, matmulRows: 8,
      caches: ['full' as const, 'q8' as const], out: '',
    };
    const opened: Gpu[] = [];
    const attempts: string[] = [];
    const logs: string[] = [];
    const warnings: string[] = [];
    let midCache = false;
    const r = await runBench(s, {
      log: (m) => {
        logs.push(m);
        // q8's decode is measured; its prefill is not yet: lose the device in the middle of the unit, once.
        if (!midCache && m.startsWith('  q8 decode')) { midCache = true; opened[opened.length - 1].device.destroy(); }
      },
      warn: (m) => warnings.push(m),
      opened: (gpu) => opened.push(gpu),
      attempt: (unit, n, gpu) => {
        attempts.push(`${unit} #${n}`);
        if ((unit === 'stream read' && n === 1) || unit === 'gemv 2048x320') gpu.device.destroy();
      },
    });

    expect(nonFinite(r)).toEqual([]);
    expect(r.complete).toBe(true);
    const q8 = 'model hrm-text-brown-10m, q8 cache';
    expect(r.recovered.map((x) => x.unit)).toEqual(['stream read', 'gemv 2048x320', q8]);
    for (const x of r.recovered) expect(x.error).toMatch(/^\[[^\]]+\] the GPU device was lost/);
    const twice = /^gemv 2048x320: \[gemv 2048x320\] the GPU device was lost twice; gave the unit up/;
    expect(r.errors).toEqual([expect.stringMatching(twice)]);
    expect(r.skipped).toEqual([]);
    expect(attempts.filter((a) => a.endsWith('#2'))).toEqual(['stream read #2', 'gemv 2048x320 #2', `${q8} #2`]);
    // One device to start, one per loss (the one after the second loss serves the rest of the run).
    expect(opened).toHaveLength(5);
    expect(warnings).toHaveLength(4);
    const redo = new RegExp('^GPU device lost during stream read \\(.*\\); ' +
      'opening a new device, rebuilding what it needs and redoing it$');
    expect(warnings[0]).toMatch(redo);
    expect(warnings[2]).toMatch(/^GPU device lost during gemv 2048x320 .*lost twice, giving this unit up$/);
    // The model's random weights were made on the first model device and again on the one q8 moved to.
    expect(logs.filter((m) => m.startsWith('random weights:'))).toHaveLength(2);

    positive(r.kernels.stream!.GBps, 'stream GB/s');
    const gemvs = r.kernels.gemv.map((g) => g.name.split(' (')[0]).filter((n) => !n.endsWith('f16 x'));
    expect(gemvs).toEqual(['bf16 GEMV 1280x320']);
    for (const g of r.kernels.gemv) positive(g.GBps, `${g.name} GB/s`);
    expect(r.kernels.matmul.length).toBeGreaterThan(0);
    for (const m of r.kernels.matmul) positive(m.TFLOPs, `${m.name} TFLOP/s`);
    positive(r.kernels.dispatch!.gpuUs, 'dispatch gpu');
    expect(r.model!.name).toBe('hrm-text-brown-10m');
    // The q8 configuration redone from the start holds one set of figures, like the undisturbed one.
    expect(r.caches.map((c) => c.name)).toEqual(['full', 'q8']);
    for (const c of r.caches) checkCache(c, true);
    expect(r.caches[1].decode!.dispatchesPerToken).toBeGreaterThan(0);
  }, 400_000);

  it('passes other errors through without a retry', async () => {
    const attempts: number[] = [];
    const keeper = await DeviceKeeper.open({
      warn: () => { throw new Error('no warning expected'); }, attempt: (_, n) => attempts.push(n),
    });
    try {
      const bad = keeper.unit('a unit', async () => { throw new InputError('unit', 'bad'); });
      await expect(bad).rejects.toThrow(InputError);
      expect(attempts).toEqual([1]);
      expect(keeper.recovered).toEqual([]);
      expect(await keeper.unit('another', async (gpu) => gpu === keeper.gpu)).toBe(true);
    } finally {
      keeper.gpu.destroy();
    }
  });
});
