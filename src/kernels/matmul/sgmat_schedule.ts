// How the tensor-core matmul schedules its work: which kernel (matmul_sgmat_staged.wgsl's 128 x 128 tiles staged
// through workgroup memory, or matmul_sgmat.wgsl's 64 x 64 tiles loaded straight from storage, the reference and
// fallback), software pipelining of the direct kernel's operand loads (PIPE) and the number of K slices (split-K).
// All give the same numbers up to the f32 summation order of exact products (the bound matmul_sgmat.check.ts
// allows); only the speed differs, so benchmarks time each schedule on the four model shapes (bench/kernels.ts,
// sgmatSchedules) and the defaults below follow those measurements.
import { InputError } from '../../tensor/errors.ts';
import type { Gpu } from '../../tensor/gpu.ts';

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
 * Each kernel's workgroup tile, the K columns a slice is a multiple of, and the workgroups 'auto' splits K until it
 * reaches: the direct kernel's workgroup is one subgroup (about four per SM of the H200's 132 at 512); the staged
 * one is four subgroups with 36 KiB of workgroup memory, about 1.5 per SM at 192 (the probe's 512-row products ran
 * one wave of 192 and 256 workgroups in the same time).
 */
export const SGMAT_KERNELS: Record<SgmatKernel, SgmatTiling> = {
  staged: { M: 128, N: 128, kStep: 64, target: 192 },
  direct: { M: 64, N: 64, kStep: 16, target: 512 },
};
export interface SgmatTiling { M: number; N: number; kStep: number; target: number }

const SPLITS = [1, 2, 4] as const;
// Prefetch on: gqkv 0.344 -> 0.241 ms, gate_up 0.288 -> 0.283 on the H200 (20261202-040125Z).
let current: SgmatSchedule = { kernel: 'auto', pipe: true, splitK: 'auto' };

/**
 * Sets the schedule the tensor-core matmul takes from its next call on (fields left out keep their value) and
 * returns the previous one, so a benchmark or test can restore it: `const was = setSgmatSchedule({ pipe: true });
 * ...; setSgmatSchedule(was)`.
 */
export function setSgmatSchedule(s: Partial<SgmatSchedule>): SgmatSchedule {
  if (s.kernel !== undefined && !['auto', 'staged', 'direct'].includes(s.kernel)) throw new InputError('setSgmatSchedule', `kernel ${JSON.stringify(s.kernel)} must be 'auto', 'staged' or 'direct'`);
  if (s.pipe !== undefined && typeof s.pipe !== 'boolean') throw new InputError('setSgmatSchedule', `pipe ${JSON.stringify(s.pipe)} must be true or false`);
  if (s.splitK !== undefined && s.splitK !== 'auto' && !SPLITS.includes(s.splitK)) {
    throw new InputError('setSgmatSchedule', `splitK ${JSON.stringify(s.splitK)} must be 1, 2, 4 or 'auto'`);
  }
  const was = current;
  current = { kernel: s.kernel ?? was.kernel, pipe: s.pipe ?? was.pipe, splitK: s.splitK ?? was.splitK };
  return was;
}

/** The schedule the tensor-core matmul takes now. */
export function sgmatSchedule(): SgmatSchedule {
  return current;
}

/** 'auto' keeps at least this many K columns in a slice: each slice's slab costs a C write and read. */
const SPLIT_MIN_COLUMNS = 128;

/**
 * The K slices of one product C [Mp, Np] over Kp columns in `tiling`'s workgroup tiles: S slices of Ks columns (a
 * multiple of its kStep; the last slice may be shorter, and S is lowered so none is empty), S slabs of C fitting
 * one storage binding. From the direct kernel's rows of 20261202-040125Z (prefetch on): o_proj took 0.125 / 0.089
 * / 0.084 ms and down_proj 0.28 / 0.20 / 0.18 in 1 / 2 / 4 slices, while gqkv and gate_up were fastest whole.
 */
export function splitFor(gpu: Gpu, Mp: number, Np: number, Kp: number, tiling: SgmatTiling): { S: number; Ks: number } {
  const steps = Kp / tiling.kStep, tiles = (Mp / tiling.M) * (Np / tiling.N);
  const want = current.splitK;
  let S: number = want === 'auto' ? (SPLITS.find((s) => tiles * s >= tiling.target) ?? 4) : want;
  if (want === 'auto') while (S > 1 && Kp / S < SPLIT_MIN_COLUMNS) S /= 2;
  while (S > 1 && S * Mp * Np * 4 > gpu.device.limits.maxStorageBufferBindingSize) S /= 2;
  const Ks = tiling.kStep * Math.ceil(steps / S);
  return { S: Math.ceil(Kp / Ks), Ks };
}
