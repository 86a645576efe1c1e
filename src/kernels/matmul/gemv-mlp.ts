// A decode layer's MLP in one dispatch (gemv_mlp.wgsl): x += down(silu(gate) * up), gate | up = gate_up(rms(x)),
// for one x row, where matmul takes two (the norm + swiglu product, then the residual one: the reference, and what
// the caller composes where this returns null). The same roundings as those two; only the f32 sums' order differs.
import { Kernel, grid } from '../kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, InputError, ShapeError } from '../../errors.ts';
import { DTYPE_CODE, roundCode, type Round } from '../common/codes.ts';
import { counters } from '../common/counters.ts';
import { shapeOf } from './matmul.ts';

const MLP = new Kernel('matmul/gemv_mlp.wgsl', 'gemv_mlp');
const THREADS = 256;
/** Registers of weight units a lane (MAXW in the WGSL). */
const MAXW = 32;

export interface MlpOptions {
  /** rmsNorm's eps of the norm before gate_up. */
  eps: number;
  /** Output rounding of every op (as matmul's `round`). */
  round?: Round;
  /** Intermediate units a workgroup: 8 or 16 (default 8; 4 also for f32 weights). Benchmarks tune it. */
  units?: number;
  /** Workgroups a first-level group of the partial sums (default about the square root of their count). */
  group?: number;
  /** Load down's units with gate_up's instead of after them (default false). Benchmarks tune it. */
  prefetch?: boolean;
}

/**
 * x [1, K] += down(silu(gate) * up) with gate | up = gateUp(rmsNorm(x)): gateUp [2I, K] (gate rows then up rows),
 * down [K, I], one weight dtype (f32, bf16 or f16), in one dispatch; x is updated in place and returned. Null where
 * the kernel cannot take the operands (not one row, rows not in whole 16-byte units, I not a multiple of the
 * units a workgroup, an operand not 16-byte aligned, too many units a lane): the caller then runs the two
 * products.
 */
export function mlpFold(x: Tensor, gateUp: Tensor, down: Tensor, o: MlpOptions): Tensor | null {
  const K = x.shape[x.rank - 1];
  const I = gateUp.shape[0] / 2;
  check(x, gateUp, down, o);
  const wdt = DTYPE_CODE[gateUp.dtype as keyof typeof DTYPE_CODE];
  const epv = wdt === 0 ? 4 : 8;   // weights a 16-byte unit
  const U = o.units ?? 8;
  if (![4, 8, 16].includes(U) || U % epv) {
    throw new InputError('mlpFold', `units ${U} must be 8 or 16 (4 also for f32 weights)`);
  }
  const rows = rowShape(K / epv, U, K);
  const aligned = [x, gateUp, down].every((t) => t.offset % 16 === 0);
  const ub = U / epv;   // 16-byte units of a down row a block covers
  if (x.size !== K || K % epv || I % U || !aligned || !rows || rows.DR * ub > MAXW) return null;
  const overrides = { WDT: wdt, ROUND: roundCode('mlpFold', o.round), ...rows, U, UB: ub, PRE: o.prefetch ? 1 : 0 };
  const fold = { op: 'mlpFold', label: 'matmul.gemv_mlp', K, I, U, group: o.group, eps: o.eps };
  dispatchFold(MLP, x, { wu: gateUp, wd: down }, fold, overrides);
  return x;
}

/** The row-group overrides of a one-dispatch MLP kernel (its WGSL says what each is). */
export interface RowShape { THREADS: number; LANES: number; RPG: number; UPL: number; DR: number }

/**
 * The gate_up side of a block of U units over rows of `upr` 16-byte units, and down's rows a thread (K outputs):
 * lanes a row (up to 64, no more than its units, few enough row groups for the 2U rows), rows a row group, units a
 * lane; null past the registers.
 */
export function rowShape(upr: number, U: number, K: number): RowShape | null {
  const lanes = Math.max(16, THREADS / (2 * U), Math.min(64, 2 ** Math.floor(Math.log2(Math.max(1, upr)))));
  const rpg = (2 * U) / (THREADS / lanes);
  const upl = Math.ceil(upr / lanes);
  const dr = Math.ceil(K / THREADS);
  const fits = Number.isInteger(rpg) && upl * rpg <= MAXW && dr <= MAXW;
  return fits ? { THREADS, LANES: lanes, RPG: rpg, UPL: upl, DR: dr } : null;
}

/** A one-dispatch MLP call: the op and label errors and timings name, the sizes, the group size, the norm's eps. */
export interface FoldCall { op: string; label: string; K: number; I: number; U: number; group?: number; eps: number }

/**
 * One dispatch of a one-dispatch MLP kernel (gemv_mlp, qgemv_mlp): I / U blocks, their partial sums' scratch, the
 * device's counters, groups of `group` blocks (default about the square root of the block count).
 */
export function dispatchFold(
  kernel: Kernel, x: Tensor, weights: Record<string, Tensor>, o: FoldCall, overrides: Record<string, number>,
): void {
  const gpu = x.gpu;
  const blocks = o.I / o.U;
  const group = o.group ?? Math.ceil(Math.sqrt(blocks));
  if (!(Number.isInteger(group) && group >= 1)) {
    throw new InputError(o.op, `group ${group} must be a whole number >= 1`);
  }
  const groups = Math.ceil(blocks / group);
  const part = Tensor.empty(gpu, [blocks + groups, o.K], 'f32', 'mlp.part');
  const [gx, gy] = grid(gpu, blocks * THREADS, THREADS);
  kernel.dispatch(gpu, {
    bindings: { x4: x, ...weights, part, done: counters(gpu, groups + 1) },
    uniforms: { K: o.K, I: o.I, blocks, group, eps: o.eps },
    overrides, workgroups: [gx, gy], label: o.label,
  });
  part.dispose();
}

/** Operands that do not make an MLP are errors naming them (an unfit but consistent one is only a null). */
function check(x: Tensor, gateUp: Tensor, down: Tensor, o: MlpOptions): void {
  const K = x.shape[x.rank - 1];
  if (x.dtype !== 'f32') throw new DTypeError('mlpFold', `x ${shapeOf(x)} must be f32`);
  if (!(gateUp.dtype in DTYPE_CODE) || down.dtype !== gateUp.dtype) {
    const both = `gate_up ${shapeOf(gateUp)} and down ${shapeOf(down)}`;
    throw new DTypeError('mlpFold', `${both} must share one of f32, bf16, f16`);
  }
  const [N2, Kg] = gateUp.shape;
  if (gateUp.rank !== 2 || down.rank !== 2 || Kg !== K || N2 % 2 || down.shape[0] !== K || down.shape[1] !== N2 / 2) {
    const all = `x ${shapeOf(x)}, gate_up ${shapeOf(gateUp)}, down ${shapeOf(down)}`;
    throw new ShapeError('mlpFold', `${all}: want x [.., K], gate_up [2I, K], down [K, I]`);
  }
  if (gateUp.gpu !== x.gpu || down.gpu !== x.gpu) {
    throw new ShapeError('mlpFold', `the weights of x ${shapeOf(x)} live on another device`);
  }
  if (!(o.eps >= 0 && Number.isFinite(o.eps))) {
    throw new InputError('mlpFold', `eps ${o.eps} must be a finite number >= 0`);
  }
}
