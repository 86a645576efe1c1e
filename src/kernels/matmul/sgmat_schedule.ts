// How the tensor-core matmul (matmul_sgmat.wgsl) schedules its work: software pipelining of the operand loads
// (PIPE) and the number of K slices (split-K). Both give the same numbers up to the f32 summation order of exact
// products (the bound matmul_sgmat.check.ts allows); only the speed differs, so benchmarks time each schedule on the
// four model shapes (bench/kernels.ts, sgmatSchedules) and the defaults below follow those measurements.
import { InputError } from '../../tensor/errors.ts';
import type { Gpu } from '../../tensor/gpu.ts';

export interface SgmatSchedule {
  /** Load the next k step's operands before this step's products (PIPE); false: load then multiply (reference). */
  pipe: boolean;
  /** K slices: 1 (none), 2, 4, or 'auto' (splitFor's rule by the workgroup count). */
  splitK: 1 | 2 | 4 | 'auto';
}

const SPLITS = [1, 2, 4] as const;
// Prefetch on: gqkv 0.344 -> 0.241 ms, gate_up 0.288 -> 0.283 on the H200 (20261202-040125Z).
let current: SgmatSchedule = { pipe: true, splitK: 'auto' };

/**
 * Sets the schedule the tensor-core matmul takes from its next call on (fields left out keep their value) and
 * returns the previous one, so a benchmark or test can restore it: `const was = setSgmatSchedule({ pipe: true });
 * ...; setSgmatSchedule(was)`.
 */
export function setSgmatSchedule(s: Partial<SgmatSchedule>): SgmatSchedule {
  if (s.pipe !== undefined && typeof s.pipe !== 'boolean') throw new InputError('setSgmatSchedule', `pipe ${JSON.stringify(s.pipe)} must be true or false`);
  if (s.splitK !== undefined && s.splitK !== 'auto' && !SPLITS.includes(s.splitK)) {
    throw new InputError('setSgmatSchedule', `splitK ${JSON.stringify(s.splitK)} must be 1, 2, 4 or 'auto'`);
  }
  const was = current;
  current = { pipe: s.pipe ?? was.pipe, splitK: s.splitK ?? was.splitK };
  return was;
}

/** The schedule the tensor-core matmul takes now. */
export function sgmatSchedule(): SgmatSchedule {
  return current;
}

/**
 * 'auto' splits until the workgroups reach this many (about four per SM of the H200's 132), where a workgroup is one
 * 32-lane subgroup and N = 1536 at 512 rows gives only 192 of them: from the benchmark's rows (20261202-040125Z,
 * prefetch on), o_proj took 0.125 / 0.089 / 0.084 ms and down_proj 0.28 / 0.20 / 0.18 in 1 / 2 / 4 slices, while
 * gqkv and gate_up (768 and 1024 tiles) were fastest whole.
 */
const SPLIT_TARGET_WORKGROUPS = 512;
/** 'auto' keeps at least this many k steps of 16 in a slice: each slice's slab costs a C write and read. */
const SPLIT_MIN_STEPS = 8;

/**
 * The K slices of one product C [Mp, Np] over Kp columns in workgroup tiles of `tile`: S slices of Ks columns (a
 * multiple of 16; the last slice may be shorter, and S is lowered so none is empty), S slabs of C fitting one
 * storage binding.
 */
export function splitFor(gpu: Gpu, Mp: number, Np: number, Kp: number, tile: { M: number; N: number }): { S: number; Ks: number } {
  const steps = Kp / 16, tiles = (Mp / tile.M) * (Np / tile.N);
  const want = current.splitK;
  let S: number = want === 'auto' ? (SPLITS.find((s) => tiles * s >= SPLIT_TARGET_WORKGROUPS) ?? 4) : want;
  if (want === 'auto') while (S > 1 && steps / S < SPLIT_MIN_STEPS) S /= 2;
  while (S > 1 && S * Mp * Np * 4 > gpu.device.limits.maxStorageBufferBindingSize) S /= 2;
  const Ks = 16 * Math.ceil(steps / S);
  return { S: Math.ceil(Kp / Ks), Ks };
}
