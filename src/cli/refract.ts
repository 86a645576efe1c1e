// `refract`: score, compare, repeatability, selftest on the WebGPU HRM backend. Node (npx refract) and Deno.
import { parseArgs } from 'node:util';
import { Gpu } from '../tensor/gpu.ts';
import { InputError } from '../tensor/errors.ts';
import { loadModel, type LoadedModel } from '../hrm/load.ts';
import { HrmBackend } from '../refract/hrm-backend.ts';
import {
  DEFAULT_REFERENCE_KV, DEFAULTS, parsePromptsJsonl, parseReport, renderCompareTable, renderHtmlReport, renderRepeatability,
  renderTextReport, runRefract, toJsonString, type ProgressFn, type RefractReport, type RunRefractOptions,
} from '../refract/index.ts';
import { choice, err, modelFiles, number, out, proc, readFile, run, writeFile } from './common.ts';

const HELP = `refract: KV-cache quantization drift score for HRM-Text on WebGPU

  refract score [--model DIR|URL] --candidate ctk=q8_0,ctv=q4_0 [--reference ctk=f16,ctv=f16]
                [--prompts FILE.jsonl] [--corpus FILE.txt] [--chunks 32] [-c|--ctx 512] [--n-predict 128] [--seed 42]
                [--axis-rniah] [--axis-plad] [--condition synth,cot] [--dtype f32|bf16]
                [--json-out FILE] [--html-out FILE] [--no-progress]
  refract compare A.json B.json ...
  refract repeatability --runs N <score flags>
  refract selftest [--model DIR|URL]       (reference against itself must score 100 on every axis)

Defaults that need no files: the embedded model, REFRACT's 30 CC0 prompts, a corpus from the Brown corpus.
`;

const SCORE_OPTIONS = {
  model: { type: 'string' }, reference: { type: 'string' }, candidate: { type: 'string' }, prompts: { type: 'string' },
  corpus: { type: 'string' }, chunks: { type: 'string' }, ctx: { type: 'string', short: 'c' }, 'n-predict': { type: 'string' },
  seed: { type: 'string' }, 'axis-rniah': { type: 'boolean' }, 'axis-plad': { type: 'boolean' }, condition: { type: 'string' },
  dtype: { type: 'string' }, 'json-out': { type: 'string' }, 'html-out': { type: 'string' }, 'no-progress': { type: 'boolean' },
  runs: { type: 'string' },
} as const;

type ScoreFlags = ReturnType<typeof parseArgs<{ options: typeof SCORE_OPTIONS }>>['values'];

/** Progress on stderr: one rewritten line per stage with an ETA. */
function progress(enabled: boolean): ProgressFn | undefined {
  if (!enabled) return undefined;
  let last = '';
  return (stage, done, total, eta) => {
    const line = `${stage}: ${done}/${total}${eta !== null ? `, ETA ${Math.round(eta)} s` : ''}`;
    if (line === last) return;
    err(`\r${line.padEnd(60)}${done === total ? '\n' : ''}`);
    last = line;
  };
}

async function setup(v: ScoreFlags): Promise<{ gpu: Gpu; lm: LoadedModel; backend: HrmBackend }> {
  const gpu = await Gpu.create();
  const lm = await loadModel(gpu, modelFiles(v.model), { dtype: choice('dtype', v.dtype, ['f32', 'bf16'] as const, 'f32') });
  return { gpu, lm, backend: new HrmBackend(lm, { condition: v.condition }) };
}

