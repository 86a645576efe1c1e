// Every path choice of the kernels read from the one planner folder (src/kernels/plan/, issue 40): the matmul and
// qlinear paths, the matrix-vector shapes (dense and quantized), the tensor cores' schedule, the decode MLP fold,
// attention's path, a decode step's fused kernels and the kernel a cache slot attends with. On this CPU driver, and
// on a GPU-like Gpu (no tensor cores) made of the fields the planner reads, so that the GPU rules run here too.
import { describe, expect, it } from 'vitest';
import { getGpu } from '../../helpers/gpu.ts';
import { DeviceState } from '../../../src/gpu/registry.ts';
import type { Gpu } from '../../../src/gpu/gpu.ts';
import type { KernelOptions } from '../../../src/kernels/plan/options.ts';
import { decodeMlpFolds, matmulPath, preferGemv, qlinearPath, sgmatPlan } from '../../../src/kernels/plan/matmul.ts';
import { denseGemvShape, quantGemvShape } from '../../../src/kernels/plan/gemv.ts';
import { planAttend, planAttention, planStep } from '../../../src/kernels/plan/attention.ts';
import type { FullKV, QuantKV } from '../../../src/kernels/attention/types.ts';

const SGMAT = 'chromium-experimental-subgroup-matrix';
/** A GPU (not a CPU driver) with subgroups and no tensor cores, as the planner reads one. */
function gpuLike(kernels: KernelOptions = {}): Gpu {
  const off = { on: false, why: 'not offered' };
  return {
    cpu: false, subgroups: true, f16: true, maxBinding: 2 ** 30, kernelOptions: kernels, state: new DeviceState(),
    device: { features: new Set(['subgroups', 'shader-f16']), limits: { maxComputeWorkgroupStorageSize: 32768 } },
    summary: { fastFeatures: { [SGMAT]: off, 'shader-f16': { on: true }, subgroups: { on: true } },
      subgroupMatrix: [] },
  } as unknown as Gpu;
}
const full = { kind: 'full' } as FullKV;
const quant = { kind: 'quant', bits: 4 } as QuantKV;

describe('the planner (src/kernels/plan/)', () => {
  it('products: CPU drivers take rows; a GPU gemv for few rows or tiles, else tiled without tensor cores', async () => {
    const cpu = await getGpu();
    expect(matmulPath(cpu, { M: 512, wdtype: 'bf16', round: 'bf16', gemvFaster: false })).toBe('rows');
    expect(qlinearPath(cpu, 1, 1536, 1536, 'bf16')).toBe('rows');
    const gpu = gpuLike();
    expect([preferGemv(32, 65536), preferGemv(64, 1536), preferGemv(128, 1536)]).toEqual([true, true, false]);
    expect(matmulPath(gpu, { M: 1, wdtype: 'bf16', round: 'bf16', gemvFaster: preferGemv(1, 1536) })).toBe('gemv');
    expect(matmulPath(gpu, { M: 512, wdtype: 'bf16', round: 'bf16', gemvFaster: false })).toBe('tiled');
    expect([8, 9].map((M) => qlinearPath(gpu, M, 1536, 1536, 'bf16'))).toEqual(['gemv', 'tiled']);
    expect(sgmatPlan(gpu).kernel).toBe('direct');   // no staged kernel without tensor cores
  });

  it('matrix-vector shapes: gemv_wide for one row that splits, else the swept shapes; qgemv4 by size', () => {
    const gpu = gpuLike();
    const call = { N: 4608, K: 1536, M: 1, dtype: 'bf16', wide: true, norm: true, swiglu: false };
    expect(denseGemvShape(gpu, call)).toEqual({ kernel: 'wide', wg: 32, groups: 4, rows: 16 });
    expect(denseGemvShape(gpu, { ...call, M: 2 })).toEqual({ kernel: 'vec4', wg: 32, rows: 4 });
    const q = { N: 65536, K: 1536, M: 1, bits: 4, wide: true, norm: false, swiglu: false };
    expect(quantGemvShape(gpu, q)).toEqual({ kernel: 'vec4', wg: 32, rows: 4 });
    expect(quantGemvShape(gpu, { ...q, wide: false })).toEqual({ wg: 64, rows: 2 });
  });

  it('the decode MLP folds for one row where the Gpu says fold', () => {
    expect(decodeMlpFolds(gpuLike(), 1)).toBe(false);
    expect(decodeMlpFolds(gpuLike({ decodeMlp: 'fold' }), 1)).toBe(true);
    expect(decodeMlpFolds(gpuLike({ decodeMlp: 'fold' }), 2)).toBe(false);
  });

  it('attention: one, decode, matmul or prefill; a step fused by cache kind; the kernel a slot attends with', () => {
    const gpu = gpuLike();
    const c = { heads: 4, seq: 1, dim: 64, kvLen: 33, kvBf16: false, mask: 'causal' as const, aligned: true };
    expect(planAttention(gpu, c)).toEqual({ path: 'one', merge: 'fold', tensorCores: false });
    expect(planAttention(gpu, { ...c, seq: 3, kvLen: 35 }).path).toBe('decode');
    expect(planAttention(gpu, { ...c, seq: 64, kvLen: 64 }).path).toBe('matmul');
    expect(planAttention({ ...gpu, cpu: true } as Gpu, { ...c, seq: 64, kvLen: 64 }).path).toBe('prefill');
    const step = { seq: 1, mask: { kind: 'causal' as const }, shadowed: false };
    expect(planStep(gpu, { ...step, k: full, v: full })).toMatchObject({ kind: 'full-one', merge: 'fold' });
    expect(planStep(gpu, { ...step, k: quant, v: quant }).kind).toBe('quant-one');
    expect(planStep(gpu, { ...step, k: quant, v: full }).kind).toBe('composed');
    expect(planAttend(quant, quant).kernel).toBe('qsdpa');
    expect(planAttend(full, quant).kernel).toBe('sdpa');
  });
});
