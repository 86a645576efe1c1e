// The MLX parity checks on the device in use (tests/hrm/parity.check.ts): bundled by bench/pack.sh and run by
// bench/h200.sh after the benchmark, so that the GPU's own kernel paths are checked against MLX where they run.
// Prints a Markdown list (one line per check) and exits 1 if any fails. Reads tests/fixtures/mlx/ from the cwd.
import { Gpu } from '../src/tensor/gpu.ts';
import { checkModelParity } from '../tests/hrm/parity.check.ts';

const gpu = await Gpu.create();
const r = await checkModelParity(gpu, 'tests/fixtures/mlx/');
console.log(`MLX parity on ${gpu.summary.description || gpu.summary.vendor}: **${r.passed} passed, ${r.failed} failed**`);
for (const c of r.cases) console.log(`- ${c.ok ? 'ok' : 'FAILED'}: ${c.name} = ${c.value.toExponential(3)} (bound ${c.bound})`);
gpu.destroy();
process.exit(r.failed ? 1 : 0);
