// The MLX parity checks on the device in use (tests/hrm/parity.check.ts): bundled by bench/pack.sh and run by
// bench/h200.sh after the benchmark, so that the GPU's own kernel paths are checked against MLX where they run.
// Then decode attention's folded merge against its separate one at the 1B shape (tests/kernels/sdpa_fold.check.ts:
// no cross-workgroup ordering is promised by WGSL, so it is checked on the GPU it runs on), and the quantized caches'
// folded values merge, batched against alone and against qsdpa's passes (tests/kernels/qsdpa_fold.check.ts).
// Prints a Markdown list (one line per check) and exits 1 if any fails. Reads tests/fixtures/mlx/ from the cwd.
import { Gpu } from '../src/tensor/gpu.ts';
import { checkModelParity } from '../tests/hrm/parity.check.ts';
import { checkFold, FOLD_1B } from '../tests/kernels/sdpa_fold.check.ts';
import { checkQuantFold, QUANT_FOLD_1B } from '../tests/kernels/qsdpa_fold.check.ts';

const gpu = await Gpu.create({ robustness: process.argv.includes('--robustness') });
const model = await checkModelParity(gpu, 'tests/fixtures/mlx/');
const cases = [...model.cases, ...await checkFold(gpu, FOLD_1B), ...await checkQuantFold(gpu, QUANT_FOLD_1B)];
const r = { cases, failed: cases.filter((c) => !c.ok).length, passed: cases.filter((c) => c.ok).length };
console.log(`Parity on ${gpu.summary.description || gpu.summary.vendor} (MLX fixtures; decode attention's folded merges): **${r.passed} passed, ${r.failed} failed**`);
for (const c of r.cases) console.log(`- ${c.ok ? 'ok' : 'FAILED'}: ${c.name} = ${c.value.toExponential(3)} (bound ${c.bound})`);
gpu.destroy();
process.exit(r.failed ? 1 : 0);
