// The measurement code every runner (Node/Dawn, Deno/wgpu, headless Chromium) executes: open the device, measure
// the streaming read first (the ceiling, on the fresh device) and the kernels, build the model with random bf16
// weights on the GPU, measure each KV-cache configuration, then the model on quantized weights (--weights), the
// streaming read once more, and return one JSON-able result. Nothing here touches files or the command line; the
// runners do. Each section is a unit that survives a lost device (recover.ts): redone once on a new device, and
// listed under `recovered`.
import { Gpu } from '../../src/kernels/gpu.ts';
import { runtimeInfo } from '../../src/gpu/device.ts';
import { parameterCount } from '../../src/hrm/config.ts';
import { disposeWeights } from '../../src/hrm/weights.ts';
import { randomWeights } from '../../testkit/hrm/random-weights.ts';
import { HrmModel } from '../../src/hrm/model.ts';
import pkg from '../../package.json' with { type: 'json' };
import { attentionSweep } from '../suites/attention.ts';
import { dispatchCost } from '../suites/dispatch.ts';
import { gemv, gemvSweep } from '../suites/gemv.ts';
import { mlpSweep } from '../suites/mlp.ts';
import { matmulFlops, sgmatSchedules } from '../suites/matmul.ts';
import { ModelBench, ModelOnDevice } from '../suites/model.ts';
import { modelInfo } from '../suites/model-figures.ts';
import { streamFloor, streamRead } from '../suites/stream.ts';
import { quantizedRun, weightsEntry } from '../suites/weights.ts';
import { WEIGHTS, type Settings } from './settings.ts';
import type { ReadProbe } from './read-probe.ts';
import { now } from '../timing/stats.ts';
import type { SafetensorsFile } from '../../src/io/safetensors.ts';
import { batchedSgmatUnavailable, sgmatUnavailable } from '../../src/kernels/matmul/sgmat-caps.ts';
import { prefillMatmulPath } from '../../src/kernels/plan/matmul.ts';
import { checkSgmat } from '../../testkit/kernels/matmul-sgmat.check.ts';
import { checkSdpaF16 } from '../../testkit/kernels/sdpa-sgmat.check.ts';
import { attentionTensorCoresUnavailable } from '../../src/kernels/attention/sdpa-mm.ts';
import { SCHEMA, benchConfig, type BenchEnv, type BenchResult } from './result.ts';
import { DeviceKeeper, type DeviceKeeperOptions } from './recover.ts';
import { withGoals } from './goals.ts';

export interface Hooks extends Pick<DeviceKeeperOptions, 'create' | 'opened' | 'attempt'> {
  log(message: string): void;
  /** Device losses and recoveries (the CLI: stderr); `log` when absent. */
  warn?(message: string): void;
  /** Called after each section with the result so far (runners write it, so a killed run leaves figures). */
  update?(r: BenchResult): void | Promise<void>;
  commit?: string | null;
  /** The host's CPU and load (BenchEnv.host). */
  host?: string;
  timestamps?: string;
  /** The runner's MLX fixture file for --check-sgmat (tests/fixtures/mlx/ops.safetensors), where it can read files. */
  mlxOps?: () => Promise<SafetensorsFile>;
  /** The parsed --anchors file. */
  anchors?: unknown;
  /** The parsed --peers file. */
  peers?: unknown;
  /** The parsed --read-probe file. */
  readProbe?: ReadProbe;
}

/** `deno 2.9.6 (v8 ...)`, `node v20.20.2 (v8 ...)`, or the browser's user agent. */
function runtimeVersion(): string {
  const r = runtimeInfo();
  if (r.runtime === 'deno') return `deno ${r.version} (v8 ${r.v8})`;
  if (r.runtime === 'node') return `node v${r.version} (v8 ${r.v8})`;
  return r.userAgent ?? 'unknown';
}


