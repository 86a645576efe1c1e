// Headless Chrome on a machine with no node_modules and no network (the H200: bench/chrome-README.md): serves the
// built bench page and demo (bench/chrome-build.sh) with node:http on 127.0.0.1, drives the carried chromium with
// puppeteer-core (bundled in), and writes into --out (at most 8 files: the bench's JSON/MD/SVG, chrome-run.json,
// chrome-run.log, three demo screenshots). Phases, in this order, each timed and inside --deadline seconds:
//   probe  the flag sets of bench/chrome-flags.ts, until one gives an NVIDIA adapter (--probe-all: every set)
//   bench  bench/index.html with the bench options after `--` (default: the 1B shape's full run) plus --check-sgmat,
//          runtime `chrome`; then bench/parity.ts's checks in the page (--no-parity skips them)
//   demo   the demo: embedded model, a random 1B-shape checkpoint from 127.0.0.1 (--no-1b skips it), REFRACT
// usage: node runner.mjs [--phases probe,bench,demo] [--set NAME|auto] [--probe-all] [--chromium PATH] [--site DIR]
//        [--repo DIR] [--out DIR] [--deadline S] [--demo-tokens N] [--no-1b] [--no-parity] [-- bench options]
import { existsSync, mkdirSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'puppeteer-core';
import type { BenchResult } from './harness.ts';
import type { Rendered } from './report.ts';
import { saveAll, saveJson } from './output.ts';
import { FLAG_SETS, launchWith, probeFlagSets, type Probe } from './chrome-flags.ts';
import { runDemo, type DemoStep } from './chrome-demo.ts';
import { writeRandom1b } from './chrome-ckpt.ts';
import { serveStatic } from './chrome-serve.ts';

declare const __BENCH_COMMIT__: string | undefined;
const PHASES = ['probe', 'bench', 'demo'] as const;

function options(argv: string[]) {
  const cut = argv.indexOf('--');
  const own = cut < 0 ? argv : argv.slice(0, cut);
  const val = (k: string, d: string) => { const i = own.indexOf(k); if (i >= 0 && !own[i + 1]) throw new Error(`[chrome-run] ${k} needs a value`); return i >= 0 ? own[i + 1] : d; };
  const known = new Set(['--phases', '--set', '--probe-all', '--chromium', '--site', '--repo', '--out', '--deadline', '--demo-tokens', '--no-1b', '--no-parity']);
  for (const a of own) if (a.startsWith('--') && !known.has(a)) throw new Error(`[chrome-run] unknown option ${a} (bench options go after --)`);
  const here = dirname(fileURLToPath(import.meta.url));
  const phases = val('--phases', PHASES.join(',')).split(',');
  for (const p of phases) if (!(PHASES as readonly string[]).includes(p)) throw new Error(`[chrome-run] --phases: unknown phase '${p}' (${PHASES.join(', ')})`);
  const set = val('--set', 'auto');
  if (set !== 'auto' && !FLAG_SETS.some((s) => s.name === set)) throw new Error(`[chrome-run] --set: no flag set '${set}' (${FLAG_SETS.map((s) => s.name).join(', ')})`);
  const num = (k: string, d: number) => { const n = Number(val(k, String(d))); if (!(n > 0)) throw new Error(`[chrome-run] ${k} must be a positive number`); return n; };
  return {
    phases, set, probeAll: own.includes('--probe-all'), no1b: own.includes('--no-1b'), noParity: own.includes('--no-parity'),
    chromium: val('--chromium', process.env.CHROMIUM_PATH ?? '/opt/chrome-root/usr/lib/chromium/chromium'),
    site: resolve(val('--site', join(here, 'site'))), repo: resolve(val('--repo', '.')),
    out: resolve(val('--out', process.env.OUT ?? 'bench/results')), deadline: num('--deadline', 560), tokens: num('--demo-tokens', 16),
    bench: cut < 0 ? [] : argv.slice(cut + 1),
  };
}

async function main(argv: string[]): Promise<number> {
  const t0 = Date.now();
  const o = options(argv);
  const until = t0 + o.deadline * 1000;
  mkdirSync(o.out, { recursive: true });
  const logFile = join(o.out, 'chrome-run.log');
  writeFileSync(logFile, '');
  const say = (m: string) => { console.log(m); appendFileSync(logFile, m + '\n'); };
  const summary: Record<string, unknown> = { started: new Date(t0).toISOString(), options: o, phases: {} as Record<string, number> };
  const save = () => writeFileSync(join(o.out, 'chrome-run.json'), JSON.stringify(summary, null, 1) + '\n');
  const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    say(`== ${name} (${Math.round((until - t) / 1000)} s left)`);
    try { return await f(); } finally { (summary.phases as Record<string, number>)[name] = Date.now() - t; save(); }
  };
  if (!existsSync(o.chromium)) throw new Error(`[chrome-run] no chromium at ${o.chromium} (run bench/chrome-unpack.sh, or --chromium)`);
  for (const d of ['bench', 'demo']) if (!existsSync(join(o.site, d, 'index.html'))) throw new Error(`[chrome-run] no ${d}/index.html under ${o.site} (bench/chrome-build.sh)`);
  const probeDir = join(tmpdir(), 'hrm-chrome-probe');
  mkdirSync(probeDir, { recursive: true });
  writeFileSync(join(probeDir, 'index.html'), '<!doctype html><title>probe</title>');
  const ckptDir = join(tmpdir(), 'hrm-ckpt-1b');
  const mounts = { '': o.site, probe: probeDir, ckpt: ckptDir, 'tests/fixtures/mlx': join(o.repo, 'tests/fixtures/mlx'),
    'demo/models/hrm-text-brown-6m': join(o.repo, 'models/hrm-text-brown-6m') };
  const { server, url } = await serveStatic(mounts);
  let code = 0;
  try {
    let set = FLAG_SETS.find((s) => s.name === (o.set === 'auto' ? FLAG_SETS[0].name : o.set))!;
    if (o.phases.includes('probe')) {
      const probes: Probe[] = await timed('probe', () => probeFlagSets(o.chromium, `${url}/probe/`, { stopAtNvidia: !o.probeAll, perSetMs: 45_000, until, say }));
      summary.probes = probes;
      const pick = o.set !== 'auto' ? set : FLAG_SETS.find((s) => probes.find((p) => p.name === s.name)?.nvidia)
        ?? FLAG_SETS.find((s) => probes.find((p) => p.name === s.name)?.adapter);
      if (!pick) { say('[probe] no flag set gave an adapter: see chromeLog in chrome-run.json'); return 1; }
      set = pick;
    }
    summary.flagSet = set;
    say(`flag set: ${set.name} (${set.args.join(' ')})`);
    const chromeLog: string[] = [];
    const { browser, close } = await launchWith(o.chromium, set.args, chromeLog);
    try {
      summary.chrome = await browser.version();
      say(`chrome: ${summary.chrome}`);
      if (o.phases.includes('bench')) {
        const reserve = (o.noParity ? 15 : 75) + (o.phases.includes('demo') ? 200 : 0);
        const r = await timed('bench', () => bench(browser, url, o, Math.floor((until - Date.now()) / 1000) - reserve, until, say));
        summary.bench = r;
        if (r.error || (r.parityFailed ?? 0) > 0) code = 1;
      }
      if (o.phases.includes('demo')) {
        const steps: DemoStep[] = await timed('demo', async () => {
          let ckptUrl: string | null = null;
          if (!o.no1b) {
            const t = Date.now();
            if (!existsSync(join(ckptDir, 'done'))) {
              const bytes = writeRandom1b(ckptDir, join(o.repo, 'models/hrm-text-brown-6m'));
              writeFileSync(join(ckptDir, 'done'), String(bytes));
            }
            say(`1B-shape checkpoint in ${ckptDir} (${Date.now() - t} ms)`);
            ckptUrl = `${url}/ckpt`;
          }
          const page = await browser.newPage();
          page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warn') say(`[demo ${m.type()}] ${m.text()}`); });
          page.on('pageerror', (e) => say(`[demo page error] ${e instanceof Error ? e.message : String(e)}`));
          return runDemo(page, { url, ckptUrl, tokens: o.tokens, shot: (n) => join(o.out, n), until: until - 10_000 });
        });
        summary.demo = steps;
        for (const s of steps) say(`[demo] ${s.step}: ${s.state} in ${s.ms} ms; ${s.status}${s.error ? `; ERROR ${s.error}` : ''}\n  ${s.text.slice(0, 600).replace(/\n/g, '\n  ')}`);
        if (steps.some((s) => s.error || s.state === 'error' || s.state === 'failed')) code = 1;
      }
    } finally {
      await close();
      if (code) appendFileSync(logFile, `\n== Chrome's stderr (last 30 kB)\n${chromeLog.join('').slice(-30_000)}\n`);
    }
  } finally {
    server.close();
    summary.ms = Date.now() - t0;
    save();
  }
  return code;
}

