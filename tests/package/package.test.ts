// The package as a user gets it: `npm pack`, installed into an empty folder, and there the installed `hrm` CLI,
// the README's library examples (Node, Deno, a Vite page in headless Chromium) and a TypeScript consumer. Every
// generated text is checked against transformers' greedy ids for the embedded model (models/.../reference.json).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { build, preview } from 'vite';
import { dirFiles } from '../../src/hrm/files.ts';
import { loadConfig, loadTokenizer } from '../../src/hrm/load.ts';
import { launch, watchConsole } from '../../testkit/helpers/browser.ts';
import { EMBEDDED_MODEL } from '../../src/hrm/files.ts';
import { EMBEDDED } from '../../testkit/helpers/fixtures.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = (name: string) => join(root, 'node_modules/.bin', name);
const MODEL = EMBEDDED;
const TOKENS = 8;
// npm run by `npm test` passes its own settings down as npm_* variables; the user's npm in an empty folder has none.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
const exec = (cmd: string, args: string[], cwd: string, timeout = 120_000) =>
  promisify(execFile)(cmd, args, { cwd, env, timeout, maxBuffer: 64 << 20 });

/** The README's library examples, by their `<!-- example:NAME -->` marker. */
function readmeExamples(): Record<string, string> {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const out: Record<string, string> = {};
  for (const m of readme.matchAll(/<!-- example:(\w+) -->\s*```\w*\n([\s\S]*?)```/g)) out[m[1]] = m[2];
  return out;
}

/** The text of transformers' first greedy tokens (f32) for the README's prompt (condition noisy). */
async function referenceText(): Promise<string> {
  const ref = JSON.parse(readFileSync(join(MODEL, 'reference.json'), 'utf8')).prompts[0];
  expect([ref.text, ref.condition]).toEqual(['The jury said', 'noisy']);
  const files = dirFiles(MODEL);
  const { tokenizer } = await loadTokenizer(files, await loadConfig(files));
  return tokenizer!.decode(ref.f32_gen_ids.slice(0, TOKENS), { skipSpecialTokens: true });
}

let tmp = '';
let app = '';
let packed: { filename: string; files: Array<{ path: string }> };
let expected = '';
const examples = readmeExamples();

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'hrm-pkg-'));
  app = join(tmp, 'app');
  mkdirSync(app);
  expected = await referenceText();
  // npm pack runs `prepare`, which builds dist/ from the sources under test.
  const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', tmp], root, 180_000);
  packed = JSON.parse(stdout.slice(stdout.indexOf('[')))[0];
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  const install = (mode: string) => exec('npm',
    ['install', mode, '--no-audit', '--no-fund', join(tmp, packed.filename)], app);
  // Offline from npm's cache when it holds every dependency's metadata; else let npm fill the gaps.
  await install('--offline').catch(() => install('--prefer-offline'));
}, 300_000);

afterAll(() => { if (tmp) rmSync(tmp, { recursive: true, force: true }); });

