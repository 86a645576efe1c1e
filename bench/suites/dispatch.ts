// The fixed price of every kernel in a forward pass: a chain of tiny dependent adds, each reading the previous
// result; JavaScript's time to record one, and submit-to-done time per dispatch (launch + barrier).
import type { Gpu } from '../../src/gpu/gpu.ts';
import { add } from '../../src/kernels/ops/ops.ts';
import type { Settings } from '../harness/settings.ts';
import { now, stats, type Stats } from '../timing/stats.ts';
import { randomX } from './figures.ts';

export interface DispatchFigure {
  chain: number;
  /** Microseconds per dependent dispatch: JS recording, and submit -> GPU done. */
  encodeUs: Stats;
  gpuUs: Stats;
}

/** `chain` dependent adds of 256 floats (each reads the previous output): the per-dispatch price, recording, GPU. */
export async function dispatchCost(gpu: Gpu, s: Settings): Promise<DispatchFigure> {
  const b = randomX(gpu, 1, 256, s.seed + 2);
  const run = async (): Promise<{ enc: number; gpu: number }> => {
    let x = randomX(gpu, 1, 256, s.seed + 3);
    await gpu.sync();
    const t0 = now();
    for (let i = 0; i < s.dispatchChain; i++) {
      const y = add(x, b);
      x.dispose();
      x = y;
    }
    const t1 = now();
    await gpu.sync();
    const t2 = now();
    x.dispose();
    return { enc: ((t1 - t0) * 1000) / s.dispatchChain, gpu: ((t2 - t1) * 1000) / s.dispatchChain };
  };
  try {
    await run();
    const runs = [];
    for (let i = 0; i < s.samples; i++) runs.push(await run());
    return { chain: s.dispatchChain, encodeUs: stats(runs.map((r) => r.enc)), gpuUs: stats(runs.map((r) => r.gpu)) };
  } finally {
    b.dispose();
  }
}
