// The command line of the Node and Deno runners: node:util parseArgs over settings.ts's option table. Kept apart
// from the table so that the browser page, which reads its query string instead, does not import node:util.
import { parseArgs } from 'node:util';
import { OPTIONS, settingsFrom, usage, type Settings, type Values } from './settings.ts';

/** `--name value`, `--name=value` and flags, as the table defines them; throws a one-line error and the usage. */
export function parseBenchFlags(argv: string[]): { settings: Settings; help: boolean; values: Values } {
  const options = Object.fromEntries(OPTIONS.map((o) => [o.name, {
    type: o.arg ? 'string' as const : 'boolean' as const, ...(o.short ? { short: o.short } : {}),
  }]));
  let values: Values;
  try {
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (e) {
    throw new Error(`[bench] ${(e as Error).message}\n${usage()}`);
  }
  const help = values.help === true;
  return { settings: settingsFrom(values), help, values };
}
