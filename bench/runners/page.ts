// The benchmark page: the same harness as the Node and Deno entries, in the browser's WebGPU. Options come from the
// query string by their names in settings.ts's table (?config=tiny&quick&prefill=4); the result and its rendered
// files are left on window for the runner to collect (window.__partial after each section, window.__bench at the
// end; runners/page-run.ts). bench/chrome/run.ts adds ?runtime=chrome (the name in the files), ?mlx=URL
// (tests/fixtures/mlx/ served: --check-sgmat's ops) and ?parity=1 (then runners/parity.ts's checks,
// window.__parity); both runners pass --anchors' JSON as ?anchors-json=, --read-probe's as ?read-probe-json=.
import { runBench } from '../harness/harness.ts';
import { type BenchResult } from '../harness/result.ts';
import { render, type Rendered } from '../harness/report.ts';
import { ANCHORS_JSON, READ_PROBE_JSON, settingsFrom, valuesFromQuery } from '../harness/settings.ts';
import { pageParity } from './page-parity.ts';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { urlSource } from '../../src/io/sources.ts';

const w = window as unknown as {
  __bench?: { rendered?: Rendered; error?: string }; __partial?: BenchResult;
  __parity?: { md: string; failed: number } | { error: string };
};
const out = document.getElementById('out')!;
const query = new URLSearchParams(location.search);
const runtime = query.get('runtime');
const mlx = query.get('mlx');
const named = (r: BenchResult): BenchResult => (runtime ? { ...r, env: { ...r.env, runtime } } : r);
const print = (m: string) => { console.log(m); out.textContent += m + '\n'; };

try {
  const s = settingsFrom(valuesFromQuery(query));
  const result = await runBench(s, {
    log: print,
    warn: (m) => { console.warn(m); out.textContent += m + '\n'; },
    update: (r) => { w.__partial = JSON.parse(JSON.stringify(named(r))) as BenchResult; },
    commit: query.get('commit'),
    timestamps: query.get('timestamps') ?? undefined,
    anchors: query.has(ANCHORS_JSON) ? JSON.parse(query.get(ANCHORS_JSON)!) : undefined,
    readProbe: query.has(READ_PROBE_JSON) ? JSON.parse(query.get(READ_PROBE_JSON)!) : undefined,
    ...(mlx ? { mlxOps: () => SafetensorsFile.open(urlSource(`${mlx}ops.safetensors`)) } : {}),
  });
  const rendered = await render(named(result));
  out.textContent += '\n' + rendered.md;
  w.__bench = { rendered };
} catch (e) {
  const msg = e instanceof Error ? e.stack ?? e.message : String(e);
  out.textContent += `\nERROR ${msg}`;
  w.__bench = { error: msg };
}
if (query.has('parity') && mlx) {
  try {
    w.__parity = await pageParity(mlx, print);
    print(w.__parity.md);
  } catch (e) {
    w.__parity = { error: e instanceof Error ? e.stack ?? e.message : String(e) };
    print(`parity ERROR ${w.__parity.error}`);
  }
}
