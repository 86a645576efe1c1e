// The package's main entry alone prepares a device fully (issue 40): no module registers a device check when it is
// imported; Gpu.create prepares every device in one place (src/kernels/plan/prepare.ts). So `hrm-webgpu` gives the
// same summary.fastPaths and the same kernel-option errors at Gpu.create as `hrm-webgpu/advanced`. This file imports
// src/index.ts only (vitest gives each file a module graph of its own); the advanced entry is loaded afterwards, to
// compare with.
import { describe, expect, it } from 'vitest';
import { Gpu, InputError } from '../../src/index.ts';

const PATHS = [
  'decode MLP in one dispatch (dense, 4- and 8-bit weights)', 'decode attention merged in its split (one dispatch)',
  'matrix-vector reductions on subgroups', 'prefill attention on tensor cores (bf16)',
  'prefill matmuls on tensor cores (bf16)', 'staged tensor-core kernel (128x128 tiles)',
];

describe('the main entry alone', () => {
  it('gives every fast path in gpu.summary.fastPaths, as the advanced entry computes them', async () => {
    const gpu = await Gpu.create();
    try {
      expect(Object.keys(gpu.summary.fastPaths).sort()).toEqual(PATHS);
      const advanced = await import('../../src/advanced.ts');
      expect(gpu.summary.fastPaths).toEqual(advanced.fastPaths(gpu));
    } finally {
      gpu.destroy();
    }
  }, 60_000);

  it('fails Gpu.create on kernel options that do not check out, naming the field', async () => {
    await expect(Gpu.create({ kernels: { decodeMlp: 'both' as never } }))
      .rejects.toThrow(/^\[DeviceOptions\.kernels\.decodeMlp\] 'both' must be one of fold, separate/);
    await expect(Gpu.create({ kernels: { merge: 'fold' } as never })).rejects.toThrow(InputError);
  }, 60_000);
});
