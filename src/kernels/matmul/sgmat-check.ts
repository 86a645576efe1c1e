// The tensor-core matmul's self-check, run once a device by plan/prepare.ts: a product of exact data through each
// kernel, its verdict kept in the device's state (sgmat-caps.ts reads it).
import type { Gpu } from '../../gpu/gpu.ts';
import { Tensor } from '../../tensor/tensor.ts';
import { roundBf16 } from '../../tensor/dtype.ts';
import { DEFAULT_SCHEDULE, type SgmatPlan } from './sgmat-schedule.ts';
import { featureMissing, SELF_CHECK, STAGED_CHECK, stagedUnavailable } from './sgmat-caps.ts';
import { sgmatStats } from './sgmat-weights.ts';
import { dispatchSgmat } from './matmul-sgmat.ts';

/**
 * Before a device is used (plan/prepare.ts runs it): one product of exact data (small multiples of 1/128, every sum
 * exact in f32) on odd
 * sizes through the tensor cores (K split in 2: 320 padded columns in slices of 192 and 128 for the staged kernel,
 * 160 and 160 for the direct one) must equal the float64 result rounded to bf16 bit for bit and take no fallback.
 * The staged kernel is checked first where it can run; if it fails, the direct kernel is checked and takes the
 * path alone (stagedUnavailable says why). If that fails too, the path is off on this device, with the reason in
 * sgmatUnavailable (a driver that gets subgroup matrices wrong).
 */
export async function selfCheckSgmat(gpu: Gpu): Promise<void> {
  if (featureMissing(gpu) !== null) return;
  if (stagedUnavailable(gpu) === null) {
    const why = await checkProduct(gpu, { ...DEFAULT_SCHEDULE, kernel: 'staged' });
    if (why === null) {
      gpu.state.set(SELF_CHECK, null);
      return;
    }
    gpu.state.set(STAGED_CHECK, `the staged kernel ${why}`);
  }
  gpu.state.set(SELF_CHECK, await checkProduct(gpu, { ...DEFAULT_SCHEDULE, kernel: 'direct' }));
}

/** The self-check's product under `schedule`: null when exact, else what went wrong. */
async function checkProduct(gpu: Gpu, schedule: SgmatPlan): Promise<string | null> {
  const M = 130, N = 70, K = 260;
  const xv = Float32Array.from({ length: M * K }, (_, i) => ((i * 7) % 13 - 6) / 8);
  const wv = Float32Array.from({ length: N * K }, (_, i) => ((i * 5) % 11 - 5) / 16);
  const x = Tensor.from(gpu, xv, [M, K], 'f32', 'sgmat.check.x');
  const w = Tensor.from(gpu, wv, [N, K], 'bf16', 'sgmat.check.w');
  const out = Tensor.empty(gpu, [M, N], 'f32', 'sgmat.check.out');
  const before = (await sgmatStats(gpu).read())[0];
  try {
    dispatchSgmat(x, [w], out, { M, K, ldo: N }, schedule);
    const got = await out.read();
    const fell = (await sgmatStats(gpu).read())[0] - before;
    let bad = 0, at = -1;
    for (let m = 0; m < M; m++) for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += xv[m * K + k] * wv[n * K + k];
      if (got[m * N + n] !== roundBf16(s)) { bad++; if (at < 0) at = m * N + n; }
    }
    return bad || fell ? `failed its self-check on this device (${bad} of ${M * N} outputs wrong, ` +
      `first at ${at}: ${got[at]}; ${fell} fallback rows)` : null;
  } catch (e) {
    return `failed its self-check on this device (${e instanceof Error ? e.message : String(e)})`;
  } finally {
    for (const t of [x, w, out]) t.dispose();
  }
}
