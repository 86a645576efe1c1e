// Deno entry of the f16-activation matmul check: prints the report of matmul-f16.check.ts as one JSON line, or
// { f16: false } with the adapter's features. HRM_F16_MLX_ONLY=1: MLX's fixture only, when Node ran the seeded cases
// (its adapter has shader-f16 where Dawn runs on lavapipe, not on SwiftShader).
import { Gpu } from '../../../src/kernels/gpu.ts';
import { checkMatmulF16 } from '../../../testkit/kernels/matmul-f16.check.ts';

const gpu = await Gpu.create();
const a = gpu.summary;
const adapter = [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ');
const head = { runtime: a.runtime, adapter, f16: gpu.f16 };
// HRM_EXHAUSTIVE=1 (tests/helpers/sweep.ts): every weight dtype at every shape (Deno 2 has Node's process).
const full = process.env.HRM_EXHAUSTIVE === '1';
const mlxOnly = process.env.HRM_F16_MLX_ONLY === '1';
const out = gpu.f16 ? { ...head, report: await checkMatmulF16(gpu, full, undefined, mlxOnly) } : { ...head,
  features: a.features };
console.log(JSON.stringify(out));
gpu.destroy();
