// The grid barrier's self-check (barrier.inc.wgsl, grid_check.wgsl): which grid of workgroups a device runs at once,
// found by running the barrier at that grid and checking every value on the CPU. plan/prepare.ts runs it when a
// Gpu is created (plan/persist.ts decides when); tests run it at the grid sizes they force.
import { Kernel } from '../kernel.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { Tensor } from '../../tensor/tensor.ts';

const CHECK = new Kernel('persist/grid_check.wgsl', 'grid_check');

/** Threads a workgroup of the persistent kernels (and of the check, so that as many of its workgroups are resident). */
export const PERSIST_THREADS = 256;
/** Dependent steps the check runs: every workgroup reads every other's value this many times. */
export const CHECK_STEPS = 16;
/**
 * Atomic loads a waiting workgroup makes before it gives up: about half a second of polling L2 on an H100
 * (~0.4 us a load), far above a barrier's few microseconds, so only a workgroup that is not resident runs it out.
 */
export const DEFAULT_SPIN = 2 ** 20;

/** The uniform `absent_at` (barrier.inc.wgsl) of a test's `absentAt`: 0xffffffff, no barrier, when undefined. */
export function absentAt(k: number | undefined): number {
  return k === undefined ? 0xffffffff : k;
}
/**
 * The grids tried, smallest first: powers of two, and multiples of the SM counts of the GPUs this targets (132 on an
 * H100 / H200, 108 on an A100), each as many workgroups a multiprocessor as fit (256 threads, few registers).
 */
export const GRID_CANDIDATES: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 108, 128, 132, 216, 256, 264, 432, 512,
  528, 1024];

/** How one run went: its workgroups, whether the barrier's flag was set, and what was wrong (null: all right). */
export interface GridRun { n: number; flagged: boolean; why: string | null }

/**
 * The check at a grid of `n` workgroups over `steps` barriers, each waited on `spin` loads at most; `absentAt`
 * makes that barrier (0-based) wait for one workgroup more than there are (the run-out tests). Null `why` when every
 * value equals the CPU's, the flag is clear and the counts are back at 0.
 */
export async function checkGrid(gpu: Gpu, n: number,
  o: { steps?: number; spin?: number; absentAt?: number } = {}): Promise<GridRun> {
  const steps = o.steps ?? CHECK_STEPS;
  const ctl = Tensor.from(gpu, new Uint32Array(4), [4], 'u32', 'persist.check.ctl');
  const vals = Tensor.from(gpu, new Uint32Array((steps + 1) * n), [steps + 1, n], 'u32', 'persist.check.vals');
  try {
    CHECK.dispatch(gpu, {
      bindings: { ctl, vals }, uniforms: { n, absent_at: absentAt(o.absentAt), spin: o.spin ?? DEFAULT_SPIN, steps },
      overrides: { THREADS: PERSIST_THREADS }, workgroups: n, label: 'persist.grid_check',
    });
    const c = (await ctl.read()) as Uint32Array;
    const got = (await vals.read()) as Uint32Array;
    const flagged = c[2] !== 0;
    if (c[0] !== 0 || c[1] !== 0) return { n, flagged, why: `the counts were left at ${c[0]}, ${c[1]}, not 0` };
    if (flagged) return { n, flagged, why: `a barrier's spin ran out at a grid of ${n} workgroups` };
    const want = expected(n, steps);
    const bad = want.findIndex((v, i) => v !== got[i]);
    if (bad < 0) return { n, flagged, why: null };
    const [s, g] = [Math.floor(bad / n), bad % n];
    return { n, flagged, why: `workgroup ${g} of ${n} wrote ${got[bad]} at step ${s}, not ${want[bad]} (stale reads)` };
  } finally {
    ctl.dispose();
    vals.dispose();
  }
}

/** grid_check's values, as its header defines them. */
export function expected(n: number, steps: number): Uint32Array {
  const v = new Uint32Array((steps + 1) * n);
  for (let g = 0; g < n; g++) v[g] = (Math.imul(g, 0x01000193) + 1) >>> 0;
  for (let s = 1; s <= steps; s++) {
    let sum = 0;
    for (let j = 0; j < n; j++) sum = (sum + Math.imul(v[(s - 1) * n + j], 2 * j + 1)) >>> 0;
    for (let g = 0; g < n; g++) v[s * n + g] = (Math.imul(sum, 0x9e3779b1) + 7 * g + s) >>> 0;
  }
  return v;
}

/**
 * The largest of `candidates` (smallest first) at which the check passes, trying each until one fails: at most one
 * run waits out its spins. grid 0 and the first failure's reason when none passes.
 */
export async function largestGrid(gpu: Gpu, candidates: readonly number[],
  spin = DEFAULT_SPIN): Promise<{ grid: number; why: string | null }> {
  let grid = 0;
  for (const n of candidates) {
    const run = await checkGrid(gpu, n, { spin });
    if (run.why !== null) return grid ? { grid, why: null } : { grid, why: run.why };
    grid = n;
  }
  return { grid, why: null };
}
