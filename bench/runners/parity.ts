// The MLX parity checks on the device in use (testkit/hrm/parity.check.ts): bundled by bench/pack.sh and run by
// bench/h200.sh after the benchmark, so that the GPU's own kernel paths are checked against MLX where they run.
// Then decode attention's folded merge against its separate one at the 1B shape (testkit/kernels/sdpa-fold.check.ts:
// no cross-workgroup ordering is promised by WGSL, so it is checked on the GPU it runs on), and the quantized caches'
// folded values merge, batched against alone and against qsdpa's passes (testkit/kernels/qsdpa-fold.check.ts), the
// TurboQuant caches' (turbo_one), batched against alone and against the general path
// (testkit/kernels/turbo-fold.check.ts), and the
// decode MLP in one dispatch on bf16 and 4-bit weights, batched against alone (testkit/kernels/gemv-mlp.check.ts), and
// qgemv_wide's shapes against qgemv4 at the 1B projections (testkit/kernels/qgemv-wide.check.ts).
// Then, where the device has shader-f16, matmulF16 over every weight dtype at every seeded shape (the CPU driver's
// `npm test` runs a share of them: testkit/kernels/matmul-f16.check.ts). The kernel tests' other whole sweeps run with
// HRM_EXHAUSTIVE=1 (tests/helpers/sweep.ts) where vitest is installed: `HRM_EXHAUSTIVE=1 npx vitest run tests/kernels`.
// Prints a Markdown list (one line per check) and exits 1 if any fails. Reads tests/fixtures/mlx/ from the cwd.
import { Gpu } from '../../src/kernels/gpu.ts';
import { checkLine } from '../harness/format.ts';
import { checkModelParity } from '../../testkit/hrm/parity.check.ts';
import { checkFold, FOLD_1B } from '../../testkit/kernels/sdpa-fold.check.ts';
import { checkQuantFold, QUANT_FOLD_1B } from '../../testkit/kernels/qsdpa-fold.check.ts';
import { checkTurboFold, TURBO_FOLD_1B } from '../../testkit/kernels/turbo-fold.check.ts';
import { checkMlpFold, MLP_1B } from '../../testkit/kernels/gemv-mlp.check.ts';
import { checkQGemvWide, WIDE_1B } from '../../testkit/kernels/qgemv-wide.check.ts';
import { checkMatmulF16, f16ParityCases } from '../../testkit/kernels/matmul-f16.check.ts';

const gpu = await Gpu.create({ robustness: process.argv.includes('--robustness') });
const model = await checkModelParity(gpu, 'tests/fixtures/mlx/');
const cases = [...model.cases, ...await checkFold(gpu, FOLD_1B), ...await checkQuantFold(gpu, QUANT_FOLD_1B),
  ...await checkTurboFold(gpu, TURBO_FOLD_1B)];
for (const m of MLP_1B) cases.push(...await checkMlpFold(gpu, m));
cases.push(...await checkQGemvWide(gpu, WIDE_1B));
if (gpu.f16) cases.push(...f16ParityCases(await checkMatmulF16(gpu, true, 'tests/fixtures/mlx/')));
const r = { cases, failed: cases.filter((c) => !c.ok).length, passed: cases.filter((c) => c.ok).length };
console.log(`Parity on ${gpu.summary.description || gpu.summary.vendor} (MLX fixtures; decode attention's folded ` +
  `merges, the folded decode MLP): **${r.passed} passed, ${r.failed} failed**`);
for (const c of r.cases) {
  console.log(checkLine(c.ok, c.name, c.value, String(c.bound)));
}
gpu.destroy();
process.exit(r.failed ? 1 : 0);
