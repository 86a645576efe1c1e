// The public entry (src/index.ts) from source: its reviewed list of names, adapter checks, model sources, loadModel
// with progress, logits against MLX, KV strings, generation's abort signal, and its API reference (npm run docs).
// The packed package is tested in package.test.ts.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import {
  InputError, generate, generateText, isSoftwareAdapter, loadModel, logits, modelFiles, parseKvConfig, runtimeName,
  type AdapterSummary, type ModelFiles, type ProgressInfo,
} from '../../src/index.ts';
import { kvStorage } from '../../src/advanced.ts';
import { getGpu } from '../helpers/gpu.ts';
import { fixture, BROWN, FIXTURES } from '../../testkit/helpers/fixtures.ts';
import { expectClose } from '../helpers/close.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

const adapter = (over: Partial<AdapterSummary>): AdapterSummary => ({
  vendor: '', architecture: '', device: '', description: '', runtime: 'node', fallback: false, features: [],
  limits: {}, subgroupMatrix: [], subgroupSizes: [0, 0], robust: null,
  fastFeatures: {} as AdapterSummary['fastFeatures'], fastPaths: {}, ...over,
});

/** The names each module exports, values and types, as TypeScript resolves them (re-exports followed). */
function exportedNames(...files: string[]): string[][] {
  const paths = files.map((f) => fileURLToPath(new URL(`../../src/${f}`, import.meta.url)));
  // One program for all, and no lib: resolving the names needs the modules' symbols, not a type check.
  const program = ts.createProgram(paths, { allowImportingTsExtensions: true, noEmit: true, noLib: true, types: [],
    module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, target: ts.ScriptTarget.ES2022 });
  const checker = program.getTypeChecker();
  const names = (p: string) => checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(p)!)!);
  return paths.map((p) => names(p).map((s) => s.name).sort());
}

// Reviewed: a name added to or taken from the package's entry is a decision about what a new user meets first.
// Tuning knobs and the model's parts belong in src/advanced.ts.
const PUBLIC = [
  'ActDtype', 'AdapterSummary', 'CacheSpec', 'checkpointBytes', 'cacheBytes', 'Condition', 'DeviceLostError',
  'DeviceOptions', 'EMBEDDED_MODEL', 'embeddedModelUrl', 'formatPrompt', 'FormatError', 'generate', 'GenerateEvent',
  'GenerateModel', 'GenerateOptions', 'GenerateStats', 'generateText', 'GenerationResult', 'Gpu', 'GpuOutOfMemoryError',
  'GpuValidationError', 'HrmBackend', 'HrmConfig', 'HrmError', 'InputError', 'isSoftwareAdapter', 'KldAxisOptions',
  'KldAxisResult', 'KvConfig', 'KvSide', 'KvStorage', 'loadConfig', 'loadConfigs', 'LoadedModel', 'loadModel',
  'LoadModelOptions', 'LoadStage', 'logits', 'LogitsOptions', 'ModelFiles', 'modelFiles', 'ModelSource', 'NetworkError',
  'NoWebGpuError', 'parameterCount', 'parseKvConfig', 'ProgressInfo', 'QuantConfig', 'QuantMode', 'QuantSpec',
  'RefractError', 'RefractReport', 'renderHtmlReport', 'renderTextReport', 'runKld', 'runRefract', 'RunRefractOptions',
  'Runtime', 'runtimeName', 'SamplerOptions', 'toJsonString',
];

