// bench/parity.ts's checks inside the benchmark page (bench/page.ts with ?parity=1, driven by bench/chrome-run.ts):
// the MLX fixtures fetched from `mlx` (tests/fixtures/mlx/ served on 127.0.0.1), then decode attention's folded
// merges at the 1B shape, on a device of their own. The same Markdown list as bench/parity.ts prints.
import { urlFiles } from '../src/hrm/files.ts';
import { Gpu } from '../src/tensor/gpu.ts';
import { urlSource } from '../src/tensor/sources.ts';
import { checkModelParity } from '../tests/hrm/parity.check.ts';
import { checkFold, FOLD_1B } from '../tests/kernels/sdpa_fold.check.ts';
import { checkQuantFold, QUANT_FOLD_1B } from '../tests/kernels/qsdpa_fold.check.ts';

export async function pageParity(mlx: string): Promise<{ md: string; failed: number }> {
  const gpu = await Gpu.create();
  try {
    const model = await checkModelParity(gpu, mlx, { source: (u) => urlSource(u), files: (u) => urlFiles(u) });
    const cases = [...model.cases, ...await checkFold(gpu, FOLD_1B), ...await checkQuantFold(gpu, QUANT_FOLD_1B)];
    const failed = cases.filter((c) => !c.ok).length;
    const lines = [`Parity in Chrome on ${gpu.summary.description || gpu.summary.vendor} (MLX fixtures; decode ` +
      `attention's folded merges): **${cases.length - failed} passed, ${failed} failed**`];
    for (const c of cases) {
      lines.push(`- ${c.ok ? 'ok' : 'FAILED'}: ${c.name} = ${c.value.toExponential(3)} (bound ${c.bound})`);
    }
    return { md: lines.join('\n') + '\n', failed };
  } finally {
    gpu.destroy();
  }
}
