// The persistent decode kernels (src/kernels/persist/, issue 39) in one runtime, for persist.test.ts: a Gpu whose
// decodeStep is 'persistent' at a grid of 2 (what lavapipe's two threads hold), its self-check's verdict; the
// per-op path on seeded f32 operands (matmul's path 'gemv': the norm + SwiGLU product, then the residual product, as
// tests/kernels/persist/mlp.test.ts's reference); where the grid passed, the persistent MLP that replaces it on the
// same operands and the barrier's control words after it, then a forced run-out (a barrier waiting for a workgroup
// that never arrives); then the NEXT variant (o_proj, the MLP, the next layer's norm + gqkv in one dispatch) and its
// per-op products (tests/kernels/persist/next.test.ts's reference).
// Shared by the Node test, the Deno entry (deno-persist.ts) and the Chromium page (persist.html), so every runtime
// runs exactly the same code. Bits come back as numbers, so that a JSON line carries them.
import { Gpu } from '../../src/kernels/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { matmul } from '../../src/kernels/matmul/matmul.ts';
import { persistentMlp, persistMlpShape, readControl, takeFlag } from '../../src/kernels/persist/mlp.ts';
import { PERSIST_STEP, persistGrid, persistSpin } from '../../src/kernels/plan/persist.ts';
import { randn } from '../../testkit/helpers/seeded.ts';

export const [K, I, EPS, GRID] = [512, 1024, 1e-6, 2];
/** The NEXT variant's attention width and gqkv rows (the decode tests' shape). */
export const [HD, N] = [512, 1536];
/** Spins only a workgroup that is not running runs out, even on a loaded CPU driver (tests/helpers/persist.ts). */
const SPIN = 2 ** 26;
/** The forced run-out's spins: every barrier waits for one workgroup more than the grid has, so all run out. */
const RUNOUT_SPIN = 2 ** 14;

export interface PersistResult {
  runtime: string; cpu: boolean;
  /** The adapter's vendor, architecture, device and description, those it gives. */
  adapter: string;
  /** gpu.summary.fastPaths[PERSIST_STEP] and persistGrid(gpu). */
  verdict: { on: boolean; why?: string }; grid: number;
  /** x's bits after the per-op path, and how many of them it changed. */
  perOp: number[]; changed: number;
  /** Where the grid passed: x's bits after the persistent MLP, the control words after it. */
  mlp: { persistent: number[]; control: number[] } | null;
  /** Where the grid passed: the control words after a forced run-out, and whether x kept its bits. */
  runOut: { control: number[]; untouched: boolean; cleared: boolean } | null;
  /** Where the grid passed: the NEXT variant's x and gqkv bits, per op and persistent, its control words after it. */
  next: { perOp: { x: number[]; gq: number[] }; x: number[]; gq: number[]; control: number[] } | null;
  /** Why the kernel did not run where the grid passed (persistMlpShape refused the operands), else null. */
  refused: string | null;
  ms: { create: number; perOp: number; mlp: number; runOut: number; next: number };
}

const bits = (v: Float32Array): number[] => Array.from(new Uint32Array(v.buffer, v.byteOffset, v.length));

/**
 * The run; `step` names each stage as it starts (the page shows it where it sets no result); `unroll` writes the
 * loops out as a GPU gets them under naga (kernels/unroll.ts; a CPU driver's own text keeps them).
 */
