// Deno entry (wgpu): `deno run -A bench/runners/deno.ts [options]` (npm packages come from node_modules; deno.json).
import { main } from './cli.ts';

const deno = (globalThis as unknown as { Deno: { args: string[]; exit(code: number): never } }).Deno;
deno.exit(await main(deno.args));
