// The command line shared by the Node and Deno entries: parse flags, run the harness, write JSON / Markdown / SVG
// into --out, print the summary. Returns the exit code.
import { runBench } from '../harness/harness.ts';
import { render } from '../harness/report.ts';
import { saveAll, saveJson } from '../harness/output.ts';
import { parseArgs, USAGE } from '../harness/settings.ts';
import { readAnchors } from '../harness/anchors.ts';
import { DAWN_EXACT_TIMESTAMPS, runtimeName } from '../../src/gpu/device.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import { cpus, loadavg } from 'node:os';

/** The CPU the JavaScript runs on, and how busy the machine was: replay-bound figures differ by host. */
function host(): string {
  const c = cpus();
  return `${c[0]?.model.trim() ?? 'unknown CPU'} x ${c.length}, load ${loadavg().map((l) => l.toFixed(1)).join(' / ')}`;
}

/** Set by bench/pack.sh when it bundles (the machine that runs the bundle has no git checkout). */
declare const __BENCH_COMMIT__: string | undefined;

async function commit(): Promise<string | null> {
  if (typeof __BENCH_COMMIT__ === 'string') return __BENCH_COMMIT__;
  try {
    const { execFileSync } = await import('node:child_process');
    const git = (...a: string[]) => execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain', '--untracked-files=no') ? '+dirty' : '');
  } catch {
    return null;
  }
}

export async function main(argv: string[]): Promise<number> {
  let s;
  try {
    s = parseArgs(argv);
  } catch (e) {
    console.error((e as Error).message);
    return 2;
  }
  if (s.help) { console.log(USAGE); return 0; }
  const { help: _, ...settings } = s;
  const timestamps = runtimeName() === 'node' ? `timestamp-query, Dawn toggle ${DAWN_EXACT_TIMESTAMPS} (ns resolution)` : undefined;
  const result = await runBench(settings, {
    log: (m) => console.log(m),
    warn: (m) => console.error(m),
    update: (r) => { saveJson(settings.out, r); },
    commit: await commit(),
    host: host(),
    timestamps,
    anchors: settings.anchors ? readAnchors(settings.anchors) : undefined,
    mlxOps: () => SafetensorsFile.open(fileSource('tests/fixtures/mlx/ops.safetensors')),
  });
  const out = await render(result);
  const paths = saveAll(settings.out, out);
  console.log('\n' + out.md);
  console.log(`wrote ${paths.join(', ')}`);
  return 0;
}