export async function persist(step: (s: string) => void = () => {}, unroll?: boolean): Promise<PersistResult> {
  step('create');
  let t = performance.now();
  const gpu = await Gpu.create({ kernels: { decodeStep: 'persistent', persistGrid: GRID, persistSpin: SPIN, unroll } });
  const ms = { create: performance.now() - t, perOp: 0, mlp: 0, runOut: 0, next: 0 };
  const s = gpu.summary;
  const out: PersistResult = {
    runtime: s.runtime, cpu: gpu.cpu, verdict: s.fastPaths[PERSIST_STEP],
    adapter: [s.vendor, s.architecture, s.device, s.description].filter((v) => v).join(' / '),
    grid: persistGrid(gpu), perOp: [], changed: 0, mlp: null, runOut: null, next: null, refused: null,
    ms,
  };
  const xv = randn(K + I, K, 3);
  const gu = Tensor.from(gpu, randn(K + I + 1, 2 * I * K, 1 / Math.sqrt(K)), [2 * I, K], 'f32', 'gate_up');
  const down = Tensor.from(gpu, randn(K + I + 2, K * I, 2 / Math.sqrt(I)), [K, I], 'f32', 'down');
  const x = Tensor.from(gpu, xv, [1, K], 'f32', 'x');
  const input = bits(xv);
  try {
    step('per-op');
    t = performance.now();
    const ref = Tensor.from(gpu, xv, [1, K], 'f32', 'x.ref');
    const a = matmul(ref, gu, { path: 'gemv', round: 'none', norm: { eps: EPS }, swiglu: true });
    matmul(a, down, { path: 'gemv', round: 'none', accumulate: ref });
    out.perOp = bits((await ref.read()) as Float32Array);
    out.changed = out.perOp.filter((b, i) => b !== input[i]).length;
    for (const u of [a, ref]) u.dispose();
    ms.perOp = performance.now() - t;
    if (out.grid === 0) return out;
    if (!persistMlpShape(x, gu, down)) {
      out.refused = `persistMlpShape refused x [1, ${K}], gate_up [${2 * I}, ${K}], down [${K}, ${I}] (f32)`;
      return out;
    }
    step('mlp');
    t = performance.now();
    const o = { eps: EPS, round: 'none' as const, grid: out.grid, spin: persistSpin(gpu) };
    if (!persistentMlp(x, gu, down, o)) throw new Error('persistentMlp dispatched nothing');
    out.mlp = { persistent: bits((await x.read()) as Float32Array), control: [...await readControl(gpu)] };
    ms.mlp = performance.now() - t;

    step('run-out');
    t = performance.now();
    gpu.write(x.buffer, x.offset, xv);
    persistentMlp(x, gu, down, { ...o, spin: RUNOUT_SPIN, absentAt: 0 });
    const after = bits((await x.read()) as Float32Array);
    const runOutControl = [...await readControl(gpu)];
    const took = await takeFlag(gpu);
    out.runOut = { control: runOutControl, untouched: after.every((b, i) => b === input[i]),
      cleared: took && (await readControl(gpu))[2] === 0 };
    ms.runOut = performance.now() - t;

    step('next');
    t = performance.now();
    gpu.write(x.buffer, x.offset, xv);
    out.next = await next(x, xv, gu, down, o);
    ms.next = performance.now() - t;
    return out;
  } finally {
    for (const u of [x, gu, down]) u.dispose();
    gpu.destroy();
  }
}

/** The NEXT variant on x (xv) against its per-op products: x += o_proj(attn), the MLP, gqkv of x's norm. */
async function next(x: Tensor, xv: Float32Array, gu: Tensor, down: Tensor,
  o: { eps: number; round: 'none'; grid: number; spin: number }): Promise<PersistResult['next']> {
  const gpu = x.gpu;
  const attn = Tensor.from(gpu, randn(K + 5, HD, 1), [1, HD], 'f32', 'attn');
  const wo = Tensor.from(gpu, randn(K + 6, K * HD, 1 / Math.sqrt(HD)), [K, HD], 'f32', 'o_proj');
  const gqkv = Tensor.from(gpu, randn(K + 7, N * K, 1 / Math.sqrt(K)), [N, K], 'f32', 'gqkv');
  const out = Tensor.from(gpu, new Float32Array(N).fill(NaN), [1, N], 'f32', 'gq');
  const ref = Tensor.from(gpu, xv, [1, K], 'f32', 'x.ref');
  const path = 'gemv' as const;
  try {
    matmul(attn, wo, { path, round: 'none', accumulate: ref });
    const a = matmul(ref, gu, { path, round: 'none', norm: { eps: EPS }, swiglu: true });
    matmul(a, down, { path, round: 'none', accumulate: ref });
    const gq = matmul(ref, gqkv, { path, round: 'none', norm: { eps: EPS } });
    const perOp = { x: bits((await ref.read()) as Float32Array), gq: bits((await gq.read()) as Float32Array) };
    for (const u of [a, gq]) u.dispose();
    if (!persistentMlp(x, gu, down, { ...o, oProj: { attn, w: wo }, next: { w: gqkv, out } })) {
      throw new Error('persistentMlp dispatched nothing with next');
    }
    return { perOp, x: bits((await x.read()) as Float32Array), gq: bits((await out.read()) as Float32Array),
      control: [...await readControl(gpu)] };
  } finally {
    for (const u of [attn, wo, gqkv, out, ref]) u.dispose();
  }
}
