// The persistent decode kernels (issue 39: "Everywhere it can run") in Node (Dawn), Deno (wgpu) and headless Chromium
// (Dawn in the browser), each running persist.ts: the grid barrier's self-check at a grid of 2 under decodeStep
// 'persistent'; where it passes, the persistent MLP equals the runtime's own per-op path bit for bit and Node's, its
// control words are back at 0, and a forced run-out sets the flag and leaves x untouched. Deno runs twice: with its
// CPU driver's shader text and with the loops written out as a GPU gets them. Where a runtime's self-check fails,
// the summary must say why, and the test prints which runtime stays per-op and why (the test passes: the per-op path
// is the fallback there).
// Node's bits are every runtime's on the same driver (Deno on lavapipe). Another driver (Chromium's SwiftShader)
// computes the SwiGLU's exp and division otherwise, within WGSL's precision (exp 3 + 2|x| ulps, division 2.5): its
// gate_up products equal lavapipe's, a few of its activations differ by an ulp, and so do some outputs (75 of 512,
// at most an ulp of the largest output). There both paths must equal each other and stay within NEAR of Node's.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { GRID, K, persist, type PersistResult } from './persist.ts';
import { pageRun } from '../../testkit/helpers/browser.ts';

/** Another driver's MLP outputs against Node's: at most this share of the largest output (4 to 8 of its ulps). */
const NEAR = 2 ** -20;
const root = fileURLToPath(new URL('../..', import.meta.url));
let nodeRun: Promise<PersistResult> | undefined;
/** Node's run, once for the file: the bits every runtime's are compared with. */
const node = () => (nodeRun ??= persist());

/** got and want the same bits; `why` names the comparison. */
function expectBits(got: number[], want: number[], why: string): void {
  expect(got.length, why).toBe(want.length);
  const bad = want.findIndex((v, i) => v !== got[i]);
  expect(bad, `${why}: output ${bad} has bits ${got[bad]?.toString(16)}, not ${want[bad]?.toString(16)}`).toBe(-1);
}

/** The driver a run took, as the runtimes name it alike: the software driver, else the vendor. */
const driver = (r: PersistResult) => /llvmpipe|swiftshader/i.exec(r.adapter)?.[0].toLowerCase() ?? r.adapter;

/**
 * got against Node's per-op bits (`want` picks them: the MLP's x by default): the same where the driver is, else
 * within NEAR; says how far.
 */
async function againstNode(r: PersistResult, got: number[], what: string,
  want: (n: PersistResult) => number[] = (n) => n.perOp): Promise<string> {
  const n = await node();
  if (driver(r) === driver(n)) {
    expectBits(got, want(n), `${what} against Node's per-op path on the same driver (${driver(r)})`);
    return "Node's bits";
  }
  const [g, w] = [f32(got), f32(want(n))];
  const scale = w.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  const diff = w.reduce((m, v, i) => Math.max(m, Math.abs(g[i] - v)), 0);
  expect(diff, `${what} against Node's per-op path (${driver(n)})`).toBeLessThanOrEqual(NEAR * scale);
  return `${w.filter((v, i) => v !== g[i]).length} of ${w.length} outputs off Node's (${driver(n)}) by at most ` +
    `${diff} (the largest output: ${scale})`;
}

const f32 = (b: number[]) => new Float32Array(Uint32Array.from(b).buffer);

async function check(r: PersistResult, runtime: string, form = ''): Promise<void> {
  const ms = Object.entries(r.ms).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(', ');
  expect(r.runtime).toBe(runtime);
  expect(r.changed, 'the per-op MLP changes x').toBeGreaterThan(K / 2);
  const perOp = await againstNode(r, r.perOp, `${runtime}'s per-op path`);
  if (!r.verdict.on) {
    // Never a silent pass: the summary names the failed self-check, and the output says who fell back.
    expect(r.grid).toBe(0);
    expect(r.verdict.why).toMatch(/^the grid barrier failed its self-check on this device \(.+\)$/);
    console.log(`[persist] ${runtime}${form} on ${r.adapter} stays per-op: ${r.verdict.why}; per-op: ${perOp} ` +
      `(ms: ${ms})`);
    return;
  }
  expect(r.grid).toBe(GRID);
  expect(r.refused).toBeNull();
  expectBits(r.mlp!.persistent, r.perOp, `${runtime}'s persistent MLP against its per-op path`);
  await againstNode(r, r.mlp!.persistent, `${runtime}'s persistent MLP`);
  expect(r.mlp!.control, 'arrivals, exits, flag after the MLP').toEqual([0, 0, 0]);
  expect(r.runOut!.control, 'arrivals, exits, flag after a run-out').toEqual([0, 0, 1]);
  expect(r.runOut!.untouched, 'x untouched by the run-out').toBe(true);
  expect(r.runOut!.cleared, 'takeFlag cleared the flag').toBe(true);
  const nx = r.next!;
  expectBits(nx.x, nx.perOp.x, `${runtime}'s NEXT variant's x against its per-op path`);
  expectBits(nx.gq, nx.perOp.gq, `${runtime}'s NEXT variant's gqkv against its per-op path`);
  await againstNode(r, nx.x, `${runtime}'s NEXT variant's x`, (n) => n.next!.perOp.x);
  await againstNode(r, nx.gq, `${runtime}'s NEXT variant's gqkv`, (n) => n.next!.perOp.gq);
  expect(nx.control, 'arrivals, exits, flag after the NEXT variant').toEqual([0, 0, 0]);
  console.log(`[persist] ${runtime}${form} on ${r.adapter}: persistent at a grid of ${r.grid}, its bits its per-op ` +
    `path's, ${perOp} (ms: ${ms})`);
}

describe('persistent kernels in each runtime', () => {
  it('Node (Dawn)', async () => {
    await check(await node(), 'node');
  });

  it('Deno (wgpu)', async () => {
    const deno = fileURLToPath(new URL('../../node_modules/.bin/deno', import.meta.url));
    const { stdout } = await promisify(execFile)(deno, ['run', '-A', 'tests/runtimes/deno-persist.ts'],
      { cwd: root, timeout: 100_000, maxBuffer: 16 * 2 ** 20 });
    const r = JSON.parse(stdout.trim().split('\n').pop()!) as { plain: PersistResult; unrolled: PersistResult };
    await check(r.plain, 'deno');
    await check(r.unrolled, 'deno', ' (loops unrolled, as on a GPU)');
  });

  it('headless Chromium (Dawn)', async () => {
    const { result: r, log } = await pageRun<PersistResult & { error?: string }>({ root },
      'tests/runtimes/persist.html', 100_000);
    expect(r.error, log.join('\n')).toBeUndefined();
    await check(r, 'browser');
  });
});
