// `hrm generate` as the CLI runs it (run() and streamGenerate), with the GPU device destroyed after the third
// piece of streamed text: tests/hrm/cli.test.ts runs this as a child process and reads its exit code and stderr.
import { Gpu } from '../../src/kernels/gpu.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { dirFiles } from '../../src/hrm/files.ts';
import { run, out, err, EMBEDDED_DIR } from '../../src/cli/common.ts';
import { streamGenerate } from '../../src/cli/generate-cmd.ts';

await run(async () => {
  const gpu = await Gpu.create();
  const lm = await loadModel(dirFiles(EMBEDDED_DIR), { gpu });
  let pieces = 0;
  await streamGenerate(gpu, lm, 'The jury said', { maxTokens: 60 },
    { out: (s) => { out(s); if (++pieces === 3) gpu.destroy(); }, err });
});
