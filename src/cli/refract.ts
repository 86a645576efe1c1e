// `refract`: score, compare, repeatability, sweep, selftest on the WebGPU HRM backend. Node (npx refract) and Deno.
import { InputError } from '../index.ts';
import { UsageError, kvStorage } from '../advanced.ts';
import {
  compareRows, DEFAULT_REFERENCE_KV, gridCandidates, kvBytesPerToken, PROMPTS_V01, renderCompareTable, renderHtmlReport,
  renderRepeatability, renderSweepHtml, renderSweepTable, renderTextReport, runRefract, runSweep, toJsonString,
  type RefractReport,
} from '../refract/index.ts';
import { cliMessage, err, fsp, netOptions, number, out, proc, readFile, run, writeFile } from './common.ts';
import {
  asUsage, checkOutputs, FETCH_OPTIONS, parseCommandFlags, refuse, REPEATABILITY_OPTIONS, SCORE_OPTIONS, SWEEP_OPTIONS,
} from './refract-flags.ts';
import {
  checkKv, checkScoreFlags, finishPartial, interrupted, interruptSignal, runOptions, session,
} from './refract-session.ts';
import {
  COMPARE_HELP, FETCH_HELP, REPEATABILITY_HELP, SCORE_HELP, SELFTEST_HELP, SWEEP_HELP, TOP_HELP,
} from './refract-help.ts';

async function cmdScore(args: string[]): Promise<void> {
  const { values: v } = parseCommandFlags('score', args, SCORE_OPTIONS);
  if (v.help) { out(SCORE_HELP); return; }
  await checkOutputs({ 'json-out': v['json-out'], 'html-out': v['html-out'] });
  await checkScoreFlags('score', v);
  const s = await asUsage('score', () => session(v));
  try {
    const signal = interruptSignal();
    const report = await interrupted(signal, 'no axis had finished, nothing was written',
      async () => runRefract(await runOptions('score', v, s, signal)));
    if (!report) return;
    out(renderTextReport(report, { color: false }) + '\n');
    const written: string[] = [];
    if (v['json-out']) { await writeFile(v['json-out'], toJsonString(report) + '\n'); written.push(v['json-out']); }
    if (v['html-out']) { await writeFile(v['html-out'], await renderHtmlReport(report)); written.push(v['html-out']); }
    if (!report.partial) for (const w of written) err(`wrote ${w}\n`);
    finishPartial(report, signal, written);
  } finally {
    s.close();
  }
}

async function cmdRepeatability(args: string[]): Promise<void> {
  const { values: v } = parseCommandFlags('repeatability', args, REPEATABILITY_OPTIONS);
  if (v.help) { out(REPEATABILITY_HELP); return; }
  refuse('repeatability', v, ['json-out', 'html-out'], 'each run goes to --out-dir as run-NN.json');
  const runs = await asUsage('repeatability',
    () => number('runs', v.runs, 4, (n) => Number.isInteger(n) && n >= 2, 'an integer >= 2'));
  await checkScoreFlags('repeatability', v); // before any folder is made
  const fs = await fsp();
  const dir = v['out-dir'] ??
    (await fs.mkdtemp(`${(await import(/* @vite-ignore */ 'node:' + 'os')).tmpdir()}/refract-repeatability-`));
  await fs.mkdir(dir, { recursive: true });
  const s = await asUsage('repeatability', () => session(v));
  try {
    const opts = await runOptions('repeatability', { ...v, 'n-predict': v['n-predict'] ?? '50' }, s);
    const reports: RefractReport[] = [];
    for (let i = 1; i <= runs; i++) {
      const file = `${dir}/run-${String(i).padStart(2, '0')}.json`;
      err(`=== run ${i}/${runs} -> ${file} ===\n`);
      const r = await runRefract(opts);
      await writeFile(file, toJsonString(r) + '\n');
      reports.push(r);
    }
    out(renderRepeatability(reports) + '\n');
  } finally {
    s.close();
  }
}

