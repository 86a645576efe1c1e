// Awaiting the GPU without making the thread spin. While any promise of Dawn's Node binding (npm `webgpu`) is
// pending, the binding polls the device from a setImmediate callback that it allocates anew on every turn of the
// event loop, so an idle wait turns the loop hundreds of thousands of times a second: on lavapipe a quarter of the
// process's CPU time went to that polling and a sixth to collecting its garbage. `quietly` lets an idle loop turn at
// most once every POLL_MS while one of our waits has been pending for GRACE_MS: one callback of ours a turn blocks
// the thread that long (Atomics.wait) when nothing else ran since the last turn, so the binding polls ~10,000 times
// a second. Short waits (an error scope, a small read) run as before; a long one (a prefill's result) settles at
// most ~POLL_MS later than it would.
// (Decode readbacks were once also paced, each asked only when its step should be done. Under `quietly` that saved
// no collection on lavapipe, and on the H200 it fed back on itself: a wait throttled to 0.1 ms a turn made a late
// ask look like a slow step. Every readback is now asked at once; the runs: bench/results/README.md.)
//  - One such callback at most: its chain ends at the first turn with no wait pending. (The first version started a
//    chain for every wait that found none pending, while the chain of the last one was still queued: chains piled
//    up over a run, each turn took their sum, and on the H200 every wait took milliseconds.)
//  - Where a 0.1 ms wait keeps sleeping far longer (a coarse timer), the turns spin on the clock instead.
// Only under Node, where the binding behaves so and the main thread may block; elsewhere a plain await.
import { runtimeName } from './device.ts';

/** How long each turn of the event loop blocks while a wait is pending (ms). */
export const POLL_MS = 0.1;
/** How long waits run unthrottled before the turns block (ms): the polling of a short wait makes little garbage. */
export const GRACE_MS = 1;

/**
 * Whether this runtime's WebGPU binding polls so while a promise is pending (Node's; browsers and Deno resolve
 * without allocating a turn). Waits are throttled only where it does.
 */
const bindingPolls = runtimeName() === 'node';

const cell = bindingPolls && typeof SharedArrayBuffer === 'function' ? new Int32Array(new SharedArrayBuffer(4)) : null;
let waits = 0;
let since = 0;   // when the pending waits began (waits went from 0 to 1)
let chain = false;
let overslept = 0;
let lastTurn = 0;   // when the last turn's callback returned

/**
 * The one callback a turn while any wait is pending: blocks (or spins) POLL_MS, then queues itself again. A turn
 * that comes more than POLL_MS after the last one ran other work meanwhile (a decode step recorded while earlier
 * ones are awaited): the loop is not spinning, and blocking would only delay that work, so it does not block.
 */
function turn(): void {
  if (waits === 0) {
    chain = false;
    return;
  }
  const t0 = performance.now();
  if (t0 - since >= GRACE_MS && t0 - lastTurn <= POLL_MS) {
    if (overslept < 8) {
      Atomics.wait(cell!, 0, 0, POLL_MS);
      overslept = performance.now() - t0 > 10 * POLL_MS ? overslept + 1 : 0;
    } else {
      while (performance.now() - t0 < POLL_MS) { /* spin: this host's timed waits sleep too long */ }
    }
  }
  lastTurn = performance.now();
  setImmediate(turn);
}

/** `await p` for a promise the GPU's progress settles (mapAsync, onSubmittedWorkDone, popErrorScope). */
export async function quietly<T>(p: Promise<T>): Promise<T> {
  if (!cell) return p;
  if (waits++ === 0) since = performance.now();
  if (!chain) {
    chain = true;
    setImmediate(turn);
  }
  try {
    return await p;
  } finally {
    waits--;
  }
}
