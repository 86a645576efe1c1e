// Prefill attention's tensor-core path (attention/sdpa_mm.ts sdpaMmF16: sdpa_mm_f16.wgsl's passes around two
// batched f16 products) on any device with shader-f16. The products come from a plain kernel written here with the
// tensor cores' contract (f32 sums of exact f16 products), so the conversions, the padding, the f16 weights' scale,
// masks, gates and both f32 fallbacks are checked in CI; the tensor cores themselves run the same cases on the H200
// (sdpa_sgmat.check.ts through bench --check-sgmat).
import { describe, expect, it } from 'vitest';
import { getGpu } from '../helpers/gpu.ts';
import { checkSdpaF16 } from './sdpa_sgmat.check.ts';
import { attentionTensorCoresUnavailable, setAttentionTensorCores, type F16Product } from '../../src/kernels/attention/sdpa_mm.ts';
import { batchedSgmatUnavailable } from '../../src/kernels/matmul/matmul_sgmat.ts';
import type { Gpu } from '../../src/tensor/gpu.ts';

const PRODUCT = `enable f16;
struct P { mp: u32, np: u32, kp: u32, ks: u32, nsl: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> a: array<f16>;
@group(0) @binding(2) var<storage, read> b: array<f16>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3u) {
  if (g.x >= p.np) { return; }
  let batch = g.z / p.nsl;
  let k0 = (g.z % p.nsl) * p.ks;
  var acc = 0.0;
  for (var k = k0; k < min(p.kp, k0 + p.ks); k++) { acc += f32(a[(batch * p.mp + g.y) * p.kp + k]) * f32(b[(batch * p.np + g.x) * p.kp + k]); }
  c[(g.z * p.mp + g.y) * p.np + g.x] = acc;
}`;

/** The products as plain f32 sums of f16 products in the K slices asked for, recorded into the open batch like any kernel. */
function plainProduct(gpu: Gpu): F16Product {
  const pipeline = gpu.device.createComputePipeline({ layout: 'auto', compute: { module: gpu.device.createShaderModule({ code: PRODUCT }), entryPoint: 'main' } });
  return (a, b, c, u, label) => {
    const params = gpu.device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    gpu.device.queue.writeBuffer(params, 0, new Uint32Array([u.Mp, u.Np, u.Kp, 64 * Math.ceil(u.Kp / 64 / u.slices), u.slices, 0, 0, 0]));
    const bindGroup = gpu.device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: [{ binding: 0, resource: { buffer: params } }, ...[a, b, c].map((t, i) => ({ binding: i + 1, resource: t.binding(label) }))],
    });
    gpu.dispatch({ pipeline, bindGroup, key: label, workgroups: [Math.ceil(u.Np / 64), u.Mp, u.batch * u.slices], label });
  };
}

describe('prefill attention on f16 products (the tensor-core path, products emulated)', async () => {
  const gpu = await getGpu();
  it('says why attention stays off the tensor cores, and the switch gives back its previous setting', () => {
    const why = attentionTensorCoresUnavailable(gpu);
    if (gpu.cpu) expect(why).toBe('a CPU driver');
    else if (batchedSgmatUnavailable(gpu) !== null) expect(why).toBe(batchedSgmatUnavailable(gpu));
    expect(setAttentionTensorCores(false)).toBe(true);
    expect(setAttentionTensorCores(true)).toBe(false);
  });

  it('matches the f32 path within one bf16 ulp on odd shapes, masks and gates; out-of-range values take the f32 fallbacks', async (ctx) => {
    if (!gpu.f16) {
      console.log('sdpa_mm_f16: skipped, no shader-f16 on this adapter');
      ctx.skip();
    }
    const r = await checkSdpaF16(gpu, plainProduct(gpu));
    expect(r.cases.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`)).toEqual([]);
    expect(r.cases.length).toBeGreaterThanOrEqual(6);
  });
});
