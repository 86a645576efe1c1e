// The benchmark page: the same harness as the Node and Deno entries, in the browser's WebGPU. Flags come from the
// query string (?arg=--quick&arg=--config&arg=tiny); the result and its rendered files are left on window for
// bench/browser.ts to collect (window.__partial after each section, window.__bench at the end).
import { runBench, type BenchResult } from './harness.ts';
import { render, type Rendered } from './report.ts';
import { parseArgs } from './settings.ts';

const w = window as unknown as { __bench?: { rendered?: Rendered; error?: string }; __partial?: BenchResult };
const out = document.getElementById('out')!;
const query = new URLSearchParams(location.search);

try {
  const { help: _, ...s } = parseArgs(query.getAll('arg'));
  const result = await runBench(s, {
    log: (m) => { console.log(m); out.textContent += m + '\n'; },
    warn: (m) => { console.warn(m); out.textContent += m + '\n'; },
    update: (r) => { w.__partial = JSON.parse(JSON.stringify(r)) as BenchResult; },
    commit: query.get('commit'),
    timestamps: query.get('timestamps') ?? undefined,
  });
  const rendered = await render(result);
  out.textContent += '\n' + rendered.md;
  w.__bench = { rendered };
} catch (e) {
  const msg = e instanceof Error ? e.stack ?? e.message : String(e);
  out.textContent += `\nERROR ${msg}`;
  w.__bench = { error: msg };
}
