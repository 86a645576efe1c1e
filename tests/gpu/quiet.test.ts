// quietly: a wait on the GPU pending for more than GRACE_MS turns Node's event loop at most once every POLL_MS
// (Dawn's Node binding polls from a callback it allocates every turn), and settles as the awaited promise does.
import { describe, expect, it } from 'vitest';
import { GRACE_MS, POLL_MS, quietly } from '../../src/gpu/quiet.ts';

/**
 * Turns of the event loop while `wait` runs, counted by a callback that reschedules itself as Dawn's poller does;
 * `late`, those past the first GRACE_MS (which run free by design); and the milliseconds the wait took (a loaded
 * machine fires timers late, so bounds scale with the time taken).
 */
async function timedTurns(wait: () => Promise<unknown>): Promise<{ turns: number; late: number; ms: number }> {
  let turns = 0, late = 0, on = true;
  const t0 = performance.now();
  const spin = () => {
    turns++;
    if (performance.now() - t0 > GRACE_MS) late++;
    if (on) setImmediate(spin);
  };
  setImmediate(spin);
  await wait();
  const ms = performance.now() - t0;
  on = false;
  return { turns, late, ms };
}

async function turnsDuring(wait: () => Promise<unknown>): Promise<number> {
  return (await timedTurns(wait)).turns;
}

const after = (ms: number) => new Promise<string>((r) => setTimeout(() => r('done'), ms));

describe('quietly', () => {
  it('settles as the promise it waits on', async () => {
    expect(await quietly(after(2))).toBe('done');
    await expect(quietly(Promise.reject(new Error('lost')))).rejects.toThrow('lost');
  });

  it('turns the event loop at most about once every POLL_MS while waiting, not as fast as it can', async () => {
    const free = await timedTurns(() => after(30));
    // The first GRACE_MS run free, so only the turns after it are bounded: one a POLL_MS, and on a loaded machine a
    // turn that comes late does not block (it ran other work) while the next one does: at most two a POLL_MS.
    // (Bounding all turns by the free rate measured before failed a CI run whose load changed in between: 870
    // against 849.) An unthrottled loop still turns far more often (the free-running checks).
    const bound = (ms: number) => 2 * ms / POLL_MS + 20;
    const quiet = await timedTurns(() => quietly(after(30)));
    expect(quiet.late).toBeLessThanOrEqual(bound(quiet.ms));
    expect(free.turns).toBeGreaterThan(2 * quiet.turns);
    // Waits that overlap share one throttle, and the loop runs freely again once none is pending.
    const both = await timedTurns(() => Promise.all([quietly(after(20)), quietly(after(30))]));
    expect(both.late).toBeLessThanOrEqual(bound(both.ms));
    expect(await turnsDuring(() => after(30))).toBeGreaterThan(2 * quiet.turns);
  });

  it('does not block a turn that follows other work: a busy thread loses no time to the throttle', async () => {
    // Each turn runs 0.5 ms of work (a decode step being recorded while earlier ones are awaited). The gap from one
    // turn's work to the next is the loop's own overhead, microseconds, unless the throttle blocks it (POLL_MS
    // every turn, so at least that). Medians, so that a loaded machine preempting the thread now and then does not
    // decide (three spinning processes on two cores: a 0.06 ms median).
    const gaps: number[] = [];
    let on = true, end = 0;
    const work = () => {
      const t = performance.now();
      if (end) gaps.push(t - end);
      while (performance.now() - t < 0.5) { /* work */ }
      end = performance.now();
      if (on) setImmediate(work);
    };
    setImmediate(work);
    await quietly(after(60));
    on = false;
    gaps.sort((x, y) => x - y);
    expect(gaps.length).toBeGreaterThan(4);
    expect(gaps[gaps.length >> 1]).toBeLessThan(0.75 * POLL_MS);
  });

  it('keeps one throttle however many waits came and went before (a chain each had made every turn their sum)',
    async () => {
    for (let i = 0; i < 200; i++) await quietly(Promise.resolve(i));
    for (let i = 0; i < 50; i++) await quietly(after(0));
    const t0 = performance.now();
    const turns = await turnsDuring(() => quietly(after(30)));
    const ms = performance.now() - t0;
    // A 30 ms wait: within 120 ms even when a loaded machine fires the timer late (piled chains, each turn their sum,
    // are told apart by the turns below: they turned once or twice).
    expect(ms).toBeLessThan(120);
    // the loop still turns about every POLL_MS (piled chains: once)
    expect(turns).toBeGreaterThan(ms / (10 * POLL_MS));
    // At most two turns a POLL_MS (a late turn does not block, the next does), and the free turns of the grace
    // (~1 a us).
    expect(turns).toBeLessThanOrEqual(2 * ms / POLL_MS + 20 + 2000 * GRACE_MS);
  });
});