// hrm-webgpu/advanced, each name with the reason an app may rely on it. No plumbing (Dispatch, Recorder, Upload,
// BufferView, DeviceState, Capture: how kernels record and replay) and no kernel probes (which path a call takes is
// gpu.summary.fastPaths): those change with the kernels and are not for apps.
const TUNING = 'a field of DeviceOptions.kernels (Gpu.create), the kernels\' choices an app or a benchmark may set';
const ERROR = 'an error an app catches by class: a caller\'s mistake, a missing feature, a capture refused, bad usage';
const MODEL = 'the model\'s parts that LoadedModel hands out (model, tokenizer, weights, cache) and their options';
const FILES = 'model file sets by kind (folder, URL with network settings, browser Files), and what they read';
const CONFIG = 'reading a checkpoint\'s config.json and sizing a cache for it (the demo\'s, the CLI\'s memory checks)';
const PROMPT = 'HRM\'s prompt envelope: its condition tags and template, as formatPrompt takes them';
const KV = 'the KV syntax\'s tables and its bits-per-side form, which the cache and the CLIs take';
const TYPE = 'a type the exports above refer to, so that an app can name it';
const ADVANCED: Record<string, string> = {
  KernelOptions: TUNING, DecodeMerge: TUNING, DecodeMlp: TUNING, SgmatKernel: TUNING, SgmatSchedule: TUNING,
  TurboDecode: TUNING, DecodeStep: TUNING,
  FastFeature: 'the key of AdapterSummary.fastFeatures', OnOff: 'a verdict of AdapterSummary.fastFeatures / fastPaths',
  BindingSizeError: ERROR, DTypeError: ERROR, FeatureError: ERROR, NotReplayableError: ERROR, ShapeError: ERROR,
  UsageError: ERROR,
  dirFiles: FILES, fileListFiles: FILES, urlFiles: FILES, ByteSource: FILES, Progress: FILES, NetOptions: FILES,
  streamDownload: 'a URL\'s body streamed with the downloads\' retries and resumption (the demo caches checkpoints so)',
  StreamedDownload: 'what streamDownload returns',
  parseConfig: CONFIG, cacheSlots: CONFIG, Warn: CONFIG,
  HrmModel: MODEL, ForwardOptions: MODEL, MaskSpec: MODEL, HrmTokenizer: MODEL, HrmTokenizerOptions: MODEL,
  SpecialTokenIds: MODEL, TokenizerConfigJson: MODEL, HrmCache: MODEL, CacheOptions: MODEL, CachePass: MODEL,
  CacheSlot: MODEL, SlotGeometry: MODEL, HrmWeights: MODEL, LayerWeights: MODEL, Weight: MODEL,
  parseConditions: PROMPT, CONDITION_TOKENS: PROMPT, DEFAULT_CONDITION: PROMPT, HRM_PROMPT_TEMPLATE: PROMPT,
  FormatPromptOptions: PROMPT,
  kvStorage: KV, KV_TYPES: KV, KV_GROUP_SIZE: KV, DEFAULT_REFERENCE_KV: KV,
  Tensor: TYPE, DType: TYPE, Round: TYPE, AttnMask: TYPE, FullKV: TYPE, CacheSide: TYPE, TurboKV: TYPE,
  TurboType: TYPE,
  DispatchTiming: 'Gpu.lastTimings\' element (profileNext: per-dispatch GPU time for benchmarks)',
  PassSpan: 'Gpu.lastTimeline\'s element (timelineNext: a batch pass by pass, for benchmarks)',
};

