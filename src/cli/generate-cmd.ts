// `hrm generate`'s streaming loop, apart from the argument parsing so that a test can lose the device mid-run.
// A lost device (a laptop sleeping, a driver reset) is reported as such, with how far generation got: the text
// already printed is kept, nothing is retried (a new device means reloading the model).
import { DeviceLostError, generate, type GenerateOptions, type GenerateStats } from '../index.ts';
import type { Gpu } from '../index.ts';
import type { LoadedModel } from '../index.ts';

export interface StreamIo { out(s: string): void; err(s: string): void }

/** Bytes as MiB or GiB, for the CLIs' summaries. */
export const fmtBytes = (n: number) =>
  n >= 2 ** 30 ? `${(n / 2 ** 30).toFixed(2)} GiB` : `${(n / 2 ** 20).toFixed(1)} MiB`;

/** The stop reason, with the context's size when that is what cut the generation short of --max-tokens. */
const stopOf = (s: GenerateStats, ctx: number) =>
  s.stopReason === 'context' ? `context (the model's ${ctx} tokens are full)` : s.stopReason;

function statsLine(s: GenerateStats, gpu: Gpu, ctx: number): string {
  const promptRate = (s.promptTokens / (s.promptMs / 1000)).toFixed(1);
  const decodeRate = s.decodeTokens ? (s.decodeTokens / (s.decodeMs / 1000)).toFixed(1) : '-';
  const steps = ('replayed' in s.decodePath ? `replayed steps of ${s.decodePath.replayed} dispatches`
    : `steps recorded one by one (${s.decodePath.recorded})`) +
    (s.persistentSteps ? `, ${s.persistentSteps} with the persistent MLP` : '');
  return `prompt: ${s.promptTokens} tokens in ${s.promptMs.toFixed(0)} ms (${promptRate} tok/s); ` +
    `decode: ${s.decodeTokens} tokens in ${s.decodeMs.toFixed(0)} ms (${decodeRate} tok/s); ` +
    `stop: ${stopOf(s, ctx)}; cache ${fmtBytes(s.cacheBytes)}; ` +
    `${steps}; ` +
    `${gpu.summary.description || gpu.summary.vendor} (${gpu.summary.runtime})\n`;
}

/** Stream a completion to `io.out`, the stats line to `io.err`; a lost device becomes one clear DeviceLostError. */
export async function streamGenerate(gpu: Gpu, lm: LoadedModel, prompt: string, opts: GenerateOptions,
  io: StreamIo): Promise<void> {
  let chars = 0;
  try {
    for await (const ev of generate(lm, prompt, opts)) {
      if (ev.type === 'text') { io.out(ev.text); chars += ev.text.length; continue; }
      io.out('\n');
      io.err(statsLine(ev.stats, gpu, lm.config.max_position_embeddings));
    }
  } catch (e) {
    // Loss shows up as whichever call meets it first (a mapAsync rejection, a validation error): ask the device.
    await Promise.race([gpu.device.lost, new Promise((r) => setTimeout(r, 100))]);
    const lost = gpu.watch.lost;
    if (!lost && !(e instanceof DeviceLostError)) throw e;
    if (chars) io.out('\n');
    const why = lost ? `${lost.reason || 'unknown'}: ${lost.message || 'no message'}` : (e as Error).message;
    throw new DeviceLostError('generate', `the GPU device was lost after ${chars} characters of output (${why}); ` +
      'the text above is all that was generated. Run the command again to start over on a new device');
  }
}