/** Run everything `s` asks for; errors of one measurement are recorded and the rest goes on. */
export async function runBench(s: Settings, hooks: Hooks): Promise<BenchResult> {
  const t0 = now();
  const clock = { left: () => s.budget - (now() - t0) / 1000 };
  const log = hooks.log;
  const create = () => Gpu.create({ robustness: s.robustness, kernels: {
    decodeMerge: s.decodeMerge, decodeMlp: s.decodeMlp, turboDecode: s.turboDecode, decodeStep: s.decodeStep,
  } });
  const keeper = await DeviceKeeper.open({
    create, ...hooks, warn: (m) => (hooks.warn ? hooks.warn(m) : log(m)),
  });
  const first = keeper.gpu; // the first device: what the environment and the adapter's capabilities describe
  const r: BenchResult = {
    schema: SCHEMA, date: new Date().toISOString(),
    env: {
      runtime: first.summary.runtime, runtimeVersion: runtimeVersion(), adapter: first.summary,
      packages: { 'hrm-webgpu': pkg.version, ...pkg.dependencies, ...pkg.devDependencies },
      commit: hooks.commit ?? null,
      ...(hooks.host ? { host: hooks.host } : {}),
      timestamps: first.timestamps
        ? (hooks.timestamps ?? 'timestamp-query (runtime default)')
        : 'none (no timestamp-query)',
    },
    settings: s, model: null,
    kernels: {
      stream: null, streamEnd: null, readProbe: hooks.readProbe ?? null, gemv: [], sweep: [], attention: [], matmul: [],
      dispatch: null,
    },
    caches: [], weights: [],
    prefillMatmul: {
      path: prefillMatmulPath(first), attentionNotOnTensorCores: attentionTensorCoresUnavailable(first),
    },
    parity: null, anchors: hooks.anchors ?? null, ...(hooks.peers === undefined ? {} : { peers: hooks.peers }),
    errors: [], skipped: [], recovered: keeper.recovered, elapsedS: 0, complete: false,
  };
  const update = async () => { r.elapsedS = (now() - t0) / 1000; await hooks.update?.(r); };
  const a = first.summary;
  const names = [a.vendor, a.architecture, a.device, a.description].filter(Boolean);
  log(`adapter: ${names.join(' / ')} (${r.env.runtimeVersion})`);
  const { name, config } = benchConfig(s);
  /** One unit: `f` gets the device to work on (a new one when it is redone after a loss). */
  const section = async (what: string, f: (gpu: Gpu) => Promise<void>) => {
    if (clock.left() <= 0) { r.skipped.push(`${what}: time budget spent`); return; }
    const ts = now();
    try {
      await keeper.unit(what, f);
      log(`${what}: ${((now() - ts) / 1000).toFixed(1)} s`);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      r.errors.push(`${what}: ${msg}`);
      log(`${what}: ERROR ${msg.split('\n')[0]}`);
      await keeper.gpu.sync().catch(() => undefined);
    }
    await update();
  };
  let bf16Bytes = 0;
  const model = new ModelOnDevice(async (gpu) => {
    const ts = now();
    const weights = await randomWeights(gpu, config, s.seed);
    try {
      await gpu.sync();
    } catch (e) {
      disposeWeights(weights);
      throw e;
    }
    const weightsMs = now() - ts;
    bf16Bytes = weights.bytes;
    const info = modelInfo(name, config, parameterCount(config));
    r.model ??= { ...info, dtype: s.dtype, weightsMs };
    log(`random weights: ${(weights.bytes / 1e9).toFixed(2)} GB in ${(weightsMs / 1000).toFixed(1)} s`);
    return { weights, bench: new ModelBench(gpu, new HrmModel(gpu, config, weights, s.dtype), info, s, clock, log) };
  });

  try {
    const h = config.hidden_size, qkv = 4 * config.num_attention_heads * config.head_dim;
    // First, on the fresh device: the ceiling, before any other work has touched the GPU (issue 30).
    await section('stream read', async (gpu) => { r.kernels.stream = await streamRead(gpu, s); });
    if (s.checkSgmat) {
      await section('subgroup-matrix matmul parity', async (gpu) => {
        const why = sgmatUnavailable(gpu);
        r.parity = { sgmat: why === null ? await checkSgmat(gpu, await hooks.mlxOps?.()) : { skipped: why } };
        const p = r.parity.sgmat;
        log('skipped' in p
          ? `sgmat parity: skipped, ${p.skipped}`
          : `sgmat parity: ${p.passed} passed, ${p.failed} failed, ` +
          `worst ${p.worstUlp} ulp, ${(p.within1 * 100).toFixed(3)} % within 1 ulp` +
          (p.failed ? `; ${p.cases.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`).join('; ')}` : ''));
        // Prefill attention's products on the same tensor cores (testkit/kernels/sdpa-sgmat.check.ts).
        const whyAttn = batchedSgmatUnavailable(gpu);
        const a = r.parity.attention = whyAttn === null ? await checkSdpaF16(gpu) : { skipped: whyAttn };
        log('skipped' in a
          ? `attention tensor-core parity: skipped, ${a.skipped}`
          : `attention tensor-core parity: ${a.passed} passed, ${a.failed} failed` +
          (a.failed ? `; ${a.cases.filter((c) => c.failure).map((c) => `${c.name}: ${c.failure}`).join('; ')}` : ''));
      });
    }
    if (s.sweepGemv) {
      // The decode projections' weight sizes at HRM-1B (bf16): o_proj, down_proj, gqkv, gate_up.
      const i = config.intermediate_size, a = config.num_attention_heads * config.head_dim;
      const sizes = [2 * h * a, 2 * h * i, 8 * h * a, 4 * h * i];
      await section('stream floor', async (gpu) => { r.kernels.streamFloor = await streamFloor(gpu, sizes, s); });
    }
    const streamGBps = r.kernels.stream?.GBps.median ?? null;
    if (s.only !== 'model') {
      for (const n of [qkv, config.vocab_size]) {
        await section(`gemv ${n}x${h}`, async (gpu) => { r.kernels.gemv.push(await gemv(gpu, n, h, s, streamGBps)); });
      }
      if (first.f16) {
        for (const n of [qkv, config.vocab_size]) {
          await section(`gemv ${n}x${h} f16 x`, async (gpu) => {
            r.kernels.gemv.push(await gemv(gpu, n, h, s, streamGBps, 'f16'));
          });
        }
      } else log('gemv with f16 x: skipped (the adapter has no shader-f16)');
      const m = s.matmulRows, inter = config.intermediate_size;
      await section(`matmul ${m} rows`, async (gpu) => { r.kernels.matmul = await matmulFlops(gpu, m, qkv, h, s); });
      await section(`sgmat schedules ${m} rows`, async (gpu) => {
        r.kernels.matmul.push(...await sgmatSchedules(gpu, m, h, inter, qkv, s));
      });
      await section('dispatch chain', async (gpu) => { r.kernels.dispatch = await dispatchCost(gpu, s); });
      if (s.sweepGemv) {
        await section('gemv sweep', async (gpu) => {
          r.kernels.sweep = await gemvSweep(gpu, h, inter, qkv, config.vocab_size, s);
        });
        await section('mlp sweep', async (gpu) => { r.kernels.mlp = await mlpSweep(gpu, h, inter, s); });
        await section('attention sweep', async (gpu) => {
          r.kernels.attention = await attentionSweep(gpu, config.num_attention_heads, config.head_dim, s);
        });
      }
    }
    keeper.gpu.trimPool();
    if (s.only !== 'kernels') {
      await section(`model ${name}: random weights`, async (gpu) => { await model.on(gpu); });
      for (const c of s.caches) {
        if (!r.model) { r.skipped.push(`model ${name}, ${c} cache: no model (its weights failed)`); continue; }
        // A cache configuration is one unit: after a loss it is measured again from the start on a rebuilt model.
        await section(`model ${name}, ${c} cache`, async (gpu) => {
          r.caches.push(await (await model.on(gpu)).run(c, streamGBps));
        });
      }
      const info = r.model;
      model.dispose(); // the bf16 weights: the quantized runs make their own
      for (const w of s.weights) {
        if (!info) break; // no model: the caches' lines say so
        const quant = WEIGHTS[w];
        if (!quant) {
          const full = r.caches.find((c) => c.name === 'full');
          if (full) r.weights.push(weightsEntry(w, bf16Bytes, full, config, s.dtype));
          else r.skipped.push(`model ${name}, ${w} weights: no full-cache figures to take it from`);
          continue;
        }
        await section(`model ${name}, ${w} weights`, async (gpu) => {
          r.weights.push(await quantizedRun(gpu, w, quant, info, s, clock, log, streamGBps));
        });
      }
    }
    // Once more at the end, the same read: a ceiling that moved during the run shows here (ceiling.ts).
    keeper.gpu.trimPool();
    await section('stream read, end of run', async (gpu) => {
      const end = await streamRead(gpu, s);
      r.kernels.streamEnd = { ...end, name: `${end.name}, end of run` };
    });
  } finally {
    model.dispose();
    r.elapsedS = (now() - t0) / 1000;
    r.complete = true;
    keeper.gpu.destroy();
  }
  return withGoals(r); // the JSON carries issue 30's goals, so a script can check the run
}
