// Awaiting the GPU without making garbage. While any promise of Dawn's Node binding (npm `webgpu`) is pending, the
// binding polls the device from a setImmediate callback that it allocates anew on every turn of the event loop, so
// an idle wait turns the loop hundreds of thousands of times a second: on lavapipe a quarter of the process's CPU time
// went to that polling and a sixth to collecting its garbage, and on the H200 collection pauses of 30-120 ms stalled
// the recording of the next batch. `quietly` lets the loop turn at most once every POLL_MS while one of our waits is
// pending: each turn spins that long on the clock, allocating nothing. (With Atomics.wait blocking each turn
// instead, the H200 run 20261202-161039Z had its kernel benchmarks 4-5x slower by their own GPU timestamps and its
// parity checks out of time: the waits evidently slept far longer than asked there, so the GPU idled between
// batches and its clocks fell.) The results are the same, each at most POLL_MS later. Only under Node, where the
// binding behaves so; elsewhere a plain await.
import { runtimeName } from './device.ts';

/** How long each turn of the event loop spins while a wait is pending (ms). */
export const POLL_MS = 0.1;

const node = runtimeName() === 'node';
let waits = 0;

/** One callback a turn, spinning POLL_MS on the clock, while any wait is pending. */
function turn(): void {
  if (waits === 0) return;
  const end = performance.now() + POLL_MS;
  while (performance.now() < end) { /* spin: a turn of the loop at most every POLL_MS */ }
  setImmediate(turn);
}

/** `await p` for a promise the GPU's progress settles (mapAsync, onSubmittedWorkDone, popErrorScope). */
export async function quietly<T>(p: Promise<T>): Promise<T> {
  if (!node) return p;
  if (waits++ === 0) setImmediate(turn);
  try {
    return await p;
  } finally {
    waits--;
  }
}
