import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { randn } from '../../testkit/helpers/seeded.ts';
import { expectClose } from '../helpers/close.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { add, logSumExpRows } from '../../src/kernels/ops/ops.ts';
import { addRef, logSumExpRowsRef } from '../../src/kernels/ops/ops.ref.ts';
import { Kernel } from '../../src/kernels/kernel.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { disposeWeights } from '../../src/hrm/weights.ts';
import { fixtureDir, logitsOf } from '../../testkit/helpers/model.ts';
import { BindingSizeError, ShapeError } from '../../src/errors.ts';
import { bf16ToF32, f16ToF32, f32ToBf16, f32ToF16 } from '../../src/tensor/dtype.ts';

// Every uniform of ops/elementwise.wgsl, for dispatching its `add` entry by hand.
const U = { n: 2, cols: 1, lda: 1, vocab: 0, row0: 0, rows: 0, scale: 1 };

describe('device', () => {
  it('opens an adapter and reports it', async () => {
    const gpu = await getGpu();
    expect(gpu.summary.runtime).toBe('node');
    expect(gpu.maxBinding).toBeGreaterThanOrEqual(128 * 1024 * 1024);
    expect(gpu.summary.limits.maxStorageBufferBindingSize).toBe(gpu.maxBinding);
  });

  it('runs without Dawn\'s robustness under Node, and gives the model\'s bits as with it: no kernel reads or writes '
    + 'out of bounds', async () => {
    // Robustness clamps every access into its binding; a kernel that relied on that would differ here.
    const [plain, robust] = [await getGpu(), await Gpu.create({ robustness: true })];
    expect([plain.summary.robust, robust.summary.robust]).toEqual([false, true]);
    try {
      const ids = [5, 9, 100, 7, 31, 2, 64];
      // Full and quantized caches, one load of the model on each device.
      const logits = async (gpu: Gpu) => {
        const lm = await loadModel(dirFiles(fixtureDir('hrm-tiny-b')), { gpu, dtype: 'bf16' });
        try { return [await logitsOf(lm, ids, 'prefix'),
          await logitsOf(lm, ids, 'prefix', { k: 4, v: 8 })]; } finally { disposeWeights(lm.model.weights); }
      };
      expect(await logits(plain)).toEqual(await logits(robust));
    } finally {
      robust.destroy();
    }
  });

  it('adds odd-sized vectors like the CPU', async () => {
    const gpu = await getGpu();
    for (const n of [1, 31, 33, 4099]) {
      const a = randn(n, n), b = randn(n + 7, n);
      const out = add(Tensor.from(gpu, a, [n], 'f32', 'a'), Tensor.from(gpu, b, [n], 'f32', 'b'));
      expectClose(await out.read(), addRef(a, b).map(Math.fround), 0, 0, `add n=${n}`);
    }
  });

  it('reduces rows in f32 within summation-order error', async () => {
    const gpu = await getGpu();
    const rows = 5, cols = 1000;
    const a = randn(3, rows * cols);
    const out = logSumExpRows(Tensor.from(gpu, a, [rows, cols], 'f32', 'a'));
    // f32 log-sum-exp of 1000 values in [-1, 1) (result ~7): a few ulps of 7.
    expectClose(await out.read(), logSumExpRowsRef(a, cols), 5e-6, 0, 'logSumExpRows');
  });

  it('reads back every dtype', async () => {
    const gpu = await getGpu();
    const v = [1.5, -2.25, 3.0078125, 65504, -0.0001];
    expect([...await Tensor.from(gpu, v, [5], 'f32', 'f').read()]).toEqual(v.map(Math.fround));
    expect([...await Tensor.from(gpu, v, [5], 'bf16', 'b').read()]).toEqual(v.map((x) => bf16ToF32(f32ToBf16(x))));
    expect([...await Tensor.from(gpu, v, [5], 'f16', 'h').read()]).toEqual(v.map((x) => f16ToF32(f32ToF16(x))));
    expect([...await Tensor.from(gpu, [1, -7, 2 ** 31 - 1], [3], 'i32', 'i').read()]).toEqual([1, -7, 2 ** 31 - 1]);
    expect([...await Tensor.from(gpu, [0, 7, 2 ** 32 - 1], [3], 'u32', 'u').read()]).toEqual([0, 7, 2 ** 32 - 1]);
  });

  it('names a missing binding, an unknown uniform and an oversized tensor', async () => {
    const gpu = await getGpu();
    const k = new Kernel('ops/elementwise.wgsl', 'add');
    const a = Tensor.from(gpu, [1, 2], [2], 'f32', 'a');
    expect(() => k.dispatch(gpu,
      { bindings: { a, out: a }, uniforms: U, workgroups: 1 })).toThrow(/missing binding 'b'/);
    expect(() => k.dispatch(gpu,
      { bindings: { a, b: a, out: a }, uniforms: { ...U, eps: 1 },
      workgroups: 1 })).toThrow(/unknown uniform\(s\) eps/);
    expect(() => k.dispatch(gpu,
      { bindings: { a, b: a, out: a, c: a }, uniforms: U,
      workgroups: 1 })).toThrow(/unknown binding\(s\) c \(kernel binds: a, b, out\)/);
    expect(() => k.dispatch(gpu,
      { bindings: { a, b: a, out: a }, uniforms: U, overrides: { WG: 64, TILE: 2 },
      workgroups: 1 })).toThrow(/unknown override 'TILE'/);
    expect(() => k.dispatch(gpu,
      { bindings: { a, b: a, out: a }, uniforms: { ...U, n: -1 }, workgroups: 1 })).toThrow(ShapeError);
    const fake = { buffer: a.buffer, offset: 0, size: gpu.maxBinding + 4 };
    expect(() => k.dispatch(gpu,
      { bindings: { a: fake, b: a, out: a }, uniforms: U, workgroups: 1 })).toThrow(BindingSizeError);
  });

  it('makes one pipeline per set of overrides, whatever order they are listed in', async () => {
    const gpu = await getGpu();
    const k = new Kernel('ops/elementwise.wgsl', 'add');
    const a = Tensor.from(gpu, [1, 2], [2], 'f32', 'a');
    const b = Tensor.from(gpu, [10, 20], [2], 'f32', 'b');
    const pipelines: GPUComputePipeline[] = [];
    const record = gpu.dispatch.bind(gpu);
    gpu.dispatch = (d) => { pipelines.push(d.pipeline); record(d); };
    const outs: Tensor[] = [];
    try {
      for (const overrides of [{ WG: 64, ROUND: 0 }, { ROUND: 0, WG: 64 }, { WG: 64, ROUND: 0 }, { WG: 32, ROUND: 0 },
        { ROUND: 0, WG: 32 }]) {
        const out = Tensor.empty(gpu, [2], 'f32', 'out');
        k.dispatch(gpu, { bindings: { a, b, out }, uniforms: U, overrides, workgroups: 1 });
        outs.push(out);
      }
    } finally {
      gpu.dispatch = record;
    }
    expect(pipelines.slice(1, 3).every((p) => p === pipelines[0])).toBe(true);
    expect(pipelines[3]).not.toBe(pipelines[0]);
    expect(pipelines[4]).toBe(pipelines[3]);
    for (const out of outs) expect([...await out.read()]).toEqual([11, 22]);
  });

  it('turns a WebGPU validation error into a typed error at flush', async () => {
    const gpu = await getGpu();
    const k = new Kernel('ops/elementwise.wgsl', 'add');
    const a = Tensor.from(gpu, [1, 2], [2], 'f32', 'a');
    // Binding the same buffer as read-only and writable in one dispatch is invalid in WebGPU.
    k.dispatch(gpu, { bindings: { a, b: a, out: a }, uniforms: U, workgroups: 1 });
    await expect(gpu.flush('aliasing')).rejects.toThrow(/\[aliasing\] WebGPU validation failed/);
    // The device stays usable afterwards.
    const out = add(a, Tensor.from(gpu, [10, 20], [2], 'f32', 'b'));
    expect([...await out.read()]).toEqual([11, 22]);
  });
});
