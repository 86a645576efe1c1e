// Tensor.attach: a kernel family's cached copy of a tensor (the tensor cores' f16 weights) goes when the tensor goes.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { ShapeError } from '../../src/errors.ts';

describe('Tensor.attach', async () => {
  const gpu = await getGpu();
  it('disposes what is attached with the tensor; a view cannot take one', async () => {
    const w = Tensor.from(gpu, new Float32Array(64), [8, 8], 'f32', 'w');
    const copy = Tensor.from(gpu, new Float32Array(64), [8, 8], 'f32', 'copy');
    w.attach(copy);
    w.dispose();
    expect(() => copy.binding('op')).toThrow(/'copy' was disposed/);
    const owner = Tensor.from(gpu, new Float32Array(64 * 64), [64, 64], 'f32', 'owner');
    expect(() => owner.rows(0, 8).attach(copy)).toThrow(ShapeError);
    owner.dispose();
  });
});
