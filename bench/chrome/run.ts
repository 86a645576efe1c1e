// Headless Chrome on a machine with no node_modules and no network (the H200: bench/chrome-README.md): serves the
// built bench page and demo (bench/chrome-build.sh) with node:http on 127.0.0.1, drives the carried chromium with
// puppeteer-core (bundled in), and writes into --out (at most 8 files: the bench's JSON/MD/SVG, chrome-run.json,
// chrome-run.log, three demo screenshots). Phases, in this order, each timed and inside --deadline seconds:
//   probe  the flag sets of bench/chrome/flags.ts, until one gives an NVIDIA adapter (--probe-all: every set); the
//          rest runs with that set (or --set NAME; with none, the call ends with 1)
//   bench  the bench page (bench/runners/index.html, built) with the bench options after `--` (default: the 1B
//          shape's full run) plus --check-sgmat, runtime `chrome`, after the PyTorch anchors of the same call
//          (bench/torch-anchors.sh; --no-anchors skips them); then bench/runners/parity.ts's checks in the page
//          (--no-parity skips them)
//   demo   the demo: embedded model, a random 1B-shape checkpoint from 127.0.0.1 (--no-1b skips it), REFRACT
// usage: node runner.mjs [--phases probe,bench,demo] [--set NAME|auto] [--probe-all] [--chromium PATH] [--site DIR]
//        [--repo DIR] [--out DIR] [--deadline S] [--demo-tokens N] [--no-1b] [--ckpt-shape 1b|tiny] [--no-parity]
//        [--no-anchors] [--any-adapter] [-- bench options]   (CPU drivers: --any-adapter takes a set without an
//        NVIDIA adapter, --ckpt-shape tiny writes the checkpoint at the embedded model's shape)
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Browser, Page } from 'puppeteer-core';
import { collectPage, pageQuery } from '../runners/page-run.ts';
import { FLAG_SETS, launchWith, probeFlagSets, type Probe } from './flags.ts';
import { runDemo, type DemoStep } from './demo.ts';
import { writeRandomCheckpoint } from './ckpt.ts';
import { HRM_TEXT_1B, parseConfig } from '../../src/hrm/config.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';
import { serveStatic } from './serve.ts';

declare const __BENCH_COMMIT__: string | undefined;
const PHASES = ['probe', 'bench', 'demo'] as const;
const EMBEDDED = `models/${EMBEDDED_MODEL}`;

const OPTIONS = {
  phases: { type: 'string', default: PHASES.join(',') }, set: { type: 'string', default: 'auto' },
  'probe-all': { type: 'boolean', default: false }, chromium: { type: 'string' }, site: { type: 'string' },
  repo: { type: 'string', default: '.' }, out: { type: 'string' }, deadline: { type: 'string', default: '560' },
  'demo-tokens': { type: 'string', default: '16' }, 'no-1b': { type: 'boolean', default: false },
  'ckpt-shape': { type: 'string', default: '1b' }, 'any-adapter': { type: 'boolean', default: false },
  'no-parity': { type: 'boolean', default: false }, 'no-anchors': { type: 'boolean', default: false },
} as const;

