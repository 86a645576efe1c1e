// `refract` flags: the option tables, parsing with usage errors (one line naming the flag, exit 2), and the
// mapping of score flags to runRefract's options. Output paths are checked here, before any model work.
import { parseArgs } from 'node:util';
import { InputError } from '../index.ts';
import { UsageError } from '../advanced.ts';
import { DEFAULT_REFERENCE_KV, DEFAULTS, parseKvConfig, parsePromptsJsonl,
  type RunRefractOptions } from '../refract/index.ts';
import { checkWritable, choice, number, parseFlags, proc, readFile } from './common.ts';

const STRING = { type: 'string' } as const;
const FLAG = { type: 'boolean' } as const;

export const SCORE_OPTIONS = {
  model: STRING, reference: STRING, candidate: STRING, prompts: STRING, corpus: STRING, chunks: STRING,
  ctx: { type: 'string', short: 'c' },
  'n-predict': STRING, seed: STRING, 'measure-floor': FLAG, 'skip-gtm': FLAG, 'skip-kld': FLAG, 'axis-a': STRING,
  full: FLAG,
  'axis-rniah': FLAG, 'rniah-haystack': STRING, 'rniah-up-to': STRING, 'rniah-ctx-max': STRING, 'rniah-lengths': STRING,
  'rniah-positions': STRING, 'rniah-trials': STRING, 'rniah-n-predict': STRING, 'rniah-needle': STRING,
  'rniah-question': STRING, 'rniah-keyword': STRING, 'axis-plad': FLAG, 'plad-ids': STRING,
  condition: STRING, dtype: STRING, 'json-out': STRING, 'html-out': STRING, 'no-progress': FLAG,
  help: { type: 'boolean', short: 'h' },
} as const;

export const REPEATABILITY_OPTIONS = { ...SCORE_OPTIONS, runs: STRING, 'out-dir': STRING } as const;
export const FETCH_OPTIONS = {
  'cache-dir': STRING, size: STRING, sha256: STRING, 'no-progress': FLAG, help: { type: 'boolean', short: 'h' },
} as const;
export const SWEEP_OPTIONS = { ...SCORE_OPTIONS, candidate: { type: 'string', multiple: true }, 'k-types': STRING,
  'v-types': STRING, 'out-dir': STRING } as const;

type Options = Parameters<typeof parseArgs>[0] extends infer C
  ? C extends { options?: infer O } ? NonNullable<O> : never : never;
export type Values<O extends Options> = ReturnType<typeof parseArgs<{ options: O; allowPositionals: true }>>['values'];

/** Parse a subcommand's flags with the CLIs' one parser (common.ts); its usage errors name the subcommand. */
export function parseCommandFlags<O extends Options>(cmd: string, args: string[], options: O,
  positionals = false): { values: Values<O>; positionals: string[] } {
  try {
    const r = parseFlags(args, options, true);
    if (!positionals && r.positionals.length) throw new UsageError(`refract ${cmd}`,
      `unexpected argument ${JSON.stringify(r.positionals[0])}`);
    return r as { values: Values<O>; positionals: string[] };
  } catch (e) {
    if (e instanceof UsageError && e.op === 'cli') throw new UsageError(`refract ${cmd}`,
      e.message.replace(/^\[cli\] /, ''));
    throw e;
  }
}

/** Flags a subcommand parses with the score flags but has no use for are refused, not silently ignored. */
export function refuse(cmd: string, v: Record<string, unknown>, flags: readonly string[], why: string): void {
  const given = flags.find((f) => v[f] !== undefined);
  if (given) throw new UsageError(`refract ${cmd}`, `--${given} is not a ${cmd} flag (${why})`);
}

/** Run `f`, turning the flag checks of common.ts (InputError 'cli') into usage errors of `cmd`. */
export async function asUsage<T>(cmd: string, f: () => Promise<T> | T): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if (e instanceof InputError && (e.op === 'cli' || e.op === 'kvconfig')) throw new UsageError(`refract ${cmd}`,
      e.message.replace(/^\[[^\]]*\] /, ''));
    throw e;
  }
}

const positive = (n: number) => Number.isInteger(n) && n > 0;
const WHOLE = 'a whole number from 1';

function list(flag: string, v: string | undefined, check: (n: number) => boolean): number[] | undefined {
  if (v === undefined) return undefined;
  const xs = v.split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  if (xs.length === 0 || xs.some((x) => !check(x))) throw new InputError('cli',
    `--${flag} ${JSON.stringify(v)} is not valid`);
  return xs;
}

