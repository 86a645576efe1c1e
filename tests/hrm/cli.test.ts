// The `hrm` command line end to end (through tsx, as `npx hrm` runs the compiled same code).
import { describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SafetensorsFile } from '../../src/io/safetensors.ts';
import { bytesSource } from '../../src/io/sources.ts';
import { expectClose } from '../helpers/close.ts';
import { fixture, FIXTURES } from '../../testkit/helpers/fixtures.ts';
import { brownCopy } from '../helpers/brown-variants.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsx = (args: string[], env: Record<string, string> = {}) =>
  promisify(execFile)(join(root, 'node_modules/.bin/tsx'), args,
    { cwd: root, timeout: 180_000, env: { ...process.env, ...env } });
const hrm = (args: string[], env?: Record<string, string>) => tsx(['src/cli/hrm.ts', ...args], env);

/** Exit code and stderr of a run (0 and '' when it succeeds, as execFile then gives no code). */
async function fails(p: Promise<{ stderr: string }>): Promise<{ code: number; stderr: string }> {
  return p.then(({ stderr }) => ({ code: 0, stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }));
}

/**
 * Lines of stderr that are ours: not Dawn's adapter warnings (a 'Warning: ' line, then ' - While initializing
 * adapter' and a source location in Dawn's tree) nor the Vulkan loader's complaint on machines without a login
 * session (SwiftShader's adapter prints both there).
 */
