// Pieces both CLIs share (Node and Deno): model location, flag parsing helpers, the GPU, file output.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DeviceLostError, HrmError, InputError, embeddedModelUrl } from '../index.ts';
import { UsageError } from '../advanced.ts';
import type { NetOptions } from '../advanced.ts';

type Proc = {
  stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown }; exitCode?: number; argv: string[];
  pid: number;
  env?: Record<string, string | undefined>;
  on?(event: 'unhandledRejection' | 'rejectionHandled', f: (e: unknown) => void): unknown;
};
export const proc = (globalThis as unknown as { process: Proc }).process;
export const out = (s: string) => proc.stdout.write(s);
export const err = (s: string) => proc.stderr.write(s);

/** Warnings of the library (a tolerated config oddity), one line each on stderr. */
export const warn = (m: string) => err(`warning: ${m}\n`);

/** The embedded default model's folder, next to src/ (and dist/) in the package. */
export const EMBEDDED_DIR = decodeURIComponent(embeddedModelUrl().pathname);

/** Seconds from an environment variable (unset: the library's default). */
function envSeconds(name: string): number | undefined {
  const v = (proc.env ?? {})[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!(n > 0 && Number.isFinite(n))) throw new UsageError('cli',
    `${name}=${JSON.stringify(v)} is not valid (expected seconds > 0)`);
  return n * 1000;
}

/**
 * The CLIs' download settings: retries are said on stderr; HRM_CONNECT_TIMEOUT and HRM_IDLE_TIMEOUT (seconds)
 * override the deadlines for the response headers and for each body read.
 */
export function netOptions(): NetOptions {
  const [connectTimeoutMs, idleTimeoutMs] = [envSeconds('HRM_CONNECT_TIMEOUT'), envSeconds('HRM_IDLE_TIMEOUT')];
  return { onRetry: warn, connectTimeoutMs, idleTimeoutMs };
}

type Options = NonNullable<ParseArgsConfig['options']>;
type ParsedFlags<T extends Options> =
  ReturnType<typeof parseArgs<{ args: string[]; options: T; allowPositionals: boolean; strict: true }>>;

/**
 * parseArgs, with its errors as one-line UsageErrors naming the flag. A value starting with '-' right after a
 * string flag (`--max-tokens -1`) is taken as that flag's value, so the flag's own check refuses it by name.
 */
export function parseFlags<T extends Options>(args: string[], options: T, allowPositionals = false): ParsedFlags<T> {
  const short = new Map(Object.entries(options).filter(([, o]) => o.short).map(([k, o]) => [`-${o.short}`, k]));
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = args[i].startsWith('--') ? args[i].slice(2) : short.get(args[i]);
    if (name && options[name]?.type === 'string' &&
      /^-\d|^-\.\d/.test(args[i + 1] ?? '')) joined.push(`--${name}=${args[++i]}`);
    else joined.push(args[i]);
  }
  try {
    return parseArgs({ args: joined, options, allowPositionals, strict: true });
  } catch (e) {
    throw asUsageError(e) ?? e;
  }
}

/** node:util parseArgs's errors (its own TypeErrors with a code) as one-line UsageErrors naming the flag; else null. */
function asUsageError(e: unknown): UsageError | null {
  if (e instanceof UsageError) return e;
  const code = (e as { code?: string }).code ?? '';
  if (!code.startsWith('ERR_PARSE_ARGS')) return null;
  const text = (e as Error).message;
  const flag = /'(-[^' ]+)/.exec(text)?.[1] ?? '';
  const arg = /argument '([^']*)'/.exec(text)?.[1] ?? '';
  return new UsageError('cli', code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? `unknown flag ${flag}`
    : code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' ? (/does not take an argument/.test(text) ?
      `${flag} takes no value` : `${flag} needs a value`)
      : code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' ? `unexpected argument ${JSON.stringify(arg)}` : text);
}

/** A flag's value read by a library parser: its InputError is a mistake in the command line (exit 2). */
export function flagValue<T>(parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (!(e instanceof InputError) || e instanceof UsageError) throw e;
    throw new UsageError(e.op, e.message.slice(e.op.length + 3));
  }
}

