// A captured step (a decode token, a prefill) timed on the GPU as one compute pass, whole and without each kernel's
// dispatches in turn: what each kernel costs, barriers included. Per-dispatch profiles inflate every kernel by a
// pass of its own; this does not.
import type { Dispatch, Gpu } from '../../src/gpu/gpu.ts';
import { capture } from '../../src/gpu/capture.ts';
import { inPassMs, passMs, queuedPassMs, type QueuedSteps } from '../timing/calls.ts';
import { stats } from '../timing/stats.ts';

/**
 * A captured decode step timed on the GPU as one compute pass (passMs: no JavaScript, no per-dispatch passes), and
 * for each kernel (label and grid: the projections share a label) how much faster the pass runs without its
 * dispatches: what they cost, barriers included. The outputs of such a pass are garbage; only its time counts.
 */
export interface Ablation {
  stepMs: number;
  dispatches: number;
  byKernel: Array<{ kernel: string; count: number; ms: number }>;
  /** Decode only: the step replayed 32 times with 4 steps in flight (a readback each), and all 32 at once. */
  queued?: QueuedSteps[];
  /**
   * Where the device writes timestamps inside a pass (Chrome): the same pass with one after every dispatch, summed
   * per kernel (each dispatch's run and its wait on the one before); null elsewhere.
   */
  inPass?: { stepMs: number; byKernel: Array<{ kernel: string; count: number; ms: number }> } | null;
}

/**
 * Ablation of the dispatches `step` records (see Ablation); medians of `passes` passes each; with `queued` (a decode
 * step) also the step replayed as generation queues it (Ablation.queued). None on CPU drivers: a pass per kernel of
 * a step takes minutes there and says nothing of a GPU.
 */
export async function ablate(
  gpu: Gpu, step: () => unknown, { passes = 5, queued = false } = {},
): Promise<Ablation | null> {
  if (gpu.cpu) return null;
  await gpu.sync();
  const cap = capture(gpu, step);
  const claimed = gpu.claim(cap.allocated);
  try {
    const uploads = [...cap.uniforms, ...cap.uploads];
    const time = async (ds: Dispatch[]) => stats(await passMs(gpu, ds, uploads, passes)).median;
    const stepMs = await time(cap.dispatches);
    const kernel = (d: Dispatch) => `${d.label} [${d.workgroups.join('x')}]`;
    const byKernel = [];
    for (const k of new Set(cap.dispatches.map(kernel))) {
      const rest = cap.dispatches.filter((d) => kernel(d) !== k);
      byKernel.push({ kernel: k, count: cap.dispatches.length - rest.length, ms: stepMs - (await time(rest)) });
    }
    const queue = (ahead: number) => queuedPassMs(gpu, cap.dispatches, uploads, 32, ahead);
    const q = queued ? [await queue(4), await queue(32)] : undefined;
    let inPass: Ablation['inPass'] = null;
    // A query set holds at most 4096 timestamps (WebGPU's limit): a longer step is not timed this way.
    if (gpu.inPassTimestamps && cap.dispatches.length < 4096) {
      const per = await inPassMs(gpu, cap.dispatches, uploads, passes);
      const sums = new Map<string, { kernel: string; count: number; ms: number }>();
      for (const [i, d] of cap.dispatches.entries()) {
        const e = sums.get(kernel(d)) ?? { kernel: kernel(d), count: 0, ms: 0 };
        e.count++;
        e.ms += per[i];
        sums.set(e.kernel, e);
      }
      inPass = { stepMs: per.reduce((a, b) => a + b, 0), byKernel: [...sums.values()].sort((a, b) => b.ms - a.ms) };
    }
    return {
      stepMs, dispatches: cap.dispatches.length, byKernel: byKernel.sort((a, b) => b.ms - a.ms), queued: q, inPass,
    };
  } finally {
    for (const b of claimed) gpu.release(b);
  }
}