async function cmdSweep(args: string[]): Promise<void> {
  const { values: v } = parseCommandFlags('sweep', args, SWEEP_OPTIONS);
  if (v.help) { out(SWEEP_HELP); return; }
  refuse('sweep', v, ['json-out'], 'the sweep writes DIR/sweep.json and one report per candidate in --out-dir');
  const dir = v['out-dir'];
  if (!dir) {
    throw new UsageError('refract sweep',
      '--out-dir DIR is required (each candidate\'s report is kept there, so the sweep can resume)');
  }
  await asUsage('sweep', () => {
    for (const c of v.candidate ?? []) checkKv({ candidate: c, reference: v.reference });
  });
  if (v.candidate?.length) await checkScoreFlags('sweep', { ...v, candidate: v.candidate[0] });
  const types = (flag: string | undefined) => (flag ?? '').split(',').map((t) => t.trim()).filter(Boolean);
  const grid = v['k-types'] || v['v-types']
    ? await asUsage('sweep', () => gridCandidates(types(v['k-types']), types(v['v-types']))) : [];
  const candidates = [...(v.candidate ?? []), ...grid];
  if (candidates.length === 0) {
    throw new UsageError('refract sweep',
      'no candidates: give --candidate KV (repeatable) or --k-types with --v-types');
  }
  const fs = await fsp();
  await fs.mkdir(dir, { recursive: true });
  const html = v['html-out'] ?? `${dir}/sweep.html`;
  await checkOutputs({ 'html-out': html });
  const s = await asUsage('sweep', () => session(v));
  try {
    const signal = interruptSignal();
    const base = await runOptions('sweep', { ...v, candidate: candidates[0] }, s, signal);
    const cfg = s.lm().config;
    const resumes = `the finished candidates' reports are in ${dir}; the same command resumes`;
    const sweep = await interrupted(signal, resumes, () => runSweep({
      reference: base.reference ?? DEFAULT_REFERENCE_KV, candidates, signal, log: (line) => err(`${line}\n`),
      bytesPerToken: (kv) => kvBytesPerToken(cfg, kvStorage(kv)),
      score: (candidate) => runRefract({ ...base, candidate }),
      serialize: (r) => toJsonString(r) + '\n',
      store: {
        read: async (name) => fs.readFile(`${dir}/${name}`, 'utf8').catch(() => null),
        write: (name, t) => writeFile(`${dir}/${name}`, t),
      },
    }));
    if (!sweep) return;
    out(renderSweepTable(sweep) + '\n');
    await writeFile(`${dir}/sweep.json`, JSON.stringify(sweep, null, 2) + '\n');
    await writeFile(html, await renderSweepHtml(sweep));
    err(`wrote ${dir}/sweep.json and ${html}\n`);
  } finally {
    s.close();
  }
}

async function cmdSelftest(args: string[]): Promise<void> {
  const { values: v } = parseCommandFlags('selftest', args, SCORE_OPTIONS);
  if (v.help) { out(SELFTEST_HELP); return; }
  const s = await asUsage('selftest', () => session(v));
  try {
    const opts = await runOptions('selftest', { ...v, candidate: v.reference ?? DEFAULT_REFERENCE_KV,
      chunks: v.chunks ?? '2', 'n-predict': v['n-predict'] ?? '16' }, s);
    const report = await runRefract({ ...opts, prompts: (opts.prompts ?? PROMPTS_V01).slice(0, 6) });
    const scores = Object.entries(report.axes).map(([k, a]) => [k, (a as { score: number | null }).score] as const);
    for (const [k, sc] of scores) out(`${k.padEnd(6)} ${sc === null ? 'skipped' : sc.toFixed(4)}\n`);
    out(`composite ${report.composite.toFixed(4)} ${report.band}\n`);
    if (report.composite !== 100 || scores.some(([, sc]) => sc !== 100)) {
      throw new InputError('selftest', 'reference against itself did not score 100 on every axis');
    }
    out('selftest passed\n');
  } finally {
    s.close();
  }
}

async function cmdCompare(args: string[]): Promise<void> {
  const { values, positionals } = parseCommandFlags('compare', args, { help: { type: 'boolean', short: 'h' } }, true);
  if (values.help) { out(COMPARE_HELP); return; }
  if (positionals.length < 1) throw new UsageError('refract compare', 'give one or more report .json files');
  const text = (path: string) => readFile(path).then((b) => new TextDecoder().decode(b),
    (e: Error) => new Error(e.message.replace(/^\[cli\] /, '')));
  const inputs = await Promise.all(positionals.map(async (path) => ({ path, text: await text(path) })));
  const { rows, notes } = compareRows(inputs);
  for (const n of notes) out(`${n}\n`);
  if (rows.length === 0) { out('no reports parsed\n'); proc.exitCode = 1; return; }
  out(renderCompareTable(rows) + '\n');
}

