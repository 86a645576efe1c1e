// The package's main entry alone prepares a device fully (issue 40): no module registers a device check when it is
// imported; Gpu.create prepares every device in one place (src/kernels/plan/prepare.ts). So `hrm-webgpu` gives the
// same summary.fastPaths and the same kernel-option errors at Gpu.create as `hrm-webgpu/advanced`. This file imports
// src/index.ts only (vitest gives each file a module graph of its own); the advanced entry is loaded afterwards, to
// show that importing it changes nothing.
import { describe, expect, it } from 'vitest';
import { Gpu, InputError } from '../../src/index.ts';

const PATHS = [
  'decode MLP in one dispatch (dense, 4- and 8-bit weights)', 'decode attention merged in its split (one dispatch)',
  'decode attention over TurboQuant caches read from the codes',
  'matrix-vector reductions on subgroups', 'persistent decode step (grid barriers inside one dispatch)',
  'prefill attention on tensor cores (bf16)',
  'prefill matmuls on tensor cores (bf16)', 'staged tensor-core kernel (128x128 tiles)',
];

describe('the main entry alone', () => {
  it('gives every fast path in gpu.summary.fastPaths, and the same once the advanced entry is loaded', async () => {
    const gpu = await Gpu.create();
    const paths = gpu.summary.fastPaths;
    gpu.destroy();
    expect(Object.keys(paths).sort()).toEqual(PATHS);
    await import('../../src/advanced.ts');
    const again = await Gpu.create();
    expect(again.summary.fastPaths).toEqual(paths);
    again.destroy();
  }, 60_000);

  it('fails Gpu.create on kernel options that do not check out, naming the field', async () => {
    await expect(Gpu.create({ kernels: { decodeMlp: 'both' as never } }))
      .rejects.toThrow(/^\[DeviceOptions\.kernels\.decodeMlp\] 'both' must be one of fold, separate/);
    await expect(Gpu.create({ kernels: { merge: 'fold' } as never })).rejects.toThrow(InputError);
    await import('../../src/advanced.ts');
    await expect(Gpu.create({ kernels: { decodeMlp: 'both' as never } }))
      .rejects.toThrow(/^\[DeviceOptions\.kernels\.decodeMlp\] 'both' must be one of fold, separate/);
  }, 60_000);
});
