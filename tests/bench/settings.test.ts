// The bench's one option table: the command line (node:util parseArgs) and the page's query string must give the
// same settings, --help must list every option, and a bad value must fail naming its flag.
import { describe, expect, it, vi } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseBenchFlags } from '../../bench/harness/flags.ts';
import {
  ANCHORS_JSON, defaults, OPTIONS, READ_PROBE_JSON, settingsFrom, usage, valuesFromQuery,
} from '../../bench/harness/settings.ts';
import { readProbeFile } from '../../bench/harness/read-probe.ts';
import { main } from '../../bench/runners/cli.ts';
import { pageQuery } from '../../bench/runners/page-run.ts';

const full = ['--config', 'tiny', '--quick', '--only', 'model', '--out', '/tmp/x', '--caches', 'full,q4', '--prefill',
  '4,8', '--prompt=6', '--decode-tokens', '3', '--reps', '4', '--warmup', '0', '--samples', '2', '--matmul-rows', '8',
  '--dtype', 'f32', '--budget', '30', '--seed', '5', '--sweep-gemv', '--check-sgmat', '--ahead', '16',
  '--decode-merge', 'separate', '--decode-mlp', 'fold', '--turbo-decode', 'general', '--robustness', '--weights',
  'bf16,q4', '--decode-step', 'persistent'];

describe('bench settings', () => {
  it('takes every option from the command line onto the shape\'s defaults', () => {
    const { settings: s, help } = parseBenchFlags(full);
    expect(help).toBe(false);
    expect(s).toEqual({
      ...defaults('tiny', true), only: 'model', out: '/tmp/x', caches: ['full', 'q4'], prefill: [4, 8], prompt: 6,
      decodeTokens: 3, reps: 4, decodeReps: 4, warmup: 0, samples: 2, matmulRows: 8, dtype: 'f32', budget: 30, seed: 5,
      sweepGemv: true, checkSgmat: true, ahead: 16, decodeMerge: 'separate', decodeMlp: 'fold', turboDecode: 'general',
      robustness: true,
      weights: ['bf16', 'q4'], decodeStep: 'persistent',
    });
    expect(defaults('1b', false).decodeMlp).toBe('separate');
    expect(defaults('1b', false).decodeStep).toBe('per-op');
    // Without --weights the model runs on bf16 weights only (the full cache's run: nothing more is measured).
    expect(defaults('1b', false).weights).toEqual(['bf16']);
    // --reps sets the decode repetitions too, unless --decode-reps is given (before or after it).
    expect(parseBenchFlags(['--decode-reps', '2', '--reps', '7']).settings).toMatchObject({ reps: 7, decodeReps: 2 });
    expect(parseBenchFlags([]).settings).toEqual(defaults('1b', false));
    expect(parseBenchFlags(['-h']).help).toBe(true);
  });

  it('gives the page the same settings through its query string, the anchors and read probe as their JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-bench-settings-'));
    try {
      const anchors = join(dir, 'anchors.json');
      writeFileSync(anchors, '{"torch": "2.9", "torch_cudagraph_decode_tok_s": 64.8}');
      const probe = join(dir, 'read-probe.json');
      writeFileSync(probe, '{"GBps": 4321, "best": "xor u4 wg16896 random"}\n');
      const args = [...full, '--anchors', anchors, '--read-probe', probe];
      const q = pageQuery(args, { runtime: 'chrome' });
      expect(q.get('config')).toBe('tiny');
      expect(q.has('quick')).toBe(true);
      expect(q.has('help')).toBe(false);
      expect(q.get('runtime')).toBe('chrome');
      expect(JSON.parse(q.get(ANCHORS_JSON)!)).toEqual({ torch: '2.9', torch_cudagraph_decode_tok_s: 64.8 });
      expect(JSON.parse(q.get(READ_PROBE_JSON)!)).toEqual({ GBps: 4321, best: 'xor u4 wg16896 random' });
      expect(settingsFrom(valuesFromQuery(new URLSearchParams(q.toString())))).toEqual(parseBenchFlags(args).settings);
      expect(() => pageQuery(args, { quick: '1' })).toThrow(/'quick' is a bench option/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists every option in --help and names the flag of a bad value', () => {
    const help = usage();
    for (const o of OPTIONS) expect(help).toContain(`--${o.name}${o.arg ? ` ${o.arg}` : ''}`);
    expect(help.split('\n').length).toBeGreaterThan(OPTIONS.length);
    expect(() => parseBenchFlags(['--prompt', '0'])).toThrow("[bench] --prompt must be an integer >= 1 (got '0')");
    expect(() => parseBenchFlags(['--caches',
      'q3'])).toThrow("[bench] --caches takes a list of full, q8, q4, turbo4, turbo3 (got 'q3')");
    expect(() => parseBenchFlags(['--config', 'xl'])).toThrow("[bench] --config must be 1b or tiny (got 'xl')");
    expect(() => parseBenchFlags(['--bogus'])).toThrow(/^\[bench\] Unknown option '--bogus'.*\nusage: bench/s);
    expect(() => settingsFrom({ 'decode-merge': 'both' })).toThrow(/--decode-merge must be fold or separate/);
    expect(() => parseBenchFlags(['--weights',
      'q5'])).toThrow("[bench] --weights takes a list of bf16, q8, q4 (got 'q5')");
    expect(() => parseBenchFlags(['--weights',
      ','])).toThrow("[bench] --weights takes a list of bf16, q8, q4 (got ',')");
  });

  it('reads --read-probe\'s last JSON line, and names the file of a missing or bad one in one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-bench-probe-'));
    try {
      const file = (name: string, text: string) => { writeFileSync(join(dir, name), text); return join(dir, name); };
      // Dawn may log before the probe's line: the last line that opens a JSON object is the probe's.
      const ok = file('ok.json', 'warning: something\n{"GBps": 1}\n{"GBps": 4321.5, "best": "add u1 wg528 random"}\n');
      expect(readProbeFile(ok)).toEqual({ GBps: 4321.5, best: 'add u1 wg528 random' });
      const cases: Array<[string, RegExp]> = [
        [join(dir, 'missing.json'), /^\[bench\] --read-probe \S+missing\.json: cannot read it \(ENOENT/],
        [file('text.json', 'Segmentation fault\n'), /^\[bench\] --read-probe \S+text\.json: no JSON line in it$/],
        [file('cut.json', '{"GBps": 43'), /^\[bench\] --read-probe \S+cut\.json: its JSON line does not parse \(/],
        [file('none.json', '{"read_GBps": {}}'), /^\[bench\] --read-probe \S+none\.json: no positive GBps figure/],
        [file('zero.json', '{"GBps": 0}'), /^\[bench\] --read-probe \S+zero\.json: no positive GBps figure/],
      ];
      for (const [path, message] of cases) {
        let error = '';
        try { readProbeFile(path); } catch (e) { error = (e as Error).message; }
        expect(error, path).toMatch(message);
        expect(error.split('\n'), path).toHaveLength(1);
      }
      // The bench itself stops before opening a device, with that line and exit code 2 (as for a bad flag).
      const said = vi.spyOn(console, 'error').mockImplementation(() => undefined);
      try {
        expect(await main(['--config', 'tiny', '--read-probe', join(dir, 'text.json')])).toBe(2);
        expect(said.mock.calls).toEqual([[`[bench] --read-probe ${join(dir, 'text.json')}: no JSON line in it`]]);
      } finally {
        said.mockRestore();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
