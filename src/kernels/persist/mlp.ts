// The persistent MLP tail of a decode layer call (mlp.wgsl): norm + gate_up + SwiGLU, a grid barrier, down +
// residual, in one dispatch, bit for bit the per-op path's two gemv_wide products; with `oProj` (the OPROJ variant)
// the attention's output projection + residual first and a barrier more, bit for bit the per-op o_proj's gemv_wide
// product before the two; with `next` (NEXT) after them a barrier more and the next layer's rms-normed gqkv
// projection, bit for bit its per-op gemv_wide product with the fused norm. `persistentMlp` dispatches it;
// `mlpStep` is the step with its fallback: the per-op path where the planner (plan/persist.ts) keeps it or the
// kernel cannot take the shapes, and a redo on the per-op path when a barrier ran out (the Gpu then stays per-op);
// `mlpGrid` sizes the grid for the kernel variant itself, ahead of the decode steps whose forwards run it through
// `mlpPersistent` (hrm/linear.ts) and read the flag back with their output (`flagWord`, hrm/decode.ts).
import { Kernel } from '../kernel.ts';
import type { Gpu } from '../../gpu/gpu.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { stateKey } from '../../gpu/registry.ts';
import { InputError } from '../../errors.ts';
import { roundCode, type Round } from '../common/codes.ts';
import { placeholder } from '../common/placeholder.ts';
import { matmul } from '../matmul/matmul.ts';
import { persistGrid, persistRanOut, persistSpin } from '../plan/persist.ts';
import { kernelPolicy } from '../plan/options.ts';
import { absentAt, GRID_CANDIDATES, PERSIST_THREADS } from './grid-check.ts';
import { persistMlpShape, type NextProj, type OProj } from './mlp-shape.ts';

export { persistMlpShape, type NextProj, type OProj };

const MLP = new Kernel('persist/mlp.wgsl', 'persist_mlp');
/** The persistent kernel's dispatch label (either variant): a captured step holds one where it ran (hrm/decode.ts). */
export const MLP_LABEL = 'persist.mlp';

export interface PersistMlpOptions {
  /** rmsNorm's eps of the norm before gate_up. */
  eps: number;
  /** Output rounding of every op (as matmul's `round`). */
  round?: Round;
  /** x += oProj.w(oProj.attn) first (one dispatch for the layer's whole tail after attention). */
  oProj?: OProj;
  /** next.out = next.w(rmsNorm(x)) last, eps's norm (the next layer's gqkv, so a layer call is 2 dispatches). */
  next?: NextProj;
  /** Tests: barrier k (0-based in the dispatch) waits for one workgroup more than the grid has, so it runs out. */
  absentAt?: number;
}

/**
 * x += down(silu(gate) * up), gate | up = gateUp(rmsNorm(x)), after x += oProj.w(oProj.attn) where given, then
 * next.out = next.w(rmsNorm(x)) where given, in one dispatch of `grid` workgroups (fewer where there are fewer
 * blocks), each barrier waited on `spin` loads at most (1 barrier, 1 more with oProj, 1 more with next). False,
 * nothing dispatched, where persistMlpShape refuses the operands. A barrier that runs out sets the device's flag
 * (persistFlag) and leaves the work after it undone: x as it was, except at next's barrier (x updated, next.out
 * unwritten; decode redoes the whole step, hrm/stepper.ts).
 */
export function persistentMlp(x: Tensor, gateUp: Tensor, down: Tensor,
  o: PersistMlpOptions & { grid: number; spin: number }): boolean {
  const shape = persistMlpShape(x, gateUp, down, o.oProj, o.next);
  if (shape) dispatchMlp(x, gateUp, down, o, shape);
  return shape !== null;
}