/** A numeric flag; `what` says in the error what `check` wants. */
export function number(flag: string, v: string | undefined, dflt: number,
  check: (n: number) => boolean = Number.isFinite, what = 'a number'): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || !check(n)) throw new UsageError('cli',
    `--${flag} ${JSON.stringify(v)} is not valid (expected ${what})`);
  return n;
}

export function choice<T extends string>(flag: string, v: string | undefined, options: readonly T[], dflt: T): T {
  if (v === undefined) return dflt;
  if (!options.includes(v as T)) throw new UsageError('cli',
    `--${flag} must be one of ${options.join(', ')} (got ${JSON.stringify(v)})`);
  return v as T;
}

/** node:fs/promises, imported when first needed (the CLIs' modules also load under Deno). */
export const fsp = () => import(/* @vite-ignore */ 'node:' +
  'fs/promises') as Promise<typeof import('node:fs/promises')>;
const dirOf = (path: string) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) || '/' : '.');

/** Refuse an output path that cannot be written, before any model work (creates nothing). */
export async function checkWritable(flag: string, path: string): Promise<void> {
  const fs = await fsp();
  if (path.trim() === '') throw new UsageError('cli', `--${flag} is empty; give a file path`);
  const why = (e: unknown) => (e as { code?: string }).code ?? (e as Error).message;
  const st = await fs.stat(path).catch(() => null);
  if (st?.isDirectory()) throw new InputError('cli', `--${flag} ${path} is a directory; give a file path`);
  if (!st && !(await fs.stat(dirOf(path)).catch(() => null))?.isDirectory()) throw new InputError('cli',
    `--${flag} ${path}: folder ${dirOf(path)} does not exist`);
  try {
    await fs.access(st ? path : dirOf(path), fs.constants.W_OK);
  } catch (e) {
    throw new InputError('cli',
      `--${flag} ${path} cannot be written (${st ? 'file' : `folder ${dirOf(path)}`}: ${why(e)})`);
  }
}

/** Write a whole file or nothing: into a temporary file next to it, renamed over the target when complete. */
export async function writeFile(path: string, data: Uint8Array | string): Promise<void> {
  const fs = await fsp();
  const tmp = `${path}.${proc.pid}.partial`;
  try {
    await fs.writeFile(tmp, data);
    await fs.rename(tmp, path);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw new InputError('cli', `cannot write ${path}: ${(e as Error).message}`);
  }
}

export async function readFile(path: string): Promise<Uint8Array> {
  const fs = await fsp();
  try { return new Uint8Array(await fs.readFile(path)); } catch (e) { throw new InputError('cli',
    `cannot read ${path}: ${(e as Error).message}`); }
}

/**
 * A typed error as the CLI prints it: the command, then the message without the library's `[op]` prefix (the name
 * of an internal function means nothing to the user); the error's class where it is not bad input (a lost device,
 * a download that failed), since that says what went wrong.
 */
export function cliMessage(where: string, e: HrmError): string {
  const text = e.message.startsWith(`[${e.op}] `) ? e.message.slice(e.op.length + 3) : e.message;
  return `${where}: ${e instanceof InputError ? '' : `${e.name}: `}${text}`;
}

/**
 * Run a CLI main: typed errors print their message alone (exit 1); a UsageError also prints the command's usage
 * (`usage(command)`, exit 2); anything else prints its stack (a bug).
 */
export async function run(main: (argv: string[]) => Promise<void>,
  usage: (command: string | undefined) => string = () => '', tool = 'hrm',
  commands: readonly string[] = []): Promise<void> {
  const argv = proc.argv.slice(2);
  const where = commands.includes(argv[0]) ? `${tool} ${argv[0]}` : tool;
  // A lost device rejects every GPU step queued ahead; the one the command meets first is reported below, and
  // the others must not each crash the process with a stack.
  proc.on?.('unhandledRejection', (e) => { if (!(e instanceof DeviceLostError)) throw e; });
  proc.on?.('rejectionHandled', () => {});
  try {
    await main(argv);
  } catch (thrown) {
    const e = asUsageError(thrown) ?? thrown;
    if (e instanceof UsageError) {
      const u = usage(argv[0]).trimEnd();
      err(`${cliMessage(where, e)}\n${u ? `${u}\n` : ''}`);
      proc.exitCode = 2;
      return;
    }
    err(`${e instanceof HrmError ? cliMessage(where, e) : (e as Error)?.stack ?? String(e)}\n`);
    proc.exitCode = 1;
  }
}