// hrm-webgpu/refract (src/refract/index.ts), each name with the reason an app that scores KV configurations may rely
// on it. Not here: the axes' inner steps (perturbations, edit distance, needle placement, trajectory diffs), the KLD
// accumulator and its statistics helpers, the diagnosis tables, the CLI's file-name helpers: tests import those
// from their modules.
const RUN = 'running REFRACT: the runner, its options and progress, the retry on a new device, the axes\' defaults';
const BACKEND = 'the Backend interface an app implements to score an engine of its own, its calls\' options, results';
const KVS = 'the KV configurations scored: the llama.cpp-style syntax, its types and the default reference';
const AXIS = 'an axis run on its own (trajectory, KLD, R-NIAH, PLAD): its options, its result and its defaults';
const SCORE = 'scoring: axis scores into a composite and a band, the reference\'s floor, the spread of repeated runs';
const REPORT = 'the report: its JSON schema and blocks, reading, writing, rendering it as text, HTML, a comparison';
const SWEEP = 'a sweep over KV configurations: the grid, the run, its rows and store, KV bytes a token, its renderings';
const INPUT = 'what the axes read: prompts (built in, or JSONL), the Brown corpus (KLD\'s text, R-NIAH\'s haystack)';
const REFRACT: Record<string, string> = {
  runRefract: RUN, RunRefractOptions: RUN, ProgressFn: RUN, Stage: RUN, ResilientBackend: RUN, ResilientOptions: RUN,
  DEFAULTS: RUN,
  HrmBackendOptions: 'the options of the main entry\'s HrmBackend (a loaded model as a Backend)',
  Backend: BACKEND, BackendCapabilityError: BACKEND, CompletionOptions: BACKEND, CompletionResult: BACKEND,
  DecodeTokensOptions: BACKEND, KLDResult: BACKEND, KldOptions: BACKEND, Metadata: BACKEND,
  ModelMetadataOptions: BACKEND, TokenizeOptions: BACKEND, TrajectoryOptions: BACKEND, TrajectoryResult: BACKEND,
  KldProgress: BACKEND, KldStatistics: BACKEND,
  RefractError: 'REFRACT\'s own error: a run that cannot give a trustworthy score (empty trajectories, a failed floor)',
  KvConfig: KVS, KvSide: KVS, parseKvConfig: KVS, KV_TYPES: KVS, DEFAULT_REFERENCE_KV: KVS,
  runKld: AXIS, KldAxisOptions: AXIS, KldAxisResult: AXIS, NullableStats: AXIS, kldToScore: AXIS,
  KLD_PERCENTILES: AXIS, DELTA_P_PERCENTILES: AXIS, runTrajectory: AXIS, TrajectoryAxisOptions: AXIS,
  TrajectoryAxisResult: AXIS, TrajectoryPromptRecord: AXIS, runRniah: AXIS, RniahOptions: AXIS, RniahAxisResult: AXIS,
  RniahCell: AXIS, DEFAULT_NEEDLE: AXIS, DEFAULT_QUESTION: AXIS, buildRniahPrompt: AXIS, runPlad: AXIS,
  PladOptions: AXIS, PladAxisResult: AXIS, PladRecord: AXIS, Perturbation: AXIS, DEFAULT_PERTURBATIONS: AXIS,
  band: SCORE, Band: SCORE, compositeScore: SCORE, CompositeScore: SCORE, AxisScores: SCORE, MIN_FLOOR: SCORE,
  repeatabilityStats: SCORE, RepeatabilityStats: SCORE, RepeatabilityBand: SCORE, ReportScores: SCORE,
  SpreadStats: SCORE,
  RefractReport: REPORT, GtmBlock: REPORT, KldBlock: REPORT, RniahBlock: REPORT, PladBlock: REPORT,
  REPORT_SCHEMA: REPORT, REFRACT_VERSION: REPORT, parseReport: REPORT, toJsonString: REPORT, renderTextReport: REPORT,
  TextOptions: REPORT, renderHtmlReport: REPORT, HtmlOptions: REPORT, compareRows: REPORT, CompareInput: REPORT,
  CompareRow: REPORT, renderCompareTable: REPORT, renderRepeatability: REPORT,
  runSweep: SWEEP, SweepOptions: SWEEP, SweepResult: SWEEP, SweepRow: SWEEP, SweepStore: SWEEP, gridCandidates: SWEEP,
  kvBytesPerToken: SWEEP, renderSweepTable: SWEEP, renderSweepHtml: SWEEP,
  PROMPTS_V01: INPUT, parsePromptsJsonl: INPUT, Prompt: INPUT, brownCorpus: INPUT, BrownOptions: INPUT,
  BROWN_DOCUMENTS: INPUT, DEFAULT_CORPUS_DOCUMENTS: INPUT, DEFAULT_CORPUS_LABEL: INPUT, defaultCorpus: INPUT,
  defaultHaystack: INPUT,
};
/** Plumbing no entry exports. */
const PLUMBING = ['BufferView', 'Capture', 'DeviceState', 'DeviceWatch', 'Dispatch', 'Recorder', 'StateKey', 'Upload'];