/** The bench page with the given options (as bench/browser.ts runs it), then its parity checks. */
async function bench(browser: Browser, url: string, o: ReturnType<typeof options>, budget: number, until: number, say: (m: string) => void) {
  const args = [...o.bench];
  if (!args.includes('--check-sgmat')) args.push('--check-sgmat');
  // As bench/h200.sh gives the Node run: 300 s, less where the call's deadline leaves less.
  if (!args.includes('--budget')) args.push('--budget', String(Math.max(30, Math.min(300, budget))));
  const q = new URLSearchParams();
  for (const a of args) q.append('arg', a);
  q.set('runtime', 'chrome');
  q.set('mlx', `${url}/tests/fixtures/mlx/`);
  if (!o.noParity) q.set('parity', '1');
  if (typeof __BENCH_COMMIT__ === 'string') q.set('commit', __BENCH_COMMIT__);
  q.set('timestamps', 'timestamp-query (Chrome with --enable-webgpu-developer-features: unquantized)');
  say(`bench options: ${args.join(' ')}`);
  const page = await browser.newPage();
  page.on('console', (m) => say(m.type() === 'log' ? m.text() : `[page ${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => say(`[page error] ${e instanceof Error ? e.message : String(e)}`));
  await page.goto(`${url}/bench/index.html?${q}`);
  const r: { files?: string[]; error?: string; parity?: string; parityFailed?: number } = {};
  const poll = () => new Promise((ok) => setTimeout(ok, 2000));
  for (;;) {
    const s = (await page.evaluate('({ done: window.__bench, partial: window.__partial })')) as { done?: { rendered?: Rendered; error?: string }; partial?: BenchResult };
    if (s.partial) saveJson(o.out, s.partial);
    if (s.done?.error) { r.error = s.done.error; say(`[bench] ${r.error}`); break; }
    if (s.done?.rendered) { r.files = saveAll(o.out, s.done.rendered); say(`wrote ${r.files.join(', ')}`); break; }
    if (Date.now() > until - 20_000) { r.error = 'the page did not finish in time (its partial JSON is saved)'; say(`[bench] ${r.error}`); return r; }
    await poll();
  }
  while (!o.noParity) {
    const p = (await page.evaluate('window.__parity')) as { md?: string; failed?: number; error?: string } | undefined;
    if (p) { r.parity = p.md ?? `ERROR ${p.error}`; r.parityFailed = p.failed ?? 1; break; }
    if (Date.now() > until - 15_000) { r.parity = 'the parity checks did not finish in time'; r.parityFailed = 1; break; }
    await poll();
  }
  await page.close();
  return r;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => { console.error(e instanceof Error ? e.message : e); process.exit(1); });