function options(argv: string[]) {
  const cut = argv.indexOf('--');
  const parse = () => {
    try {
      return parseArgs({ args: cut < 0 ? argv : argv.slice(0, cut), options: OPTIONS, strict: true }).values;
    } catch (e) {
      return fail(`${(e as Error).message} (bench options go after --)`);
    }
  };
  const v = parse();
  const phases = v.phases!.split(',');
  for (const p of phases) {
    if (!(PHASES as readonly string[]).includes(p)) fail(`--phases: no phase '${p}' (${PHASES.join(', ')})`);
  }
  if (v.set !== 'auto' && !FLAG_SETS.some((s) => s.name === v.set)) {
    fail(`--set: no flag set '${v.set}' (${FLAG_SETS.map((s) => s.name).join(', ')})`);
  }
  const num = (k: 'deadline' | 'demo-tokens') =>
    (Number(v[k]) > 0 ? Number(v[k]) : fail(`--${k} must be a positive number`));
  const shape = v['ckpt-shape'];
  if (shape !== '1b' && shape !== 'tiny') fail(`--ckpt-shape must be 1b or tiny (got '${shape}')`);
  const here = dirname(fileURLToPath(import.meta.url));
  return {
    ckptShape: shape as '1b' | 'tiny',
    phases, set: v.set!, probeAll: v['probe-all']!, anyAdapter: v['any-adapter']!, no1b: v['no-1b']!,
    noParity: v['no-parity']!, noAnchors: v['no-anchors']!,
    chromium: v.chromium ?? process.env.CHROMIUM_PATH ?? '/opt/chrome-root/usr/lib/chromium/chromium',
    site: resolve(v.site ?? join(here, 'site')), repo: resolve(v.repo!),
    out: resolve(v.out ?? process.env.OUT ?? 'bench/results'),
    deadline: num('deadline'), tokens: num('demo-tokens'), bench: cut < 0 ? [] : argv.slice(cut + 1),
  };
}

type Opts = ReturnType<typeof options>;
type Say = (m: string) => void;
const fail = (m: string): never => { throw new Error(`[chrome-run] ${m}`); };

/** Log every page message and failed request of `page` under `tag` (all of them, or only warnings and errors). */
function relay(page: Page, tag: string, say: Say, all: boolean): void {
  page.on('console', (m) => {
    const t = m.type();
    if (all || t === 'error' || t === 'warn') say(t === 'log' ? m.text() : `[${tag} ${t}] ${m.text()}`);
  });
  page.on('pageerror', (e) => say(`[${tag} page error] ${e instanceof Error ? e.message : String(e)}`));
  page.on('response', (res) => { if (res.status() >= 400) say(`[${tag}] HTTP ${res.status()} ${res.url()}`); });
}

/**
 * The flag set to run with: --set's, else the probe's first NVIDIA set (with --any-adapter, else its first set with
 * any adapter: CPU drivers here), else null.
 */
async function chooseSet(o: Opts, url: string, until: number, summary: Record<string, unknown>, say: Say) {
  const named = FLAG_SETS.find((s) => s.name === (o.set === 'auto' ? FLAG_SETS[0].name : o.set))!;
  if (!o.phases.includes('probe')) return named;
  const probes: Probe[] = await probeFlagSets(o.chromium, `${url}/probe/`,
    { stopAtNvidia: !o.probeAll, perSetMs: 45_000, until, say });
  summary.probes = probes;
  const got = (pred: (p: Probe) => boolean) =>
    FLAG_SETS.find((s) => probes.some((p) => p.name === s.name && pred(p))) ?? null;
  return o.set !== 'auto' ? named : got((p) => p.nvidia) ?? (o.anyAdapter ? got((p) => !!p.adapter) : null);
}

