// Pieces both CLIs share (Node and Deno): model location, flag parsing helpers, the GPU, file output.
import { InputError } from '../tensor/errors.ts';
import { dirFiles, urlFiles, type ModelFiles } from '../hrm/files.ts';
import { parseKvConfig } from '../hrm/kv-string.ts';
import type { KvSpec } from '../hrm/cache.ts';

/** The embedded default model, next to src/ (and dist/) in the package. */
export const EMBEDDED_MODEL = decodeURIComponent(new URL('../../models/hrm-text-brown-6m', import.meta.url).pathname);

export function modelFiles(model: string | undefined): ModelFiles {
  if (!model) return dirFiles(EMBEDDED_MODEL);
  return /^https?:\/\//.test(model) ? urlFiles(model) : dirFiles(model);
}

export function kvSpec(kv: string | undefined): KvSpec {
  if (!kv) return { k: null, v: null };
  const c = parseKvConfig(kv);
  return { k: c.k.bits, v: c.v.bits };
}

export function number(flag: string, v: string | undefined, dflt: number, check: (n: number) => boolean = Number.isFinite): number {
  if (v === undefined) return dflt;
  const n = Number(v);
  if (v.trim() === '' || !check(n)) throw new InputError('cli', `--${flag} ${JSON.stringify(v)} is not valid`);
  return n;
}

export function choice<T extends string>(flag: string, v: string | undefined, options: readonly T[], dflt: T): T {
  if (v === undefined) return dflt;
  if (!options.includes(v as T)) throw new InputError('cli', `--${flag} must be one of ${options.join(', ')} (got ${JSON.stringify(v)})`);
  return v as T;
}

export async function writeFile(path: string, data: Uint8Array | string): Promise<void> {
  const fs = (await import(/* @vite-ignore */ 'node:' + 'fs/promises')) as typeof import('node:fs/promises');
  await fs.writeFile(path, data);
}

export async function readFile(path: string): Promise<Uint8Array> {
  const fs = (await import(/* @vite-ignore */ 'node:' + 'fs/promises')) as typeof import('node:fs/promises');
  try { return new Uint8Array(await fs.readFile(path)); } catch (e) { throw new InputError('cli', `cannot read ${path}: ${(e as Error).message}`); }
}

type Proc = { stdout: { write(s: string): unknown }; stderr: { write(s: string): unknown }; exitCode?: number; argv: string[] };
export const proc = (globalThis as unknown as { process: Proc }).process;
export const out = (s: string) => proc.stdout.write(s);
export const err = (s: string) => proc.stderr.write(s);

/** Run a CLI main: typed errors print their message alone; anything else with its stack. */
export async function run(main: (argv: string[]) => Promise<void>): Promise<void> {
  try {
    await main(proc.argv.slice(2));
  } catch (e) {
    const named = e instanceof Error && e.name !== 'Error' && e.name !== 'TypeError' && e.name !== 'RangeError';
    err(`${named ? `${e.name}: ${(e as Error).message}` : (e as Error)?.stack ?? String(e)}\n`);
    proc.exitCode = 1;
  }
}