async function cmdFetch(args: string[]): Promise<void> {
  const { values: v, positionals } = parseCommandFlags('fetch', args, FETCH_OPTIONS, true);
  if (v.help) { out(FETCH_HELP); return; }
  if (positionals.length > 1) throw new UsageError('refract fetch', `give one URL (got ${positionals.length})`);
  // Loaded here only: no other command needs the zip reader or node:crypto.
  const { WIKITEXT_2_RAW, checkPins, defaultCacheDir, fetchCorpus } = await import('../refract/corpus-fetch.ts');
  const url = positionals[0] ?? WIKITEXT_2_RAW.url;
  const pinned = positionals.length === 0 ? { size: WIKITEXT_2_RAW.size, sha256: WIKITEXT_2_RAW.sha256 } : {};
  const positive = (n: number) => Number.isInteger(n) && n > 0;
  const size = v.size === undefined ? pinned.size
    : await asUsage('fetch', () => number('size', v.size, 0, positive, 'a positive integer'));
  const sha256 = v.sha256 ?? pinned.sha256;
  try {
    checkPins({ size, sha256 });
  } catch (e) {
    throw new UsageError('refract fetch', `--${(e as Error).message.replace(/^\[fetch\] /, '')}`);
  }
  const cacheDir = v['cache-dir'] ?? defaultCacheDir();
  let shown = '';
  const onProgress = v['no-progress'] ? undefined : (got: number, total: number) => {
    const line = `\rdownload: ${(got / 2 ** 20).toFixed(1)} of ${(total / 2 ** 20).toFixed(1)} MiB`;
    if (line !== shown) err(line.padEnd(60) + (got === total ? '\n' : ''));
    shown = line;
  };
  const r = await fetchCorpus(url, { cacheDir, size, sha256, net: netOptions(), onProgress });
  err(r.downloaded ? `fetched ${url}: ${r.size} bytes, sha256 ${r.sha256}\n`
    : `already cached: ${url} (sha256 ${r.sha256})\n`);
  if (sha256 === undefined) err(`pin it with --size ${r.size} --sha256 ${r.sha256}\n`);
  for (const f of r.files) out(`${f}\n`);
  const corpus = r.files.find((f) => f.endsWith('wiki.test.raw')) ?? r.files[0];
  const haystack = r.files.find((f) => f.endsWith('wiki.train.raw'));
  err(`use it: refract score --corpus ${corpus}${haystack ? ` (R-NIAH: --rniah-haystack ${haystack})` : ''}\n`);
}

const COMMANDS: Record<string, [(a: string[]) => Promise<void>, string]> = {
  score: [cmdScore, SCORE_HELP], compare: [cmdCompare, COMPARE_HELP],
  repeatability: [cmdRepeatability, REPEATABILITY_HELP],
  sweep: [cmdSweep, SWEEP_HELP], selftest: [cmdSelftest, SELFTEST_HELP], fetch: [cmdFetch, FETCH_HELP],
};

await run(async (argv) => {
  const [cmd, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') { out(TOP_HELP); return; }
  const entry = COMMANDS[cmd];
  try {
    // No command is a usage error, as the original's argparse makes it (usage on stderr, exit 2).
    if (!cmd) throw new UsageError('refract', `give a command (${Object.keys(COMMANDS).join(', ')})`);
    if (!entry) {
      throw new UsageError('refract', `unknown command '${cmd}' (commands: ${Object.keys(COMMANDS).join(', ')})`);
    }
    await entry[0](rest);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    // One line naming the flag, then the command's usage; exit 2 as argparse does.
    err(`${cliMessage(entry ? `refract ${cmd}` : 'refract', e)}\n\n${entry ? entry[1] : TOP_HELP}`);
    proc.exitCode = 2;
  }
}, () => '', 'refract', Object.keys(COMMANDS));
