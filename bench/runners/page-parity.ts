// parity.ts's checks inside the benchmark page (page.ts with ?parity=1, driven by bench/chrome/run.ts): the MLX
// fixtures fetched from `mlx` (tests/fixtures/mlx/ served on 127.0.0.1), then decode attention's folded merges at
// the 1B shape, on a device of their own. The same Markdown list as parity.ts prints.
import { urlFiles } from '../../src/hrm/files.ts';
import { Gpu } from '../../src/kernels/gpu.ts';
import { checkLine } from '../harness/format.ts';
import { urlSource } from '../../src/io/sources.ts';
import { checkModelParity, type ParityCase } from '../../testkit/hrm/parity.check.ts';
import { checkFold, FOLD_1B } from '../../testkit/kernels/sdpa-fold.check.ts';
import { checkQuantFold, QUANT_FOLD_1B } from '../../testkit/kernels/qsdpa-fold.check.ts';

export async function pageParity(mlx: string, say: (m: string) => void): Promise<{ md: string; failed: number }> {
  const gpu = await Gpu.create();
  const line = (c: ParityCase) => checkLine(c.ok, c.name, c.value, String(c.bound));
  try {
    // Each group's lines as it ends (the fold checks at the 1B shape take minutes on a CPU driver).
    const model = await checkModelParity(gpu, mlx, { source: (u) => urlSource(u), files: (u) => urlFiles(u) });
    say(model.cases.map(line).join('\n'));
    const fold = await checkFold(gpu, FOLD_1B);
    say(fold.map(line).join('\n'));
    const quant = await checkQuantFold(gpu, QUANT_FOLD_1B);
    say(quant.map(line).join('\n'));
    const cases = [...model.cases, ...fold, ...quant];
    const failed = cases.filter((c) => !c.ok).length;
    const head = `Parity in Chrome on ${gpu.summary.description || gpu.summary.vendor} (MLX fixtures; decode ` +
      `attention's folded merges): **${cases.length - failed} passed, ${failed} failed**`;
    return { md: [head, ...cases.map(line)].join('\n') + '\n', failed };
  } finally {
    gpu.destroy();
  }
}
