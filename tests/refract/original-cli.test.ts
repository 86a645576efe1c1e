// REFRACT's original Python test suite, ported (original.test.ts has the rest): test_cli.py's compare and the refract
// command line, with the cases of test_bugs.py that go through it.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { band, compareRows, renderCompareTable } from '../../src/refract/index.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

const rep = (composite: unknown, extra: Record<string,
  unknown> = {}) => JSON.stringify({ composite, band: 'EXCELLENT', axes: { gtm: { score: 95 }, kld: { score: 99 } },
  ...extra });

describe('test_cli.py / test_bugs.py compare', () => {
  it('two reports; unparseable skipped; none parseable; missing axis score; missing / null composite; '
    + 'missing band', () => {
    const { rows, notes } = compareRows([
      { path: '/x/a.json', text: rep(95) }, { path: 'b.json',
        text: rep(72.5, { band: 'DEGRADED' }) }, { path: 'bad.json', text: 'not json' },
      { path: 'no_axes.json', text: JSON.stringify({ composite: 50, axes: {} }) }, { path: 'nocomp.json',
        text: JSON.stringify({ axes: {} }) },
      { path: 'null.json', text: rep(null) }, { path: 'gone.json',
        text: new Error('cannot read gone.json') }, { path: 'list.json', text: '[1, 2]' },
    ]);
    expect(rows.map((r) => r.label)).toEqual(['a', 'b', 'no_axes', 'nocomp', 'null']);
    expect(notes).toEqual([
      expect.stringMatching(/^skip bad\.json: not JSON/), 'nocomp.json: composite is missing; shown as —',
      'null.json: composite is null; shown as —',
      'skip gone.json: cannot read gone.json', 'skip list.json: not a REFRACT report (no "axes" object)',
    ]);
    const t = renderCompareTable(rows);
    expect(t).toMatch(/^a +95\.00 EXCELLENT +95\.00 +99\.00 +— +—$/m);
    expect(t).toMatch(/^b +72\.50 DEGRADED/m);
    expect(t).toMatch(/^no_axes +50\.00 — +— +— +— +—$/m);
    expect(t).toMatch(/^null +— EXCELLENT/m);
    expect(compareRows([{ path: 'bad.json', text: 'x' }]).rows).toEqual([]);
  });
});

// Each case starts tsx processes, 2-10 s each on two shared cores.
describe('test_cli.py main (the refract command line)', { timeout: 240_000 }, () => {
  const tsx = join(root, 'node_modules/.bin/tsx');
  const cli = (...args: string[]) => promisify(execFile)(tsx, ['src/cli/refract.ts', ...args], { cwd: root }).then(
    (r) => ({ code: 0, ...r }), (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code,
      stdout: e.stdout, stderr: e.stderr }));
  it('no args exits 2 with the command list (as argparse); an unknown command or flag exits 2 naming it', async () => {
    const commands = ['score', 'compare', 'repeatability', 'sweep', 'selftest', 'fetch'];
    const [none, help] = await Promise.all([cli(), cli('--help')]);
    const list = commands.join(', ');
    expect([none.code, none.stdout, none.stderr.split('\n')[0]]).toEqual([2, '', `refract: give a command (${list})`]);
    expect(help.code).toBe(0);
    for (const c of commands) expect(none.stderr).toContain(`refract ${c}`);
    expect(help.stdout).toBe(none.stderr.slice(none.stderr.indexOf('\n\n') + 2));
    const unknown = await cli('totally-not-a-subcommand');
    const line = `refract: unknown command 'totally-not-a-subcommand' (commands: ${list})`;
    expect([unknown.code, unknown.stderr.split('\n')[0]]).toEqual([2, line]);
    const flag = await cli('score', '--bogus', '1');
    expect([flag.code, flag.stderr.split('\n')[0]]).toEqual([2, 'refract score: unknown flag --bogus']);
    expect(flag.stderr).toContain('refract score [flags]');
    expect(flag.stderr).not.toMatch(/\bat \S+:\d+/); // no stack
  });
  it('flags that cannot run are usage errors (exit 2) before the model loads, in words a user reads', async () => {
    const kv = ['score', '--candidate', 'ctk=q8_0,ctv=q8_0', '--no-progress'];
    const runs = await Promise.all([['--chunks', '0'], ['-c', '99999'],
      ['--skip-gtm', '--skip-kld']].map((f) => cli(...kv, ...f)));
    const lines = runs.map((r) => [r.code, r.stderr.split('\n')[0]]);
    expect(lines).toEqual([
      [2, 'refract score: --chunks "0" is not valid (expected a whole number from 1)'],
      [2, "refract score: -c/--ctx 99999 is past the model's context of 4096 tokens; pass 4096 or less"],
      [2, 'refract score: --skip-gtm and --skip-kld leave no axis to run; drop one, or add --axis-rniah or '
        + '--axis-plad'],
    ]);
    // Nothing opened the GPU (Dawn's adapter warnings would come first) or loaded the weights.
    for (const r of runs) expect(r.stderr).not.toMatch(/Warning: |artificially reduced/);
  });
  it('score --help explains the axes with their full names; every subcommand has its own --help', async () => {
    const h = await cli('score', '--help');
    expect(h.code).toBe(0);
    for (const s of ['Greedy Trajectory Match', 'KL Divergence at the Decoder', 'Retrieval Needle-In-A-Haystack',
      'Perturbation-Locality Aware Drift', '--measure-floor', '--rniah-lengths']) expect(h.stdout).toContain(s);
    const subs = ['compare', 'repeatability', 'sweep', 'selftest', 'fetch'];
    const helps = await Promise.all(subs.map((c) => cli(c, '--help')));
    for (const [i, c] of subs.entries()) expect(helps[i].stdout).toMatch(new RegExp(`^refract ${c}`));
  });
  it('compare on files: skips a non-report naming it, exit 1 when nothing parsed; --json-out in a missing folder '
    + 'fails before model work', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'refract-cli-'));
    writeFileSync(join(dir, 'bad.json'), 'not json');
    writeFileSync(join(dir, 'good.json'), rep(90));
    const ok = await cli('compare', join(dir, 'bad.json'), join(dir, 'good.json'));
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain(`skip ${join(dir, 'bad.json')}: not JSON`);
    expect(ok.stdout).toMatch(/^good +90\.00/m);
    const none = await cli('compare', join(dir, 'bad.json'));
    expect([none.code, none.stdout.trim().split('\n').pop()]).toEqual([1, 'no reports parsed']);
    const out = await cli('score', '--candidate', 'ctk=q8_0', '--json-out', join(dir, 'no/such/r.json'));
    expect([out.code, out.stderr.trim()]).toEqual([1,
      `refract score: --json-out ${join(dir, 'no/such/r.json')}: folder ${join(dir, 'no/such')} does not exist`]);
  });
});