async function runOptions(v: ScoreFlags, backend: HrmBackend, lm: LoadedModel): Promise<RunRefractOptions> {
  if (!v.candidate) throw new InputError('refract', '--candidate is required (e.g. ctk=q8_0,ctv=q4_0)');
  const text = async (p: string) => new TextDecoder().decode(await readFile(p));
  return {
    backend, model: lm.name, reference: v.reference ?? DEFAULT_REFERENCE_KV, candidate: v.candidate,
    prompts: v.prompts ? parsePromptsJsonl(await text(v.prompts)) : undefined,
    corpus: v.corpus ? { text: await text(v.corpus), label: v.corpus } : undefined,
    chunks: number('chunks', v.chunks, DEFAULTS.chunks, (n) => Number.isInteger(n) && n > 0),
    ctx: number('ctx', v.ctx, Math.min(DEFAULTS.ctx, lm.config.max_position_embeddings), (n) => Number.isInteger(n) && n > 0),
    nPredict: number('n-predict', v['n-predict'], DEFAULTS.nPredict, (n) => Number.isInteger(n) && n > 0),
    seed: number('seed', v.seed, DEFAULTS.seed, Number.isInteger),
    axes: { rniah: v['axis-rniah'] ?? false, plad: v['axis-plad'] ?? false },
    onProgress: progress(!v['no-progress']),
    reproCommand: ['refract', ...proc.argv.slice(2)].map((a) => (/^[\w.,=/:-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' '),
  };
}

async function emit(report: RefractReport, v: ScoreFlags): Promise<void> {
  out(renderTextReport(report, { color: false }) + '\n');
  if (v['json-out']) { await writeFile(v['json-out'], toJsonString(report) + '\n'); err(`wrote ${v['json-out']}\n`); }
  if (v['html-out']) { await writeFile(v['html-out'], await renderHtmlReport(report)); err(`wrote ${v['html-out']}\n`); }
}

async function cmdScore(args: string[]): Promise<void> {
  const { values: v } = parseArgs({ args, options: SCORE_OPTIONS });
  const { gpu, lm, backend } = await setup(v);
  await emit(await runRefract(await runOptions(v, backend, lm)), v);
  gpu.destroy();
}

async function cmdRepeatability(args: string[]): Promise<void> {
  const { values: v } = parseArgs({ args, options: SCORE_OPTIONS });
  const runs = number('runs', v.runs, 3, (n) => Number.isInteger(n) && n >= 2);
  const { gpu, lm, backend } = await setup(v);
  const reports: RefractReport[] = [];
  for (let i = 0; i < runs; i++) {
    err(`run ${i + 1}/${runs}\n`);
    reports.push(await runRefract(await runOptions(v, backend, lm)));
  }
  out(renderRepeatability(reports) + '\n');
  gpu.destroy();
}

async function cmdSelftest(args: string[]): Promise<void> {
  const { values: v } = parseArgs({ args, options: SCORE_OPTIONS });
  const { gpu, lm, backend } = await setup(v);
  const opts = await runOptions({ ...v, candidate: v.reference ?? DEFAULT_REFERENCE_KV, chunks: v.chunks ?? '2', 'n-predict': v['n-predict'] ?? '16' }, backend, lm);
  const report = await runRefract({ ...opts, prompts: (opts.prompts ?? (await import('../refract/prompts.ts')).PROMPTS_V01).slice(0, 6) });
  const scores = Object.entries(report.axes).map(([k, a]) => [k, (a as { score: number }).score] as const);
  for (const [k, s] of scores) out(`${k.padEnd(6)} ${s.toFixed(4)}\n`);
  out(`composite ${report.composite.toFixed(4)} ${report.band}\n`);
  gpu.destroy();
  if (report.composite !== 100 || scores.some(([, s]) => s !== 100)) throw new InputError('selftest', 'reference against itself did not score 100 on every axis');
  out('selftest passed\n');
}

async function cmdCompare(args: string[]): Promise<void> {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length < 1) throw new InputError('compare', 'give one or more report .json files');
  const rows = await Promise.all(positionals.map(async (p) => ({ label: p.replace(/^.*\//, ''), report: parseReport(new TextDecoder().decode(await readFile(p))) })));
  out(renderCompareTable(rows) + '\n');
}

const COMMANDS: Record<string, (a: string[]) => Promise<void>> = { score: cmdScore, compare: cmdCompare, repeatability: cmdRepeatability, selftest: cmdSelftest };

await run(async (argv) => {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '--help' || cmd === '-h' || cmd === 'help') { out(HELP); return; }
  const f = COMMANDS[cmd];
  if (!f) throw new InputError('refract', `unknown command '${cmd}' (commands: ${Object.keys(COMMANDS).join(', ')})\n\n${HELP}`);
  await f(rest);
});