describe('the packed package', () => {
  it('holds dist/ with its types, the embedded model and the CLIs, and not the sources or test data', () => {
    const paths = packed.files.map((f) => f.path);
    for (const p of ['dist/index.js', 'dist/index.d.ts', 'dist/advanced.js', 'dist/advanced.d.ts',
      'dist/refract/index.js', 'dist/cli/hrm.js', 'bin/hrm.mjs', 'bin/refract.mjs',
      `models/${EMBEDDED_MODEL}/model.safetensors`, `models/${EMBEDDED_MODEL}/tokenizer.json`]) {
      expect(paths).toContain(p);
    }
    expect(paths.filter((p) => /^(src|tests|testkit|demo|bench)\/|reference|\.map$/.test(p))).toEqual([]);
    const pkg = join(app, 'node_modules/hrm-webgpu');
    const manifest = JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8'));
    expect(manifest.exports['.'].types).toBe(manifest.types);
    expect(existsSync(join(pkg, manifest.types))).toBe(true);
  });

  it('the installed `hrm generate` decodes the embedded model to the reference\'s greedy text', async () => {
    const { stdout, stderr } = await exec(join(app, 'node_modules/.bin/hrm'),
      ['generate', 'The jury said', '--condition', 'noisy', '--max-tokens', String(TOKENS)], app);
    expect(stdout).toBe(`${expected}\n`);
    expect(stderr).toMatch(new RegExp(`decode: ${TOKENS - 1} tokens`));
  });

  it('the README\'s Node example runs against the installed package', async () => {
    writeFileSync(join(app, 'generate.mjs'), examples.node);
    const { stdout } = await exec('node', ['generate.mjs'], app);
    expect(stdout).toBe(`${expected}\n`);
  });

  it('the README\'s Deno example imports the installed package (node_modules)', async () => {
    writeFileSync(join(app, 'generate.ts'), examples.deno);
    const { stdout } = await exec(bin('deno'), ['run', '-A', 'generate.ts'], app);
    expect(stdout).toBe(`${expected}\n`);
  });

  it('hrm-webgpu/advanced resolves from the installed package (its own entry, beside the main one)', async () => {
    const script = "const a = await import('hrm-webgpu/advanced'); const m = await import('hrm-webgpu'); " +
      "console.log(JSON.stringify([a.kvStorage('ctk=q8_0,ctv=q4_0'), typeof a.HrmModel, 'HrmModel' in m]));";
    const { stdout } = await exec('node', ['--input-type=module', '-e', script], app);
    expect(JSON.parse(stdout)).toEqual([{ k: 8, v: 4 }, 'function', false]);
  });

  it('a TypeScript app typechecks against the declared types (and a wrong option type fails)', async () => {
    writeFileSync(join(app, 'check.ts'), [
      "import { generateText, loadModel, parseKvConfig, type GenerationResult } from 'hrm-webgpu';",
      "import { HrmModel, kvStorage } from 'hrm-webgpu/advanced';",
      'const lm = await loadModel();',
      "const r: GenerationResult = await generateText(lm, 'x', { maxTokens: 2, cache: { kv: 'ctk=q8_0,ctv=q4_0' } });",
      "const bits: number | string | null = parseKvConfig('ctv=q4_0').v.bits;",
      'const model: HrmModel = lm.model;',
      "const spec: { k: number | string | null } = kvStorage('ctk=q8_0');",
      '// @ts-expect-error maxTokens is a number',
      "await generateText(lm, 'x', { maxTokens: '2' });",
      '// @ts-expect-error the temperature is the sampler\'s',
      "await generateText(lm, 'x', { temperature: 1 });",
      'export { r, bits, model, spec };',
    ].join('\n'));
    // No skipLibCheck: the shipped .d.ts files themselves are checked.
    await exec(bin('tsc'),
      ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--lib', 'es2023,dom', 'check.ts'], app);
  });

  it('the README\'s Vite page bundles without the Node-only Dawn binding and generates in headless Chromium',
    async () => {
    const web = join(app, 'web');
    mkdirSync(join(web, 'public'), { recursive: true });
    writeFileSync(join(web, 'index.html'),
      '<!doctype html><html><body><pre id="out"></pre><script type="module" src="./main.js"></script></body></html>');
    writeFileSync(join(web, 'main.js'), examples.vite);
    cpSync(join(app, 'node_modules/hrm-webgpu/models'), join(web, 'public/models'), { recursive: true });
    await build({ root: web, configFile: false, logLevel: 'error',
      build: { outDir: 'dist', chunkSizeWarningLimit: 4096 } });
    const assets = join(web, 'dist/assets');
    const bundle = readdirSync(assets).filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(assets, f),
      'utf8')).join('\n');
    expect(bundle).toContain('hrm-webgpu'); // our code is in there (the device label)...
    expect(bundle).not.toMatch(/dawn\.node|dawnNodePath/); // ...npm webgpu's loader of the Dawn binary is not
    // 'mpa': a missing file is a 404 (as on a static host), not the SPA's index.html, so absent optional files read as
    // absent.
    const server = await preview({ root: web, configFile: false, appType: 'mpa', logLevel: 'error',
      build: { outDir: 'dist' }, preview: { host: '127.0.0.1', port: 0 } });
    const browser = await launch();
    try {
      const addr = server.httpServer.address();
      const page = await browser.newPage();
      const log = watchConsole(page);
      await page.goto(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`);
      await page.waitForFunction((want: string) => document.querySelector('#out')?.textContent === want,
        { timeout: 120_000 }, expected)
        .catch(async (e) => {
          const shown = JSON.stringify(await page.$eval('#out', (n) => n.textContent));
          throw new Error(`${(e as Error).message}; page shows ${shown}; ${log.join('\n')}`);
        });
    } finally {
      await browser.close();
      await new Promise((r) => server.httpServer.close(r));
    }
  });
});
