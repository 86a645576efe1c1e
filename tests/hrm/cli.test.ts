// The `hrm` command line end to end (through tsx, as `npx hrm` runs the compiled same code).
import { describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SafetensorsFile } from '../../src/tensor/safetensors.ts';
import { bytesSource } from '../../src/tensor/sources.ts';
import { expectClose } from '../helpers/close.ts';
import { fixture, FIXTURES } from '../helpers/fixtures.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const hrm = (args: string[]) => promisify(execFile)(join(root, 'node_modules/.bin/tsx'), ['src/cli/hrm.ts', ...args], { cwd: root, timeout: 180_000 });

describe('hrm CLI', () => {
  it('logits writes MLX-comparable logits, compare reports them, info describes the model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hrm-cli-'));
    const ids = [...await (await fixture('hrm-tiny-a/reference.safetensors')).array('prompt_ids')];
    const out = join(dir, 'ours.safetensors');
    await hrm(['logits', '--model', FIXTURES + 'hrm-tiny-a', '--ids', ids.join(','), '--mode', 'causal', '--out', out]);
    const f = await SafetensorsFile.open(bytesSource(out, new Uint8Array(readFileSync(out))));
    expect(f.entry('logits').shape).toEqual([ids.length, 512]);
    expectClose(await f.array('logits'), await (await fixture('hrm-tiny-a/reference.safetensors')).array('f32.causal_logits'), 2e-4, 0, 'CLI logits');
    const { stdout } = await hrm(['compare', out, out]);
    expect(stdout).toMatch(/max \|diff\|\s+0\.000e\+0/);
    expect(stdout).toMatch(/top-1 agree\s+100\.00 %/);
    const info = await hrm(['info']);
    expect(info.stdout).toMatch(/parameters\s+6\.55 M/);
    expect(info.stdout).toMatch(/cache slots\s+24/);
  });

  it('bad flags name the flag', async () => {
    await expect(hrm(['generate', 'hi', '--top-p', '2'])).rejects.toMatchObject({ stderr: expect.stringMatching(/--top-p "2" is not valid/) });
    await expect(hrm(['generate', 'hi', '--kv', 'ctk=q9'])).rejects.toMatchObject({ stderr: expect.stringMatching(/unknown cache type ctk=q9/) });
    await expect(hrm(['frobnicate'])).rejects.toMatchObject({ stderr: expect.stringMatching(/unknown command 'frobnicate'/) });
  });
});
