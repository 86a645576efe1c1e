// Probe for the H200 (bundled by bench/pack.sh, run by bench/h200.sh with QONE=1): where a quantized-cache decode
// attention call's time goes at HRM-Text-1B's shape (12 heads of 128, q4 K and V, 641 keys of a 4096-position
// cache). Each form is captured 200 calls back to back and timed as one pass (bench/suites/ passCalls): the two
// dispatches with the append (the decode step's), the same without it (the query given: qone_scores), and the
// full-precision cache's one dispatch (sdpa_one's split, append and fold) for scale. One JSON line per form: GPU us
// per call (median of 7 passes).
import { Gpu } from '../../src/kernels/gpu.ts';
import { Tensor } from '../../src/tensor/tensor.ts';
import { qsdpa } from '../../src/kernels/attention/qsdpa.ts';
import { qsdpaOneAppend } from '../../src/kernels/attention/qsdpa-one.ts';
import { appendAttendOne } from '../../src/kernels/attention/sdpa-one.ts';
import { quantKV } from '../../src/kernels/attention/kvquant.ts';
import { fillRandom } from '../../testkit/init/random.ts';
import { passCalls } from '../timing/calls.ts';
import { stats } from '../timing/stats.ts';

const gpu = await Gpu.create();
const H = 12, D = 128, CAP = 4096, LEN = 641, CALLS = 200;
const out = (o: unknown) => console.log(JSON.stringify(o));
const gqkv = Tensor.empty(gpu, [1, 4 * H * D], 'f32', 'probe.gqkv');
fillRandom(gqkv, { seed: 1, scale: 1 });
const side = (bits: number) => {
  const s = quantKV(gpu, { heads: H, capacity: CAP, headDim: D, bits, label: 'probe.kv' });
  let x = 12345;
  const words = Uint32Array.from({ length: s.q.size }, () => (x = (Math.imul(x, 1664525) + 1013904223) >>> 0));
  gpu.write(s.q.buffer, s.q.offset, words);
  fillRandom(s.scales, { seed: 3, scale: 0.05 });
  fillRandom(s.biases, { seed: 4, scale: 1 });
  return s;
};
const k = side(4), v = side(4);
const q = Tensor.empty(gpu, [H, 1, D], 'f32', 'probe.q');
fillRandom(q, { seed: 5, scale: 1 });
const opts = { heads: H, headDim: D, base: 10000, offset: LEN - 1, round: 'bf16' as const, scale: 1 / Math.sqrt(D) };
const full = {
  k: Tensor.empty(gpu, [H, CAP, D], 'bf16', 'probe.fk'), v: Tensor.empty(gpu, [H, CAP, D], 'bf16', 'probe.fv'),
};
const noAppend = {
  kvLen: LEN, offset: LEN - 1, mask: { kind: 'causal' as const }, scale: opts.scale, round: 'bf16' as const,
};
const forms: Record<string, () => void> = {
  'q4 scores+append, values': () => qsdpaOneAppend(gqkv, k, v, opts)!.dispose(),
  'q4 scores (no append), values': () => qsdpa(q, k, v, { ...noAppend, path: 'one' }).dispose(),
  'full split+append+fold': () =>
    appendAttendOne(gqkv, { kind: 'full', data: full.k }, { kind: 'full', data: full.v }, opts)!.dispose(),
};
for (const [name, record] of Object.entries(forms)) {
  try {
    const t = await passCalls(gpu, record, CALLS);
    out({ form: name, usPerCall: +stats(await t.us(7)).median.toFixed(2) });
    t.release();
  } catch (e) {
    out({ form: name, error: String(e).slice(0, 300) });
  }
}
process.exit(0);