/** A text flag that, when given, must hold more than white space (an empty needle or keyword would hit always). */
function nonEmpty(flag: string, v: string | undefined): string | undefined {
  if (v !== undefined && v.trim() === '') throw new InputError('cli', `--${flag} is empty`);
  return v;
}

async function text(flag: string, path: string): Promise<string> {
  return asUsage(flag, async () => new TextDecoder().decode(await readFile(path)));
}

/** Every output path must be writable (checkWritable) before any model work. */
export async function checkOutputs(outputs: Record<string, string | undefined>): Promise<void> {
  for (const [flag, p] of Object.entries(outputs)) if (p !== undefined) await checkWritable(flag, p);
}

/** The command line that produced a run, shell-quoted, the home folder written `~` (as the original). */
export function reproCommand(argv: readonly string[] = proc.argv.slice(2)): string {
  const home = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.HOME;
  return ['refract',
    ...argv].map((a) => (home && (a === home || a.startsWith(home + '/')) ? '~' + a.slice(home.length) : a))
    .map((a) => (/^[\w.,=/:~-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export type ScoreFlags = Values<typeof SCORE_OPTIONS>;

/** Score flags -> runRefract options (without backend, model, progress and signal). */
export async function scoreOptions(cmd: string, v: Omit<ScoreFlags, 'candidate'> & { candidate?: string },
  modelCtx: number): Promise<Omit<RunRefractOptions, 'backend' | 'model'>> {
  return asUsage(cmd, async () => {
    if (!v.candidate) throw new InputError('cli', '--candidate is required (e.g. --candidate ctk=q8_0,ctv=q4_0)');
    const candidate = parseKvConfig(v.candidate, '--candidate').label;
    const reference = parseKvConfig(v.reference ?? DEFAULT_REFERENCE_KV, '--reference').label;
    if (choice('axis-a', v['axis-a'], ['trajectory', 'gtm'] as const, 'trajectory') === 'gtm') {
      throw new InputError('cli',
        "--axis-a gtm (REFRACT 0.1's retokenized GTM, deprecated upstream) is not ported; use --axis-a trajectory");
    }
    const rniah = v['axis-rniah'] || v.full ? {
      haystack: v['rniah-haystack'] ? await text(cmd, v['rniah-haystack']) : undefined,
      upTo: number('rniah-up-to', v['rniah-up-to'], 16384, positive, WHOLE),
      lengths: list('rniah-lengths', v['rniah-lengths'], positive),
      positions: list('rniah-positions', v['rniah-positions'], (p) => p >= 0 && p <= 1),
      nTrials: number('rniah-trials', v['rniah-trials'], 1, positive, WHOLE),
      ctxMax: v['rniah-ctx-max'] === undefined ? undefined : number('rniah-ctx-max', v['rniah-ctx-max'], 0,
        positive, WHOLE),
      nPredict: number('rniah-n-predict', v['rniah-n-predict'], 256, positive, WHOLE),
      needle: nonEmpty('rniah-needle', v['rniah-needle']),
      question: nonEmpty('rniah-question', v['rniah-question']),
      needleKeyword: nonEmpty('rniah-keyword', v['rniah-keyword']),
    } : false;
    const plad = v['axis-plad'] ||
      v.full ? { tokenSource: choice('plad-ids', v['plad-ids'], ['retokenized', 'generated'] as const,
      'retokenized') } : false;
    return {
      reference, candidate,
      prompts: v.prompts ? parsePromptsJsonl(await text(cmd, v.prompts)) : undefined,
      corpus: v.corpus ? { text: await text(cmd, v.corpus), label: v.corpus } : undefined,
      chunks: number('chunks', v.chunks, DEFAULTS.chunks, positive, WHOLE),
      ctx: number('ctx', v.ctx, Math.min(DEFAULTS.ctx, modelCtx), positive, WHOLE),
      nPredict: number('n-predict', v['n-predict'], DEFAULTS.nPredict, positive, WHOLE),
      seed: number('seed', v.seed, DEFAULTS.seed, Number.isInteger),
      measureFloor: v['measure-floor'] ?? false, skipGtm: v['skip-gtm'] ?? false, skipKld: v['skip-kld'] ?? false,
      axes: { rniah, plad },
      reproCommand: reproCommand(),
    };
  });
}
