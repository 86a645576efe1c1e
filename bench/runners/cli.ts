// The command line shared by the Node and Deno entries: parse flags, run the harness, write JSON / Markdown / SVG
// into --out, print the summary. Returns the exit code.
import { runBench } from '../harness/harness.ts';
import { render } from '../harness/report.ts';
import { saveAll, saveJson } from '../harness/output.ts';
import { parseBenchFlags } from '../harness/flags.ts';
import { usage } from '../harness/settings.ts';
import { readAnchors } from '../harness/anchors.ts';
import { readProbeFile, type ReadProbe } from '../harness/read-probe.ts';
import { runtimeName } from '../../src/gpu/device.ts';
import { DAWN_EXACT_TIMESTAMPS } from '../../src/gpu/dawn.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { fileSource } from '../../src/io/sources.ts';
import { cpus, loadavg } from 'node:os';
import { commit } from './commit.ts';

/** The CPU the JavaScript runs on, and how busy the machine was: replay-bound figures differ by host. */
function host(): string {
  const c = cpus();
  return `${c[0]?.model.trim() ?? 'unknown CPU'} x ${c.length}, load ${loadavg().map((l) => l.toFixed(1)).join(' / ')}`;
}

export async function main(argv: string[]): Promise<number> {
  let parsed, readProbe: ReadProbe | undefined;
  try {
    parsed = parseBenchFlags(argv);
    if (parsed.settings.readProbe && !parsed.help) readProbe = readProbeFile(parsed.settings.readProbe);
  } catch (e) {
    console.error((e as Error).message);
    return 2;
  }
  if (parsed.help) { console.log(usage()); return 0; }
  const { settings } = parsed;
  const timestamps = runtimeName() === 'node'
    ? `timestamp-query, Dawn toggle ${DAWN_EXACT_TIMESTAMPS} (ns resolution)`
    : undefined;
  const result = await runBench(settings, {
    log: (m) => console.log(m),
    warn: (m) => console.error(m),
    update: (r) => { saveJson(settings.out, r); },
    commit: commit(),
    host: host(),
    timestamps,
    anchors: settings.anchors ? readAnchors(settings.anchors) : undefined,
    peers: settings.peers ? readAnchors(settings.peers, '--peers') : undefined,
    readProbe,
    mlxOps: () => SafetensorsFile.open(fileSource('tests/fixtures/mlx/ops.safetensors')),
  });
  const out = await render(result);
  const paths = saveAll(settings.out, out);
  console.log('\n' + out.md);
  console.log(`wrote ${paths.join(', ')}`);
  return 0;
}
