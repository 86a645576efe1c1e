// quietly: a wait on the GPU turns Node's event loop at most once every POLL_MS (Dawn's Node binding polls from a
// callback it allocates every turn), and settles as the awaited promise does.
import { describe, expect, it } from 'vitest';
import { POLL_MS, quietly } from '../../src/tensor/quiet.ts';

/** Turns of the event loop while `wait` runs, counted by a callback that reschedules itself as Dawn's poller does. */
async function turnsDuring(wait: () => Promise<unknown>): Promise<number> {
  let turns = 0, on = true;
  const spin = () => { turns++; if (on) setImmediate(spin); };
  setImmediate(spin);
  await wait();
  on = false;
  return turns;
}

const after = (ms: number) => new Promise<string>((r) => setTimeout(() => r('done'), ms));

describe('quietly', () => {
  it('settles as the promise it waits on', async () => {
    expect(await quietly(after(2))).toBe('done');
    await expect(quietly(Promise.reject(new Error('lost')))).rejects.toThrow('lost');
  });

  it('turns the event loop at most about once every POLL_MS while waiting, not as fast as it can', async () => {
    const free = await turnsDuring(() => after(30));
    const quiet = await turnsDuring(() => quietly(after(30)));
    expect(quiet).toBeLessThanOrEqual(30 / POLL_MS + 20);
    expect(free).toBeGreaterThan(3 * quiet);
    // Waits that overlap share one throttle, and the loop runs freely again once none is pending.
    const both = await turnsDuring(() => Promise.all([quietly(after(20)), quietly(after(30))]));
    expect(both).toBeLessThanOrEqual(30 / POLL_MS + 20);
    expect(await turnsDuring(() => after(30))).toBeGreaterThan(3 * quiet);
  });
});
