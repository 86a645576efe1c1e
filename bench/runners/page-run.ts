// What both browser runners (bench/runners/browser.ts here, bench/chrome/run.ts on the H200) do with the bench page:
// build its query from the bench options, and collect what it leaves on window into --out. The page cannot read files,
// so `--anchors FILE` (bench/suites/torch-anchors.py's JSON, measured in the same call) travels as its text
// (?anchors-json=), and so does `--read-probe FILE` (?read-probe-json=).
import type { Page } from 'puppeteer-core';
import type { BenchResult } from '../harness/result.ts';
import type { Rendered } from '../harness/report.ts';
import { readAnchors } from '../harness/anchors.ts';
import { readProbeFile } from '../harness/read-probe.ts';
import { saveAll, saveJson } from '../harness/output.ts';
import { parseBenchFlags } from '../harness/flags.ts';
import { ANCHORS_JSON, READ_PROBE_JSON } from '../harness/settings.ts';

/**
 * The bench page's query: every option given in `args` by its name in settings.ts's table (?config=tiny&quick),
 * the anchors and read probe files' JSON as ?anchors-json= and ?read-probe-json=, and `extra` (names that are no
 * option) as given.
 */
export function pageQuery(args: string[], extra: Record<string, string>): URLSearchParams {
  const q = new URLSearchParams();
  const { values } = parseBenchFlags(args);
  for (const [name, v] of Object.entries(values)) if (v !== undefined && v !== false) q.set(name, v === true ? '' : v);
  if (typeof values.anchors === 'string') q.set(ANCHORS_JSON, JSON.stringify(readAnchors(values.anchors)));
  const probe = values['read-probe'];
  if (typeof probe === 'string') q.set(READ_PROBE_JSON, JSON.stringify(readProbeFile(probe)));
  for (const [k, v] of Object.entries(extra)) {
    if (q.has(k)) throw new Error(`[bench] the page's query parameter '${k}' is a bench option`);
    q.set(k, v);
  }
  return q;
}

/**
 * Poll the opened bench page until it finishes or `until` (epoch ms) passes: its partial JSON is saved into `out`
 * after every section, its files when it ends. Returns the files written, the Markdown, or the page's error.
 */
export async function collectPage(
  page: Page, out: string, until: number,
): Promise<{ files?: string[]; md?: string; error?: string }> {
  type State = { done?: { rendered?: Rendered; error?: string }; partial?: BenchResult };
  for (;;) {
    const s = (await page.evaluate('({ done: window.__bench, partial: window.__partial })')) as State;
    if (s.partial) saveJson(out, s.partial);
    if (s.done?.error) return { error: s.done.error };
    if (s.done?.rendered) return { files: saveAll(out, s.done.rendered), md: s.done.rendered.md };
    if (Date.now() > until) return { error: 'the page did not finish in time (its partial JSON is saved)' };
    await new Promise((ok) => setTimeout(ok, 2000));
  }
}