const ours = (stderr: string) => stderr.split('\n').filter((l) => l && !l.startsWith('Warning: ') &&
  !l.startsWith(' - While initializing adapter') &&
  !/^\s+at \w+ \(.*third_party\/dawn\//.test(l) &&
    l !== 'error: XDG_RUNTIME_DIR is invalid or not set in the environment.');

/** A copy of the tiny-a fixture with config.json patched. */
function patched(patch: object): string {
  const d = mkdtempSync(join(tmpdir(), 'hrm-cli-cfg-'));
  cpSync(FIXTURES + 'hrm-tiny-a/model.safetensors', join(d, 'model.safetensors'));
  writeFileSync(join(d, 'config.json'),
    JSON.stringify({ ...JSON.parse(readFileSync(FIXTURES + 'hrm-tiny-a/config.json', 'utf8')), ...patch }));
  return d;
}

describe('hrm CLI', () => {
  it('logits writes MLX-comparable logits, compare reports them, info describes the model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-cli-'));
    const ids = [...await (await fixture('hrm-tiny-a/reference.safetensors')).array('prompt_ids')];
    const out = join(dir, 'ours.safetensors');
    await hrm(['logits', '--model', FIXTURES + 'hrm-tiny-a', '--ids', ids.join(','), '--mode', 'causal', '--out', out]);
    const f = await SafetensorsFile.open(bytesSource(out, new Uint8Array(readFileSync(out))));
    expect(f.entry('logits').shape).toEqual([ids.length, 512]);
    expectClose(await f.array('logits'),
      await (await fixture('hrm-tiny-a/reference.safetensors')).array('f32.causal_logits'), 2e-4, 0, 'CLI logits');
    expect(readdirSync(dir)).toEqual(['ours.safetensors']); // written whole, no temporary left
    const { stdout } = await hrm(['compare', out, out]);
    expect(stdout).toMatch(/max \|diff\|\s+0\.000e\+0/);
    expect(stdout).toMatch(/top-1 agree\s+100\.00 %/);
    const info = await hrm(['info']);
    expect(info.stdout).toMatch(/parameters\s+9\.91 M/);
    expect(info.stdout).toMatch(/cache slots\s+24/);
    // 24 slots x K and V x 5 heads: q8 64 levels + an f32 scale and bias (72 B a head), turbo3 a padded 128-value
    // block of 13 words (52 B), bf16 128 B.
    expect(info.stdout).toMatch(/bf16 +120\.0 MiB; .*; 30720 B a token, 16\.00 bits a value/);
    expect(info.stdout).toMatch(/q8 +67\.5 MiB; .*; 17280 B a token, 9\.00 bits a value/);
    expect(info.stdout).toMatch(/turbo3 +48\.8 MiB; .*; 12480 B a token, 6\.50 bits a value/);
  });

  it('bad flags are one line naming the flag, then the usage of the command; exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['generate', 'hi', '--foo'], /^hrm generate: unknown flag --foo$/],
      [['generate', 'hi', '--model'], /^hrm generate: --model needs a value$/],
      [['generate', 'hi', '--max-tokens', '-1'],
        /^hrm generate: --max-tokens "-1" is not valid \(expected a positive integer\)$/],
      [['generate', 'hi', '--top-p', '2'],
        /^hrm generate: --top-p "2" is not valid \(expected a number in \(0, 1\]\)$/],
      [['generate', 'hi', '--kv', ''], /^hrm generate: --kv is empty .*form: "ctk=q8_0,ctv=q4_0"$/],
      [['generate', 'hi', '--kv', 'ctk=q9'], /^hrm generate: .*unknown cache type ctk=q9/],
      [['generate', 'hi', '--condition', ''], /^hrm generate: --condition is empty/],
      [['generate', 'hi', '--stop', ''], /^hrm generate: --stop is empty/],
      [['logits', '--ids', '6,,12', '--out', 'x.safetensors'], /^hrm logits: --ids "6,,12": "" is not a token id$/],
      [['info', '--ctx', '0'], /^hrm info: --ctx "0" is not valid \(expected a positive integer\)$/],
      [['info', 'extra'], /^hrm info: unexpected argument "extra"$/],
    ];
    // nothing loads a model: cheap to run at once
    const runs = await Promise.all(cases.map(([args]) => fails(hrm(args))));
    for (const [i, [args, line]] of cases.entries()) {
      const r = runs[i];
      expect(r.code, args.join(' ')).toBe(2);
      const [first, usage] = ours(r.stderr);
      expect(first, args.join(' ')).toMatch(line);
      expect(usage, args.join(' ')).toMatch(new RegExp(`^usage: hrm ${args[0]} `));
    }
    const unknown = await fails(hrm(['frobnicate']));
    expect([unknown.code, ours(unknown.stderr)[0]]).toEqual([2,
      "hrm: unknown command 'frobnicate' (commands: generate, logits, compare, info, convert)"]);
    const env = await fails(hrm(['info', '--model', 'http://127.0.0.1:9/model'], { HRM_IDLE_TIMEOUT: 'soon' }));
    expect([env.code, ours(env.stderr)[0]]).toEqual([2,
      'hrm info: HRM_IDLE_TIMEOUT="soon" is not valid (expected seconds > 0)']);
  });

  it('no command is a usage error; info says when --ctx is past the model\'s context', async () => {
    const none = await fails(hrm([]));
    expect([none.code, ours(none.stderr)[0]]).toEqual([2,
      'hrm: give a command (generate, logits, compare, info, convert)']);
    const past = await hrm(['info', '--ctx', '99999']);
    expect(past.stdout)
      .toMatch(/^note\s+--ctx 99999 is past the model's context of 4096 tokens; a generation fills 4096 at most$/m);
    expect((await hrm(['info', '--ctx', '4096'])).stdout).not.toMatch(/^note/m);
  });

  it('an unwritable --out is refused before the model is touched, naming the flag', async () => {
    const r = await fails(hrm(['logits', '--model', '/nonexistent/model', '--ids', '6,12', '--out',
      '/nonexistent/dir/x.safetensors']));
    expect(r.code).toBe(1);
    expect(ours(r.stderr))
      .toEqual(['hrm logits: --out /nonexistent/dir/x.safetensors: folder /nonexistent/dir does not exist']);
    const dir = await fails(hrm(['logits', '--model', '/nonexistent/model', '--ids', '6', '--out', tmpdir()]));
    expect(ours(dir.stderr)).toEqual([`hrm logits: --out ${tmpdir()} is a directory; give a file path`]);
  });

  it('config.json keys of the wrong type and NaN weights fail by name; a stale num_hidden_layers only warns',
    async () => {
    const eos = patched({ eos_token_id: '11' });
    const r = await fails(hrm(['info', '--model', eos]));
    expect([r.code, ours(r.stderr)]).toEqual([1,
      [`hrm info: FormatError: ${eos}/config.json: 'eos_token_id' must be a token id or a list of token ids `
        + '(got "11")']]);
    const stale = patched({ num_layers_per_stack: 2, num_hidden_layers: 7 });
    const info = await hrm(['info', '--model', stale]);
    expect(ours(info.stderr)).toEqual([`warning: ${stale}/config.json: num_hidden_layers 7 is neither ` +
      'num_layers_per_stack 2 nor ' +
      'num_layers_per_stack * H_cycles * (L_cycles + 1) = 12; using num_layers_per_stack 2']);
    expect(info.stdout).toMatch(/2 layers per stack/);
    const nan = patched({});
    const f = await SafetensorsFile.open(bytesSource('m',
      new Uint8Array(readFileSync(join(nan, 'model.safetensors')))));
    const bytes = new Uint8Array(readFileSync(join(nan, 'model.safetensors')));
    new DataView(bytes.buffer).setUint16(f.entry('model.L_module.layers.0.mlp.down_proj.weight').start + 2 * 7,
      0x7fc0, true);
    writeFileSync(join(nan, 'model.safetensors'), bytes);
    const out = join(nan, 'logits.safetensors');
    const l = await fails(hrm(['logits', '--model', nan, '--ids', '6,12', '--out', out]));
    expect([l.code, ours(l.stderr)]).toEqual([1,
      [`hrm logits: FormatError: ${nan}/model.safetensors: tensor 'model.L_module.layers.0.mlp.down_proj.weight' ` +
      'holds 1 NaN/Inf value, the first at [0, 7] (load with checkFinite: false to skip this check)']]);
    expect(readdirSync(nan).sort()).toEqual(['config.json', 'model.safetensors']);
  });

  it('a model URL whose server stalls ends within the deadline, warning of the retry and naming the URL', async () => {
    const server = createServer(() => {}); // accepts, never answers
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/m`;
    try {
      const r = await fails(hrm(['info', '--model', base], { HRM_CONNECT_TIMEOUT: '0.2' }));
      expect([r.code, ours(r.stderr)]).toEqual([1, [
        `warning: ${base}/config.json: no response within 0.2 s (connect timeout); retrying in 1 s (attempt 2 of 5)`,
        `hrm info: NetworkError: ${base}/config.json: no response within 0.2 s (connect timeout) `
          + '(gave up after 2 attempts)',
      ]]);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('generate prints the text and its stats line only: no Dawn warning first; a context cut says so', async () => {
    const dir = brownCopy({ config: (c) => { c.max_position_embeddings = 24; } });
    // Dawn as it prints on a bare adapter request, for comparison: its limit warnings on lavapipe.
    const bare = promisify(execFile)(process.execPath, ['--input-type=module', '-e',
      "const w = await import('webgpu'); await w.create([]).requestAdapter(); process.exit(0);",
    ], { cwd: root, timeout: 60_000 });
    // Through a shell pipe, as in a terminal: execFile's own pipes are sockets, which the CLI cannot silence Dawn on.
    const piped = (args: string[]) => promisify(execFile)('sh', ['-c', '"$@" 2>&1 >/dev/null | cat', 'sh',
      join(root, 'node_modules/.bin/tsx'), 'src/cli/hrm.ts', ...args], { cwd: root, timeout: 180_000 })
      .then((r) => ({ stderr: r.stdout }));
    const [plain, cut, raw] = await Promise.all([piped(['generate', 'The jury said', '--max-tokens', '3']),
      piped(['generate', 'The jury said', '--model', dir, '--max-tokens', '100']), bare]);
    expect(plain.stderr.split('\n')).toEqual([expect.stringMatching(/^prompt: 8 tokens .*; stop: max_tokens; /), '']);
    expect(cut.stderr.split('\n')).toEqual([expect.stringMatching(
      /^prompt: 8 tokens in .*; decode: 16 tokens .*; stop: context \(the model's 24 tokens are full\); /), '']);
    // The test can fail here: lavapipe's adapter does print them.
    if (/llvmpipe/.test(plain.stderr)) expect(raw.stderr).toMatch(/maxDynamicUniformBuffers\w+ artificially reduced/);
  });

  it('a device lost in the middle of generate is one line saying so, after the text streamed so far', async () => {
    const r = await fails(tsx(['tests/helpers/lose-device.ts']));
    expect(r.code).toBe(1);
    expect(ours(r.stderr)).toEqual([expect.stringMatching(new RegExp('^hrm: DeviceLostError: the GPU device was lost '
      + 'after [1-9]\\d* characters of output \\(destroyed: .*\\); the text above is all that was generated\\. '
      + 'Run the command again'))]);
  });
});
