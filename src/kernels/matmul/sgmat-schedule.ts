// How the tensor-core matmul schedules its work: which kernel (matmul_sgmat_staged.wgsl's 128 x 128 tiles staged
// through workgroup memory, or matmul_sgmat.wgsl's 64 x 64 tiles loaded straight from storage, the reference and
// fallback), software pipelining of the direct kernel's operand loads (PIPE) and the number of K slices (split-K).
// All give the same numbers up to the f32 summation order of exact products (the bound matmul-sgmat.check.ts
// allows); only the speed differs, so benchmarks time each schedule on the four model shapes (bench/kernels.ts,
// sgmatSchedules) and the defaults below follow those measurements.
import { InputError, ShapeError } from '../../errors.ts';
import type { Gpu } from '../../gpu/gpu.ts';

/** 'staged' (matmul_sgmat_staged.wgsl), 'direct' (matmul_sgmat.wgsl), or 'auto': staged where it can run. */
export type SgmatKernel = 'staged' | 'direct';

export interface SgmatSchedule {
  kernel: SgmatKernel | 'auto';
  /** Direct kernel: load the next k step's operands before this step's products (PIPE); false: load then multiply. */
  pipe: boolean;
  /** K slices: 1 (none), 2, 4, or 'auto' (splitFor's rule by the workgroup count). */
  splitK: 1 | 2 | 4 | 'auto';
}

/**
 * Each kernel's workgroup tile, the K columns a slice is a multiple of, the workgroups 'auto' splits K until it
 * reaches and the most slices it takes. The direct kernel's workgroup is one subgroup: about four per SM of the
 * H200's 132 at 512 (the narrow products, o_proj and down, fastest in 4 K slices; gqkv and gate_up whole). The
 * staged one is four subgroups with 36 KiB of workgroup memory: two slices below 256 tiles, none from there. The
 * timings: bench/results/README.md, "What the code's choices rest on".
 */
export const SGMAT_KERNELS: Record<SgmatKernel, SgmatTiling> = {
  staged: { M: 128, N: 128, kStep: 64, target: 256, maxSplit: 2 },
  direct: { M: 64, N: 64, kStep: 16, target: 512, maxSplit: 4 },
};
export interface SgmatTiling { M: number; N: number; kStep: number; target: number; maxSplit: 2 | 4 }

const SPLITS = [1, 2, 4] as const;
/** A schedule as one call runs it: the kernel decided (kernels/plan/matmul.ts). */
export interface SgmatPlan { kernel: SgmatKernel; pipe: boolean; splitK: SgmatSchedule['splitK'] }

/**
 * The schedule a Gpu takes unless its options (DeviceOptions.kernels.sgmat, kernels/plan/options.ts) or a call
 * (MatmulOptions.sgmat) say otherwise. Prefetch on: it was faster at every layer shape on the H200.
 */
export const DEFAULT_SCHEDULE: Readonly<SgmatSchedule> = Object.freeze({ kernel: 'auto', pipe: true, splitK: 'auto' });

/** `base` with the fields `s` gives, each checked (`where` names the option in errors). */
export function withSchedule(where: string, base: SgmatSchedule, s: Partial<SgmatSchedule>): SgmatSchedule {
  if (s.kernel !== undefined && !['auto', 'staged', 'direct'].includes(s.kernel)) {
    throw new InputError(where, `kernel ${JSON.stringify(s.kernel)} must be 'auto', 'staged' or 'direct'`);
  }
  if (s.pipe !== undefined && typeof s.pipe !== 'boolean') {
    throw new InputError(where, `pipe ${JSON.stringify(s.pipe)} must be true or false`);
  }
  if (s.splitK !== undefined && s.splitK !== 'auto' && !SPLITS.includes(s.splitK)) {
    throw new InputError(where, `splitK ${JSON.stringify(s.splitK)} must be 1, 2, 4 or 'auto'`);
  }
  return { kernel: s.kernel ?? base.kernel, pipe: s.pipe ?? base.pipe, splitK: s.splitK ?? base.splitK };
}

/** 'auto' keeps at least this many K columns in a slice: each slice's slab costs a C write and read. */
const SPLIT_MIN_COLUMNS = 128;

/**
 * The K slices of one product C [Mp, Np] over Kp columns in `tiling`'s workgroup tiles: S slices of Ks columns (a
 * multiple of its kStep; the last slice may be shorter, and S is lowered so none is empty), S slabs of C fitting
 * one storage binding. `want`: the schedule's splitK.
 */
export function splitFor(gpu: Gpu, Mp: number, Np: number, Kp: number, tiling: SgmatTiling,
  want: SgmatSchedule['splitK'] = 'auto'): { S: number; Ks: number } {
  const steps = Kp / tiling.kStep, tiles = (Mp / tiling.M) * (Np / tiling.N);
  let S: number = want === 'auto' ? (SPLITS.find((s) => s === tiling.maxSplit || tiles * s >= tiling.target) ??
    tiling.maxSplit) : want;
  if (want === 'auto') while (S > 1 && Kp / S < SPLIT_MIN_COLUMNS) S /= 2;
  while (S > 1 && S * Mp * Np * 4 > gpu.maxBinding) S /= 2;
  const Ks = tiling.kStep * Math.ceil(steps / S);
  return { S: Math.ceil(Kp / Ks), Ks };
}

/**
 * Consecutive row spans [start, count] of `rows` rows, each holding at most `bytesPerRow`-byte rows within one
 * binding once padded to `tile` rows (the tensor-core path's f16 copy of a weight, Kp halves a row; its product,
 * Mp f32 a column). All but the last hold a multiple of `tile` rows, so a view of a span starts at a row the
 * tile divides. One span where everything fits.
 */
export function rowSpans(maxBinding: number, rows: number, bytesPerRow: number, tile: number,
  what: string): Array<[number, number]> {
  const per = Math.floor(maxBinding / bytesPerRow / tile) * tile;
  if (per < 1) throw new ShapeError('matmul',
    `path 'sgmat': ${tile} rows of ${what} (${bytesPerRow} bytes a row) exceed the binding limit of ` +
    `${maxBinding} bytes`);
  const spans: Array<[number, number]> = [];
  for (let r0 = 0; r0 < rows; r0 += per) spans.push([r0, Math.min(per, rows - r0)]);
  return spans;
}
