// Non-finite scan of weights on the GPU: one pass per tensor into a shared result buffer, one readback for all.
import { Kernel, grid } from '../kernel.ts';
import { DTypeError } from '../../errors.ts';
import { Tensor } from '../../tensor/tensor.ts';
import type { DType } from '../../tensor/dtype.ts';

const SCAN = new Kernel('finite/finite.wgsl', 'scan');

/** Exponent masks: a value is NaN or Inf exactly when all its exponent bits are set. */
const MASK: Partial<Record<DType, { half: number; mask: number }>> = {
  f32: { half: 0, mask: 0x7f800000 }, bf16: { half: 1, mask: 0x7f80 }, f16: { half: 1, mask: 0x7c00 },
};

/** Non-finite values of one tensor: how many, and the first one's element index (-1 when there is none). */
export interface NonFinite { count: number; first: number }

/** Count NaN and Inf values of each tensor (f32, bf16 or f16), all tensors in one batch and one readback. */
export async function countNonFinite(tensors: readonly Tensor[]): Promise<NonFinite[]> {
  if (!tensors.length) return [];
  const gpu = tensors[0].gpu;
  const init = new Uint32Array(2 * tensors.length);
  for (let s = 0; s < tensors.length; s++) init[2 * s + 1] = 0xffffffff;
  const masks = tensors.map((t) => {
    const m = MASK[t.dtype];
    if (!m) throw new DTypeError('countNonFinite', `'${t.label}' is ${t.dtype}; f32, bf16 or f16 only`);
    return m;
  });
  const found = Tensor.from(gpu, init, [init.length], 'u32', 'finite.found');
  let res: Uint32Array;
  try {
    tensors.forEach((t, slot) => {
      const m = masks[slot];
      SCAN.dispatch(gpu, {
        bindings: { x: t, found }, uniforms: { n: t.size, half: m.half, mask: m.mask, slot },
        workgroups: grid(gpu, m.half ? Math.ceil(t.size / 2) : t.size, 256), label: `finite ${t.label}`,
      });
    });
    res = new Uint32Array(await gpu.read(found.binding('countNonFinite'), 'countNonFinite'));
  } finally {
    found.dispose();
  }
  return tensors.map((_, s) => ({ count: res[2 * s], first: res[2 * s] ? res[2 * s + 1] : -1 }));
}
