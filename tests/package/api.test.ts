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
import { kvSpec } from '../../src/advanced.ts';
import { getGpu } from '../helpers/gpu.ts';
import { fixture, BROWN, FIXTURES } from '../helpers/fixtures.ts';
import { expectClose } from '../helpers/close.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';

const adapter = (over: Partial<AdapterSummary>): AdapterSummary => ({
  vendor: '', architecture: '', device: '', description: '', runtime: 'node', fallback: false, features: [], limits: {}, subgroupMatrix: [], subgroupSizes: [0, 0], robust: null,
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
  'KldAxisResult', 'KvConfig', 'KvSide', 'KvSpec', 'loadConfig', 'loadConfigs', 'LoadedModel', 'loadModel',
  'LoadModelOptions', 'LoadStage', 'logits', 'LogitsOptions', 'ModelFiles', 'modelFiles', 'ModelSource', 'NetworkError',
  'NoWebGpuError', 'parameterCount', 'parseKvConfig', 'ProgressInfo', 'QuantConfig', 'QuantMode', 'QuantSpec',
  'RefractError', 'RefractReport', 'renderHtmlReport', 'renderTextReport', 'runKld', 'runRefract', 'RunRefractOptions',
  'Runtime', 'runtimeName', 'SamplerOptions', 'toJsonString',
];

describe('public API', () => {
  it('the entry exports the reviewed names, and hrm-webgpu/advanced none of them again', () => {
    const [entry, advanced] = exportedNames('index.ts', 'advanced.ts');
    expect(entry).toEqual([...PUBLIC].sort());
    expect(advanced.length).toBeGreaterThan(50);
    expect(advanced.filter((n) => entry.includes(n))).toEqual([]);
  }, 60_000);

  it('tells CPU implementations of WebGPU from GPUs, and knows its runtime', () => {
    // Adapter strings as Dawn, wgpu and Chrome report them.
    expect(isSoftwareAdapter(adapter({ description: 'llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'google', architecture: 'swiftshader', description: 'SwiftShader Device (Subzero)' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ description: 'Microsoft Basic Render Driver' }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'unknown', fallback: true }))).toBe(true);
    expect(isSoftwareAdapter(adapter({ vendor: 'nvidia', architecture: 'hopper', description: 'NVIDIA H200' }))).toBe(false);
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
    expect(kvSpec('ctk=q8_0,ctv=q4_0')).toEqual({ k: 8, v: 4 });
    expect(kvSpec({ k: 4, v: null })).toEqual({ k: 4, v: null });
    expect(kvSpec(undefined)).toEqual({ k: null, v: null });
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
    expectClose(await logits(lm, ids, { mask: 'causal' }), await ref.array('f32.causal_logits'), 2e-4, 0, 'causal logits');
    // This fixture has no tokenizer: generation says so instead of failing later.
    await expect(generate(lm, 'hi').next()).rejects.toThrow(/no tokenizer\.json/);
  });

  it('generate stops at the next token once its signal is aborted', async () => {
    const lm = await loadModel(BROWN, { gpu: await getGpu() });
    // A bad cache spec is refused before any GPU work, naming the field.
    await expect(generateText(lm, 'x', { cache: { kv: 'ctk=q9' } })).rejects.toThrow(/^\[kvconfig\] unknown cache type ctk=q9 in cache\.kv /);
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
