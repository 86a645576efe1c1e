// The demo's Stop under Node/Dawn: generate() with an aborted signal returns without waiting for the decode steps
// still queued on the GPU (how fast is the browser test's to measure); its tokens are the start of the unstopped
// run's, and the dropped steps, finishing after it returned, change nothing in the next generation.
import { describe, expect, it } from 'vitest';
import { generate, type GenerateOptions } from '../../src/hrm/generate.ts';
import type { LoadedModel } from '../../src/hrm/load.ts';
import { getGpu } from '../helpers/gpu.ts';
import { model } from '../../testkit/helpers/model.ts';

async function run(lm: LoadedModel, opts: GenerateOptions, onText?: (n: number) => void) {
  let n = 0;
  for await (const ev of generate(lm, 'The jury said', { maxTokens: 24, ...opts })) {
    if (ev.type === 'text') onText?.(++n);
    else return ev;
  }
  throw new Error('no done event');
}

describe('generate stopped by an AbortSignal', () => {
  it('ends with the tokens so far; the steps it dropped change nothing in the next run', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const full = await run(lm, {});
    expect(full.stats.stopReason).toBe('max_tokens');
    const ctl = new AbortController();
    const stopped = await run(lm, { signal: ctl.signal }, (n) => { if (n === 3) ctl.abort(); });
    expect(stopped.stats.stopReason).toBe('aborted');
    expect(stopped.stats.ids.length).toBeGreaterThanOrEqual(3);
    expect(stopped.stats.ids.length).toBeLessThan(full.stats.ids.length);
    expect(stopped.stats.ids).toEqual(full.stats.ids.slice(0, stopped.stats.ids.length));
    const again = await run(lm, {});
    expect(again.stats.ids).toEqual(full.stats.ids);
    expect(again.text).toBe(full.text);
  });

  it('stopped before it starts: no token, stop reason "aborted"', async () => {
    const lm = await model(await getGpu(), 'brown', 'f32');
    const ctl = new AbortController();
    ctl.abort();
    const r = await run(lm, { signal: ctl.signal });
    expect(r.stats.stopReason).toBe('aborted');
    expect(r.stats.ids).toEqual([]);
    expect(r.text).toBe('');
  });
});