describe('public API', () => {
  it('the entries export the reviewed names: advanced each with its reason, none of the entry\'s, no plumbing', () => {
    const [entry, advanced, refract] = exportedNames('index.ts', 'advanced.ts', 'refract/index.ts');
    expect(entry).toEqual([...PUBLIC].sort());
    expect(advanced).toEqual(Object.keys(ADVANCED).sort());
    expect(Object.values(ADVANCED).every((why) => why.length > 20)).toBe(true);
    expect(advanced.filter((n) => entry.includes(n))).toEqual([]);
    expect(refract).toEqual(Object.keys(REFRACT).sort());
    expect(Object.values(REFRACT).every((why) => why.length > 20)).toBe(true);
    expect([...entry, ...advanced, ...refract].filter((n) => PLUMBING.includes(n))).toEqual([]);
  }, 60_000);

  it('tells CPU implementations of WebGPU from GPUs, and knows its runtime', () => {
    // Adapter strings as Dawn, wgpu and Chrome report them.
    expect(isSoftwareAdapter(adapter({ description: 'llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'google', architecture: 'swiftshader',
      description: 'SwiftShader Device (Subzero)' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ description: 'Microsoft Basic Render Driver' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'unknown', fallback: true }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'nvidia', architecture: 'hopper',
      description: 'NVIDIA H200' }))).toBe(false);
    expect(runtimeName()).toBe('node');
  });

  it('reads model sources: folders, URLs, Files and file sets; anything else names loadModel', () => {
    expect(modelFiles('/models/x').name).toBe('/models/x');
    expect(modelFiles('https://huggingface.co/a/b/resolve/main').name).toBe('https://huggingface.co/a/b/resolve/main');
    expect(modelFiles(new URL('file:///tmp/a%20b/')).name).toBe('/tmp/a b/');
    expect(modelFiles().name.endsWith(`models/${EMBEDDED_MODEL}/`)).toBe(true);
    const set: ModelFiles = { name: 'mine', text: async () => null, bytes: async () => null };
    expect(modelFiles(set)).toBe(set);
    expect(modelFiles([new File(['{}'], 'config.json')]).name).toBe('picked files');
    expect(() => modelFiles(42 as never)).toThrow(InputError);
    expect(() => modelFiles(42 as never)).toThrow(/\[loadModel\] model source must be/);
  });

  it('parses KV strings (the one parser) into types and bits per side, and names a bad one', () => {
    const c = parseKvConfig('ctk=q8_0,ctv=q4_0', 'cache.kv');
    expect([c.k.bits, c.v.bits, c.label]).toEqual([8, 4, 'ctk=q8_0,ctv=q4_0']);
    expect(kvStorage('ctk=q8_0,ctv=q4_0')).toEqual({ k: 8, v: 4 });
    expect(kvStorage({ k: 4, v: null })).toEqual({ k: 4, v: null });
    expect(kvStorage(undefined)).toEqual({ k: null, v: null });
    expect(() => parseKvConfig('ctk=q9', 'cache.kv')).toThrow(/unknown cache type ctk=q9 in cache\.kv/);
  });

  it('loadModel reports byte progress; logits match MLX (prefix and causal, f32)', async () => {
    const seen: ProgressInfo[] = [];
    const lm = await loadModel(FIXTURES + 'hrm-tiny-a', { gpu: await getGpu(), progressCallback: (p) => seen.push(p) });
    const weights = seen.filter((p) => p.stage === 'weights');
    expect(weights.length).toBeGreaterThan(1);
    expect(weights.at(-1)!.loaded).toBe(weights.at(-1)!.total);
    expect(weights.at(-1)!.progress).toBe(100);
    const ref = await fixture('hrm-tiny-a/reference.safetensors');
    const ids = [...await ref.array('prompt_ids')];
    expectClose(await logits(lm, ids), await ref.array('f32.prefix_logits'), 2e-4, 0, 'prefix logits');
    expectClose(await logits(lm, ids, { mask: 'causal' }), await ref.array('f32.causal_logits'), 2e-4, 0,
      'causal logits');
    // This fixture has no tokenizer: generation says so instead of failing later.
    await expect(generate(lm, 'hi').next()).rejects.toThrow(/no tokenizer\.json/);
  });

  it('generate stops at the next token once its signal is aborted', async () => {
    const lm = await loadModel(BROWN, { gpu: await getGpu() });
    // A bad cache spec is refused before any GPU work, naming the field.
    await expect(generateText(lm, 'x',
      { cache: { kv: 'ctk=q9' } })).rejects.toThrow(/^\[kvconfig\] unknown cache type ctk=q9 in cache\.kv /);
    expect(() => logits(lm, [1, 2], { kv: 'ctv=q1' })).toThrow(/^\[kvconfig\] unknown cache type ctv=q1 in kv /);
    const ac = new AbortController();
    let pieces = 0;
    let stats = null;
    for await (const ev of generate(lm, 'The jury said', { condition: 'noisy', maxTokens: 20, signal: ac.signal })) {
      if (ev.type === 'text') { pieces++; ac.abort(); } else stats = ev.stats;
    }
    expect(pieces).toBe(1);
    expect(stats!.stopReason).toBe('aborted');
    expect(stats!.ids.length).toBe(1);
  });

  it('the API reference builds from the doc comments with no warning (typedoc, warnings as errors)', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const typedoc = fileURLToPath(new URL('../../node_modules/.bin/typedoc', import.meta.url));
    // --emit none: the same checks as `npm run docs` (every referenced type exported, no broken link), no files.
    // A warning exits non-zero (treatWarningsAsErrors), which rejects here with typedoc's output.
    const { stdout, stderr } = await promisify(execFile)(typedoc, ['--emit', 'none'], { cwd: root, timeout: 120_000 });
    expect(`${stdout}${stderr}`).not.toMatch(/\[(warning|error)\]/);
  }, 150_000);
});