/** persistentMlp's dispatch, on operands persistMlpShape took (`shape`, its overrides). */
function dispatchMlp(x: Tensor, gateUp: Tensor, down: Tensor, o: PersistMlpOptions & { grid: number; spin: number },
  shape: Record<string, number>): void {
  const gpu = x.gpu;
  const K = x.shape[x.rank - 1];
  const I = gateUp.shape[0] / 2;
  const N = o.next ? o.next.w.shape[0] : 1;
  // Blocks of each product: ROWSU / 2 activations, ROWSD down rows, ROWSO o_proj rows, ROWSQ gqkv rows
  // (mlp.wgsl); no more workgroups than the one with most.
  const rows = (wg: number) => (PERSIST_THREADS / wg) * shape.RPG;
  const n = Math.min(o.grid, Math.max(Math.ceil(I / (rows(shape.WGU) / 2)), Math.ceil(K / rows(shape.WGD)),
    o.oProj ? Math.ceil(K / rows(shape.WGO)) : 1, o.next ? Math.ceil(N / rows(shape.WGQ)) : 1));
  const mid = Tensor.empty(gpu, [I + (o.oProj ? K : 0) + (o.next ? K : 0)], 'f32', 'persist.mid');
  // Without OPROJ, wo and attn4 are never read: down and gate_up stand in (read-only, like them); without NEXT,
  // wq and gq: down and a placeholder.
  const op = o.oProj ?? { w: down, attn: gateUp };
  MLP.dispatch(gpu, {
    bindings: { ctl: { buffer: control(gpu), offset: 0, size: 16 }, x4: x, wu: gateUp, wd: down, mid, wo: op.w,
      attn4: op.attn, wq: o.next?.w ?? down, gq: o.next?.out ?? placeholder(gpu, 'persist.gq', 'f32') },
    uniforms: { K, I, n, absent_at: absentAt(o.absentAt), spin: o.spin, eps: o.eps, HD: op.w.shape[op.w.rank - 1], N },
    overrides: { ...shape, ROUND: roundCode('persistentMlp', o.round) }, workgroups: n, label: MLP_LABEL,
  });
  mid.dispose();
  gpu.state.get(RUNS, () => ({ n: 0 })).n++;
}

const RUNS = stateKey<{ n: number }>('persist.mlp.runs');

/**
 * Persistent dispatches (either variant) recorded on `gpu` so far (a captured one counts once, when captured): a decode
 * step compares it before and after its forward to know whether to read the flag.
 */
export function mlpRuns(gpu: Gpu): number {
  return gpu.state.peek(RUNS)?.n ?? 0;
}

/**
 * The MLP step on `x` (after o.oProj's product where given) as the Gpu's planner says: the persistent kernel at its
 * grid (mlpGrid), else (or where it cannot take the shapes) the per-op path. Reads the barrier's flag back (a sync:
 * the decode graph reads it with its token instead); if it was set, x is untouched, so the step is redone on the
 * per-op path and the Gpu switches to it for good (persistRanOut warns). Resolves to the path that wrote x.
 * Not for the NEXT variant: a run-out at its last barrier leaves x updated (decode redoes the whole step instead).
 */
export async function mlpStep(x: Tensor, gateUp: Tensor, down: Tensor,
  o: PersistMlpOptions): Promise<'persistent' | 'per-op'> {
  if (o.next) throw new InputError('mlpStep', 'next: a run-out could leave x updated (the NEXT variant is decode\'s)');
  const gpu = x.gpu;
  const grid = await mlpGrid(x, gateUp, down, o.oProj);
  if (grid > 0 && persistentMlp(x, gateUp, down, { ...o, grid, spin: persistSpin(gpu) })) {
    if (!(await takeFlag(gpu))) return 'persistent';
    persistRanOut(gpu, 'the persistent MLP');
  }
  if (o.oProj) matmul(o.oProj.attn, o.oProj.w, { round: o.round, accumulate: x });
  const a = matmul(x, gateUp, { round: o.round, norm: { eps: o.eps }, swiglu: true });
  matmul(a, down, { round: o.round, accumulate: x });
  a.dispose();
  return 'per-op';
}

const GRIDS = stateKey<Map<string, number>>('persist.mlp.grids');

/**
 * The kernel's overrides for these operands and their grid (`grid` 0: the persistent kernels are off on the Gpu, or
 * the kernel refuses the operands, shape null; the device's grid where an option forced it; the variant's measured
 * one; undefined: not measured yet, `key` the variant's key to measure it under, up to `max`).
 */
function settledGrid(x: Tensor, gateUp: Tensor, down: Tensor, oProj?: OProj, next?: NextProj):
  { shape: Record<string, number> | null; grid?: number; key: string; max: number } {
  const gpu = x.gpu;
  const max = persistGrid(gpu);
  const shape = max === 0 ? null : persistMlpShape(x, gateUp, down, oProj, next);
  const key = JSON.stringify(shape);
  if (!shape) return { shape, grid: 0, key, max };
  if (kernelPolicy(gpu).persistGrid !== null) return { shape, grid: max, key, max };
  return { shape, grid: gpu.state.get(GRIDS, () => new Map<string, number>()).get(key), key, max };
}

