// The bench's one option table: the command line (node:util parseArgs) and the page's query string must give the
// same settings, --help must list every option, and a bad value must fail naming its flag.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseFlags } from '../../bench/harness/flags.ts';
import { ANCHORS_JSON, defaults, OPTIONS, settingsFrom, usage, valuesFromQuery } from '../../bench/harness/settings.ts';
import { pageQuery } from '../../bench/runners/page-run.ts';

const full = ['--config', 'tiny', '--quick', '--only', 'model', '--out', '/tmp/x', '--caches', 'full,q4', '--prefill',
  '4,8', '--prompt=6', '--decode-tokens', '3', '--reps', '4', '--warmup', '0', '--samples', '2', '--matmul-rows', '8',
  '--dtype', 'f32', '--budget', '30', '--seed', '5', '--sweep-gemv', '--check-sgmat', '--ahead', '16',
  '--decode-merge', 'separate', '--robustness'];

describe('bench settings', () => {
  it('takes every option from the command line onto the shape\'s defaults', () => {
    const { settings: s, help } = parseFlags(full);
    expect(help).toBe(false);
    expect(s).toEqual({
      ...defaults('tiny', true), only: 'model', out: '/tmp/x', caches: ['full', 'q4'], prefill: [4, 8], prompt: 6,
      decodeTokens: 3, reps: 4, decodeReps: 4, warmup: 0, samples: 2, matmulRows: 8, dtype: 'f32', budget: 30, seed: 5,
      sweepGemv: true, checkSgmat: true, ahead: 16, decodeMerge: 'separate', robustness: true,
    });
    // --reps sets the decode repetitions too, unless --decode-reps is given (before or after it).
    expect(parseFlags(['--decode-reps', '2', '--reps', '7']).settings).toMatchObject({ reps: 7, decodeReps: 2 });
    expect(parseFlags([]).settings).toEqual(defaults('1b', false));
    expect(parseFlags(['-h']).help).toBe(true);
  });

  it('gives the page the same settings through its query string, the anchors as their JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-bench-settings-'));
    try {
      const anchors = join(dir, 'anchors.json');
      writeFileSync(anchors, '{"torch": "2.9", "torch_cudagraph_decode_tok_s": 64.8}');
      const args = [...full, '--anchors', anchors];
      const q = pageQuery(args, { runtime: 'chrome' });
      expect(q.get('config')).toBe('tiny');
      expect(q.has('quick')).toBe(true);
      expect(q.has('help')).toBe(false);
      expect(q.get('runtime')).toBe('chrome');
      expect(JSON.parse(q.get(ANCHORS_JSON)!)).toEqual({ torch: '2.9', torch_cudagraph_decode_tok_s: 64.8 });
      expect(settingsFrom(valuesFromQuery(new URLSearchParams(q.toString())))).toEqual(parseFlags(args).settings);
      expect(() => pageQuery(args, { quick: '1' })).toThrow(/'quick' is a bench option/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists every option in --help and names the flag of a bad value', () => {
    const help = usage();
    for (const o of OPTIONS) expect(help).toContain(`--${o.name}${o.arg ? ` ${o.arg}` : ''}`);
    expect(help.split('\n').length).toBeGreaterThan(OPTIONS.length);
    expect(() => parseFlags(['--prompt', '0'])).toThrow("[bench] --prompt must be an integer >= 1 (got '0')");
    expect(() => parseFlags(['--caches', 'q3'])).toThrow("[bench] --caches takes a list of full, q8, q4 (got 'q3')");
    expect(() => parseFlags(['--config', 'xl'])).toThrow("[bench] --config must be 1b or tiny (got 'xl')");
    expect(() => parseFlags(['--bogus'])).toThrow(/^\[bench\] Unknown option '--bogus'.*\nusage: bench/s);
    expect(() => settingsFrom({ 'decode-merge': 'both' })).toThrow(/--decode-merge must be fold or separate/);
  });
});
