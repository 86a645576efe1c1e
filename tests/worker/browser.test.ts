// The model in a dedicated worker in headless Chromium (page.ts): the embedded model loads in the worker, streams
// tokens (the same as this page's own thread generates), stops when aborted, rejects a bad option with the library's
// error class, and its logits equal the page thread's bit for bit; the page thread has no task over 50 ms meanwhile.
import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
import { pageRun } from '../../testkit/helpers/browser.ts';
import type { PageResult } from './page.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the model in a Web Worker (headless Chromium)', () => {
  it('streams, aborts, and gives the page thread\'s logits bit for bit', async () => {
    // 'mpa': a missing model file is a 404, not an index page (the loader probes for shard indexes).
    const { result: r, log } = await pageRun<PageResult & { error?: string | PageResult['error'] }>(
      { root, appType: 'mpa' }, 'tests/worker/page.html', 100_000);
    expect(typeof r.error === 'string' ? r.error : undefined, log.join('\n')).toBeUndefined();
    expect(r.runtime).toBe('browser');
    expect(r.stages).toEqual(['config', 'tokenizer', 'weights']);
    if (r.done.type !== 'done') throw new Error('no done event');
    expect(r.done.stats.stopReason).toBe('max_tokens');
    expect(r.done.stats.ids).toEqual(r.mainIds);
    expect(r.pieces.join('')).toBe(r.done.text);
    expect(r.pieces.length).toBeGreaterThan(1);
    expect(r.aborted).toMatchObject({ stopReason: 'aborted', textEvents: 2 });
    expect(r.aborted.decodeTokens).toBeLessThan(10);
    const message = expect.stringMatching(/^\[kvconfig\] unknown cache type ctk=q9_9/);
    expect(r.error).toEqual({ isInputError: true, name: 'InputError', message });
    expect(r.logits.expected).toBeGreaterThan(0);
    expect(r.logits).toEqual({ length: r.logits.expected, expected: r.logits.expected, differing: 0, first: null });
    expect(r.probe.some((ms) => ms >= 70)).toBe(true); // the observer sees a long task of the page's
    expect(r.longTasks.filter((ms) => ms > 50)).toEqual([]);
  });
});
