// Deno entry of turbo-score.test.ts's Deno case: REFRACT's KLD axis of ctk=turbo3,ctv=turbo3 (small sizes; GTM
// skipped for time) on the embedded model through the real backend, printed as one JSON line.
import { Gpu } from '../../src/kernels/gpu.ts';
import { modelFiles } from '../../src/hrm/files.ts';
import { loadModel } from '../../src/hrm/load.ts';
import { HrmBackend } from '../../src/refract/hrm-backend.ts';
import { runRefract } from '../../src/refract/index.ts';
import { TURBO_KLD_RUN } from './turbo-run.ts';

const gpu = await Gpu.create();
const lm = await loadModel(modelFiles(), { gpu, dtype: 'f32' });
const r = await runRefract({ backend: new HrmBackend(lm, { condition: 'noisy' }), model: lm.name, ...TURBO_KLD_RUN });
console.log(JSON.stringify({ runtime: gpu.summary.runtime, candidate: r.candidate, meanKld: r.axes.kld!.mean_kld }));
gpu.destroy();
