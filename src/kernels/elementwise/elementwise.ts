// Thin typed wrappers over elementwise.wgsl and reduce.wgsl.
import { Kernel, grid } from '../../tensor/kernel.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { DTypeError, ShapeError } from '../../tensor/errors.ts';

const ADD = new Kernel('elementwise/elementwise.wgsl', 'add');
const SUM_ROWS = new Kernel('elementwise/reduce.wgsl', 'sum_rows');

function requireF32(op: string, ...ts: Tensor[]): void {
  for (const t of ts) if (t.dtype !== 'f32') throw new DTypeError(op, `'${t.label}' is ${t.dtype}; expected f32`);
}

/** out = a + b (same shape, f32). */
export function add(a: Tensor, b: Tensor): Tensor {
  requireF32('add', a, b);
  if (a.size !== b.size) throw new ShapeError('add', `shapes differ: [${a.shape}] vs [${b.shape}]`);
  const out = Tensor.empty(a.gpu, a.shape, 'f32', 'add.out');
  ADD.dispatch(a.gpu, { bindings: { a, b, out }, uniforms: { n: a.size, cols: 0 }, workgroups: grid(a.gpu, a.size, 64) });
  return out;
}

/** out[r] = sum_j a[r, j] over the last axis (f32 accumulation). */
export function sumRows(a: Tensor): Tensor {
  requireF32('sumRows', a);
  const cols = a.shape[a.rank - 1];
  const rows = a.size / cols;
  const out = Tensor.empty(a.gpu, a.shape.slice(0, -1), 'f32', 'sumRows.out');
  SUM_ROWS.dispatch(a.gpu, { bindings: { a, out }, uniforms: { rows, cols }, workgroups: rows });
  return out;
}
