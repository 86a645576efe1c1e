// What refract's scoring commands share (score, repeatability, sweep, selftest): their checks before the model
// loads, the session (GPU, model and a backend rebuilt when the device is lost), the run options with progress, and
// Ctrl-C (stop after the current unit, write what finished).
import { Gpu, InputError, loadConfig, loadModel, modelFiles, type LoadedModel, HrmBackend } from '../index.ts';
import { UsageError } from '../advanced.ts';
import {
  DEFAULT_REFERENCE_KV, parseKvConfig, ResilientBackend, type ProgressFn, type RefractReport, type RunRefractOptions,
} from '../refract/index.ts';
import { choice, err, netOptions, proc } from './common.ts';
import { scoreOptions, type ScoreFlags } from './refract-flags.ts';

/** Progress on stderr: one rewritten line per stage with an ETA. */
function progress(enabled: boolean): ProgressFn | undefined {
  if (!enabled) return undefined;
  let last = '';
  return (stage, done, total, eta) => {
    const line = `${stage}: ${done}/${total}${eta !== null ? `, ETA ${Math.round(eta)} s` : ''}`;
    if (line === last) return;
    err(`\r${line.padEnd(60)}${done === total ? '\n' : ''}`);
    last = line;
  };
}

/** Ctrl-C: the first stops the run after its current unit (the finished axes are written), the second quits. */
export function interruptSignal(): AbortSignal {
  const ac = new AbortController();
  type Process = { once?(ev: string, f: () => void): void; exit(code: number): never };
  const p = globalThis as unknown as { process?: Process };
  if (!p.process?.once) return ac.signal;
  p.process.once('SIGINT', () => {
    err('\ninterrupted: stopping after the current unit, then writing what has finished (Ctrl-C again quits now)\n');
    ac.abort();
    p.process!.once!('SIGINT', () => p.process!.exit(130));
  });
  return ac.signal;
}

/** The KV strings parse (and --candidate is given) before the model loads. */
export function checkKv(v: { candidate?: string; reference?: string }): void {
  if (!v.candidate) throw new InputError('cli', '--candidate is required (e.g. --candidate ctk=q8_0,ctv=q4_0)');
  parseKvConfig(v.candidate, '--candidate');
  parseKvConfig(v.reference ?? DEFAULT_REFERENCE_KV, '--reference');
}

/**
 * Every score flag checked before the GPU opens and the weights load (a usage error, exit 2): the values, the KV
 * strings, -c/--ctx against the model's context (its config.json only), and that some axis is left to run.
 */
export async function checkScoreFlags(cmd: string, v: ScoreFlags & { candidate?: string }): Promise<void> {
  const modelCtx = (await loadConfig(modelFiles(v.model), () => {})).max_position_embeddings;
  const o = await scoreOptions(cmd, v, modelCtx);
  const usage = (m: string) => new UsageError(`refract ${cmd}`, m);
  if (o.ctx! > modelCtx) {
    throw usage(`-c/--ctx ${o.ctx} is past the model's context of ${modelCtx} tokens; pass ${modelCtx} or less`);
  }
  if (o.skipGtm && o.skipKld && !o.axes?.rniah && !o.axes?.plad) {
    throw usage('--skip-gtm and --skip-kld leave no axis to run; drop one, or add --axis-rniah or --axis-plad');
  }
}

export interface Session { backend: ResilientBackend; lm: () => LoadedModel; close(): void }

/** The GPU, the model and a backend that is rebuilt (new device, model reloaded) when the device is lost. */
export async function session(v: Pick<ScoreFlags, 'model' | 'dtype' | 'condition'>): Promise<Session> {
  const dtype = choice('dtype', v.dtype, ['f32', 'bf16'] as const, 'f32');
  let gpu: Gpu | null = null;
  let lm: LoadedModel | null = null;
  const make = async () => {
    (gpu as Gpu | null)?.destroy(); // a lost device's buffers and pool go with it before the next one opens
    gpu = await Gpu.create();
    try {
      lm = await loadModel(modelFiles(v.model || undefined, netOptions()), { gpu, dtype });
    } catch (e) {
      gpu.destroy();
      gpu = null;
      throw e;
    }
    return new HrmBackend(lm, { condition: v.condition });
  };
  const backend = new ResilientBackend(await make(), make, { log: (line) => err(`${line}\n`) });
  return { backend, lm: () => lm!, close: () => (gpu as Gpu | null)?.destroy() };
}

/** runRefract's options from the score flags, on the session's backend and model, with progress unless turned off. */
export async function runOptions(cmd: string, v: ScoreFlags, s: Session,
  signal?: AbortSignal): Promise<RunRefractOptions> {
  const o = await scoreOptions(cmd, v, s.lm().config.max_position_embeddings);
  return { ...o, backend: s.backend, model: s.lm().name, onProgress: progress(!v['no-progress']), signal };
}

/** Run `f`; when Ctrl-C stopped it, say what is left (exit 130) and give null. */
export async function interrupted<T>(signal: AbortSignal, what: string, f: () => Promise<T>): Promise<T | null> {
  try {
    return await f();
  } catch (e) {
    if (!signal.aborted) throw e;
    err(`interrupted: ${what}\n`);
    proc.exitCode = 130;
    return null;
  }
}

/** Say where a stopped run's report went and exit non-zero (130 for Ctrl-C). */
export function finishPartial(r: RefractReport, signal: AbortSignal, written: string[]): void {
  if (!r.partial) return;
  const where = written.length ? ` written to ${written.join(', ')}`
    : ' (no --json-out/--html-out given: shown above only)';
  err(`partial report (${r.partial.reason}; not finished: ${r.partial.unfinished.join(', ')})${where}\n`);
  proc.exitCode = signal.aborted ? 130 : 1;
}