async function main(argv: string[]): Promise<number> {
  const t0 = Date.now();
  const o = options(argv);
  const until = t0 + o.deadline * 1000;
  mkdirSync(o.out, { recursive: true });
  const logFile = join(o.out, 'chrome-run.log');
  writeFileSync(logFile, '');
  const say: Say = (m) => { console.log(m); appendFileSync(logFile, m + '\n'); };
  const phases: Record<string, number> = {};
  const summary: Record<string, unknown> = { started: new Date(t0).toISOString(), options: o, phases };
  const save = () => writeFileSync(join(o.out, 'chrome-run.json'), JSON.stringify(summary, null, 1) + '\n');
  const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    say(`== ${name} (${Math.round((until - t) / 1000)} s left)`);
    try { return await f(); } finally { phases[name] = Date.now() - t; save(); }
  };
  if (!existsSync(o.chromium)) fail(`no chromium at ${o.chromium} (run bench/chrome-unpack.sh, or --chromium)`);
  for (const d of ['bench', 'demo']) {
    if (!existsSync(join(o.site, d, 'index.html'))) fail(`no ${d}/index.html under ${o.site} (bench/chrome-build.sh)`);
  }
  const probeDir = join(tmpdir(), 'hrm-chrome-probe');
  mkdirSync(probeDir, { recursive: true });
  writeFileSync(join(probeDir, 'index.html'), '<!doctype html><title>probe</title>');
  const ckptDir = join(tmpdir(), `hrm-ckpt-${o.ckptShape}`);
  const { server, url } = await serveStatic({ '': o.site, probe: probeDir, ckpt: ckptDir,
    'tests/fixtures/mlx': join(o.repo, 'tests/fixtures/mlx'), [`demo/${EMBEDDED}`]: join(o.repo, EMBEDDED) });
  let code = 0;
  try {
    const choose = () => chooseSet(o, url, until, summary, say);
    const set = await timed(o.phases.includes('probe') ? 'probe' : 'flag set', choose);
    summary.flagSet = set;
    if (!set) {
      say('no flag set gave an NVIDIA adapter: see each probe in chrome-run.json (--set NAME runs one anyway)');
      return 1;
    }
    say(`flag set: ${set.name} (${set.args.join(' ')})`);
    if (!o.phases.some((p) => p !== 'probe')) return 0;
    const chromeLog: string[] = [];
    const { browser, close } = await launchWith(o.chromium, set.args, chromeLog);
    try {
      summary.chrome = await browser.version();
      say(`chrome: ${summary.chrome}`);
      if (o.phases.includes('bench')) {
        const reserve = (o.noParity ? 15 : 75) + (o.phases.includes('demo') ? 200 : 0);
        // A failure of the page or of Chrome is recorded, and the demo still runs.
        const run = () => bench(browser, url, o, Math.floor((until - Date.now()) / 1000) - reserve, until, say)
          .catch((e: unknown) => ({ error: e instanceof Error ? e.message : String(e), parityFailed: undefined }));
        const r = await timed('bench', run);
        if (r.error) say(`[bench] ${r.error}`);
        summary.bench = r;
        if (r.error || (r.parityFailed ?? 0) > 0) code = 1;
      }
      if (o.phases.includes('demo')) {
        const failed = (e: unknown): DemoStep[] => [{ step: 'demo', ms: 0, state: 'failed', status: '', text: '',
          error: e instanceof Error ? e.message : String(e) }];
        const steps = await timed('demo', () => demo(browser, url, ckptDir, o, until, say).catch(failed));
        if (steps[0]?.step === 'demo') say(`[demo] ${steps[0].error}`);
        summary.demo = steps;
        if (steps.some((s) => s.error || ['error', 'failed', 'kept', 'stopped'].includes(s.state))) code = 1;
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

/** The demo phase: the random checkpoint written once (kept in `ckptDir` for later calls), then runDemo. */
async function demo(browser: Browser, url: string, ckptDir: string, o: Opts, until: number, say: Say) {
  let ckptUrl: string | null = null;
  if (!o.no1b) {
    const t = Date.now();
    if (!existsSync(join(ckptDir, 'done'))) {
      const embedded = join(o.repo, EMBEDDED);
      const tiny = () => parseConfig(JSON.parse(readFileSync(join(embedded, 'config.json'), 'utf8')), 'config.json');
      const bytes = writeRandomCheckpoint(ckptDir, embedded, o.ckptShape === '1b' ? HRM_TEXT_1B : tiny());
      writeFileSync(join(ckptDir, 'done'), String(bytes));
    }
    say(`random ${o.ckptShape}-shape checkpoint in ${ckptDir} (${Date.now() - t} ms)`);
    ckptUrl = `${url}/ckpt`;
  }
  const page = await browser.newPage();
  relay(page, 'demo', say, false);
  const steps: DemoStep[] = await runDemo(page,
    { url, ckptUrl, tokens: o.tokens, shot: (n) => join(o.out, n), until: until - 10_000 });
  for (const s of steps) {
    say(`[demo] ${s.step}: ${s.state} in ${s.ms} ms; ${s.status}${s.error ? `; ERROR ${s.error}` : ''}`);
    say(`  ${s.text.slice(0, 600).replace(/\n/g, '\n  ')}`);
  }
  return steps;
}

/** The bench page with the given options (as bench/runners/browser.ts runs it), then its parity checks. */
async function bench(browser: Browser, url: string, o: Opts, budget: number, until: number, say: Say) {
  const args = [...o.bench];
  if (!o.noAnchors && !args.includes('--anchors')) {
    // The PyTorch anchors in the same call, as bench/h200.sh measures them for Node: a speed figure without them
    // cannot be compared (the anchor moves +-15 % between calls). Into /tmp: a call returns 8 files at most.
    const t0 = Date.now();
    const dir = join(tmpdir(), 'chrome-anchors');
    const r = spawnSync('bash', [join(o.repo, 'bench/torch-anchors.sh'), dir], { encoding: 'utf8' });
    say(`${r.stdout ?? ''}${r.stderr ?? ''}`.trim());
    args.push('--anchors', join(dir, 'anchors.json'));
    budget -= Math.round((Date.now() - t0) / 1000);
  }
  if (!args.includes('--check-sgmat')) args.push('--check-sgmat');
  // As bench/h200.sh gives the Node run: 300 s, less where the call's deadline leaves less.
  if (!args.includes('--budget')) args.push('--budget', String(Math.max(30, Math.min(300, budget))));
  const q = pageQuery(args, {
    runtime: 'chrome', mlx: `${url}/tests/fixtures/mlx/`, ...(o.noParity ? {} : { parity: '1' }),
    ...(typeof __BENCH_COMMIT__ === 'string' ? { commit: __BENCH_COMMIT__ } : {}),
    timestamps: 'timestamp-query (Chrome with --enable-webgpu-developer-features: unquantized)',
  });
  say(`bench options: ${args.join(' ')}`);
  const page = await browser.newPage();
  relay(page, 'page', say, true);
  await page.goto(`${url}/bench/index.html?${q}`);
  // The anchors' JSON goes into chrome-run.json too, so the call's record shows its speed can be compared.
  const at = args.indexOf('--anchors');
  const r: { files?: string[]; error?: string; parity?: string; parityFailed?: number; anchors?: unknown } = {};
  if (at >= 0) r.anchors = anchorsOf(args[at + 1]);
  const got = await collectPage(page, o.out, until - 20_000);
  if (got.error) r.error = got.error;
  else { r.files = got.files; say(`wrote ${r.files!.join(', ')}`); }
  const poll = () => new Promise((ok) => setTimeout(ok, 2000));
  if (r.error) return r;
  while (!o.noParity) {
    const p = (await page.evaluate('window.__parity')) as { md?: string; failed?: number; error?: string } | undefined;
    if (p) { r.parity = p.md ?? `ERROR ${p.error}`; r.parityFailed = p.failed ?? 1; break; }
    if (Date.now() > until - 15_000) {
      r.parity = 'the parity checks did not finish in time';
      r.parityFailed = 1;
      break;
    }
    await poll();
  }
  await page.close();
  return r;
}

main(process.argv.slice(2)).then((code) => process.exit(code), (e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});

/** The anchors file's JSON, or why there is none (torch-anchors.sh failed). */
function anchorsOf(file: string | undefined): unknown {
  try {
    return JSON.parse(readFileSync(file ?? '', 'utf8'));
  } catch (e) {
    return { error: `no anchors from ${file}: ${e instanceof Error ? e.message : String(e)}` };
  }
}
