// The planner's persistent-decode half (issue 39; plan/options.ts): whether a decode step's persistent kernels
// (kernels/persist/) run on a Gpu, at which grid, and why not. The grid comes from the barrier's self-check, run
// by prepare.ts when the Gpu is created and kept in its state: the largest grid at which every workgroup arrived at
// every barrier and read every value right. A barrier that runs out of spins later (a grid too large for a heavier
// kernel, a GPU shared with other work) switches the Gpu to the per-op path for good, with a warning.
import type { Gpu } from '../../gpu/gpu.ts';
import type { OnOff } from '../../gpu/device.ts';
import { stateKey } from '../../gpu/registry.ts';
import { DEFAULT_SPIN, GRID_CANDIDATES, largestGrid } from '../persist/grid-check.ts';
import { kernelPolicy } from './options.ts';
import { onOff } from './matmul.ts';

/** The persistent step's key in the adapter summary (gpu.summary.fastPaths). */
export const PERSIST_STEP = 'persistent decode step (grid barriers inside one dispatch)';

/** The self-check's grid (0: none passed), or why the persistent kernels are off on this device. */
interface PersistState { grid: number; why: string | null }
const PERSIST = stateKey<PersistState>('persist.grid');

/**
 * The grid barrier's self-check, where the Gpu's decodeStep asks for the persistent step ('auto' on GPUs only,
 * 'persistent' on CPU drivers too): at the forced grid (DeviceOptions.kernels.persistGrid) or the largest of
 * GRID_CANDIDATES that passes. The verdict goes into the Gpu's state.
 */
export async function selfCheckPersist(gpu: Gpu): Promise<void> {
  const policy = kernelPolicy(gpu);
  if (policyOff(gpu) !== null || (policy.decodeStep === 'auto' && gpu.cpu)) return;
  const candidates = policy.persistGrid === null ? GRID_CANDIDATES : [policy.persistGrid];
  const r = await largestGrid(gpu, candidates, persistSpin(gpu));
  gpu.state.set(PERSIST, r.grid > 0 ? { grid: r.grid, why: null }
    : { grid: 0, why: `the grid barrier failed its self-check on this device (${r.why})` });
}

/** Why the Gpu's options keep a decode step per op, or null. */
function policyOff(gpu: Gpu): string | null {
  const policy = kernelPolicy(gpu);
  if (policy.decodeStep === 'per-op') {
    return "DeviceOptions.kernels.decodeStep is 'per-op' (the default until a GPU measures it)";
  }
  // The persistent MLP reproduces the two products' sums, not the folded kernel's.
  return policy.decodeMlp === 'fold' ? "DeviceOptions.kernels.decodeMlp is 'fold' (the persistent MLP keeps the " +
    "two products' sums)" : null;
}

/** Why a decode step runs per op on `gpu`, or null when the persistent kernels run. */
export function persistOff(gpu: Gpu): string | null {
  const off = policyOff(gpu);
  if (off !== null) return off;
  const s = gpu.state.peek(PERSIST);
  if (s) return s.why;
  return gpu.cpu ? "a CPU driver: the grid barrier's self-check does not run there under decodeStep 'auto'"
    : 'the grid barrier was not checked on this device';
}

/** The persistent kernels' grid on `gpu` (0 where they are off). */
export function persistGrid(gpu: Gpu): number {
  return persistOff(gpu) === null ? gpu.state.peek(PERSIST)!.grid : 0;
}

/** Loads a waiting workgroup makes before giving up on `gpu`. */
export function persistSpin(gpu: Gpu): number {
  return kernelPolicy(gpu).persistSpin ?? DEFAULT_SPIN;
}

/**
 * A persistent kernel's barrier ran out (`what`: which kernel): the Gpu takes the per-op path from now on, its
 * summary says why, and gpu.warn tells the app once.
 */
export function persistRanOut(gpu: Gpu, what: string): void {
  const why = `a grid barrier of ${what} ran out of spins at a grid of ${persistGrid(gpu)}: per-op path from now on`;
  gpu.state.set(PERSIST, { grid: 0, why });
  Object.assign(gpu.summary.fastPaths, persistPaths(gpu));
  gpu.warn(`hrm-webgpu: ${why}`);
}

/** The persistent step's verdict for the adapter summary. */
export function persistPaths(gpu: Gpu): Record<string, OnOff> {
  return onOff({ [PERSIST_STEP]: persistOff(gpu) });
}