/**
 * The grid the persistent MLP runs at on these operands: the device's (persistGrid) where an option forced it,
 * else the largest of GRID_CANDIDATES up to it at which this kernel variant's own barrier held, tried smallest
 * first on a zero x and kept per variant: the self-check's kernel holds few registers, and a variant holding more
 * may have fewer workgroups resident (the OPROJ variant, `oProj`, and NEXT, `next`, are ones of their own; next.out
 * is not written). 0 where none held or the kernel does not take the operands.
 */
export async function mlpGrid(x: Tensor, gateUp: Tensor, down: Tensor, oProj?: OProj,
  next?: NextProj): Promise<number> {
  const settled = settledGrid(x, gateUp, down, oProj, next);
  if (settled.grid !== undefined) return settled.grid;
  const gpu = x.gpu;
  let best = 0;
  const zero = Tensor.from(gpu, new Float32Array(x.size), x.shape, 'f32', 'persist.calibrate');
  const attn = oProj && Tensor.from(gpu, new Float32Array(oProj.attn.size), oProj.attn.shape, 'f32',
    'persist.calibrate.attn');
  const out = next && Tensor.empty(gpu, next.out.shape, 'f32', 'persist.calibrate.gq');
  try {
    for (const n of GRID_CANDIDATES.filter((c) => c <= settled.max)) {
      persistentMlp(zero, gateUp, down, { eps: 1, grid: n, spin: persistSpin(gpu),
        oProj: oProj && { attn: attn!, w: oProj.w }, next: next && { w: next.w, out: out! } });
      if (await takeFlag(gpu)) break;
      best = n;
    }
  } finally {
    zero.dispose();
    attn?.dispose();
    out?.dispose();
  }
  gpu.state.get(GRIDS, () => new Map<string, number>()).set(settled.key, best);
  return best;
}

/**
 * The persistent MLP at the grid settled for these operands (mlpGrid measured it ahead, or an option forced it),
 * for a forward that must stay synchronous: true, dispatched; false, nothing dispatched, where the kernels are off,
 * the kernel refuses the operands or no grid was measured yet (the caller takes the per-op path). Whoever runs it
 * reads the flag (flagWord) after the step, as mlpStep does.
 */
export function mlpPersistent(x: Tensor, gateUp: Tensor, down: Tensor, o: PersistMlpOptions): boolean {
  const { shape, grid } = settledGrid(x, gateUp, down, o.oProj, o.next);
  if (!shape || !grid) return false;
  dispatchMlp(x, gateUp, down, { ...o, grid, spin: persistSpin(x.gpu) }, shape);
  return true;
}

const CONTROL = stateKey<GPUBuffer>('persist.control');

/**
 * The persistent kernels' barrier words on `gpu` ([0] arrivals, [1] exits, [2] the run-out flag): zeroed once, the
 * counts set back to 0 by each dispatch (barrier.inc.wgsl), so a captured step binds the same buffer every replay.
 */
function control(gpu: Gpu): GPUBuffer {
  return gpu.state.get(CONTROL, () => gpu.device.createBuffer({ size: 16, label: 'persist.control',
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST }));
}

/**
 * The run-out flag's word (control word 2) on `gpu`: a decode graph copies it into its token's readback, so that
 * the flag comes back with the token, without a sync of its own. Set: a barrier ran out since it was last cleared.
 */
export function flagWord(gpu: Gpu): { buffer: GPUBuffer; offset: number; size: number } {
  return { buffer: control(gpu), offset: 8, size: 4 };
}

/** The barrier words (arrivals, exits, flag) once the commands recorded so far have run: tests check the counts. */
export async function readControl(gpu: Gpu): Promise<Uint32Array> {
  return new Uint32Array(await gpu.read({ buffer: control(gpu), offset: 0, size: 12 }, 'persist.control'));
}

/** Whether a barrier ran out since the last call (the flag is cleared after the commands recorded so far). */
export async function takeFlag(gpu: Gpu): Promise<boolean> {
  const set = (await readControl(gpu))[2] !== 0;
  if (set) gpu.write(control(gpu), 8, new Uint32Array([0]));
  return set;
}
