// Awaiting the GPU without spinning the thread. While any promise of Dawn's Node binding (npm `webgpu`) is pending,
// the binding polls the device from a setImmediate callback that it allocates anew on every turn of the event loop,
// so an idle wait turns the loop hundreds of thousands of times a second: on lavapipe a quarter of the process's CPU
// time in that polling and a sixth in collecting its garbage, and on the H200 collection pauses of 30-120 ms that
// stall the recording of the next batch. `quietly` lets the loop turn at most once every POLL_MS while one of our
// waits is pending (each turn blocks the thread that long in Atomics.wait): the same results, each at most POLL_MS
// later. Only under Node, where the binding behaves so and the main thread may block; elsewhere a plain await.
import { runtimeName } from './device.ts';

/** How long each turn of the event loop blocks while a wait is pending (ms). */
export const POLL_MS = 0.1;

const cell = runtimeName() === 'node' && typeof SharedArrayBuffer === 'function' ? new Int32Array(new SharedArrayBuffer(4)) : null;
let waits = 0;

/** One callback a turn, blocking POLL_MS, while any wait is pending. */
function turn(): void {
  if (waits === 0) return;
  Atomics.wait(cell!, 0, 0, POLL_MS);
  setImmediate(turn);
}

/** `await p` for a promise the GPU's progress settles (mapAsync, onSubmittedWorkDone, popErrorScope). */
export async function quietly<T>(p: Promise<T>): Promise<T> {
  if (!cell) return p;
  if (waits++ === 0) setImmediate(turn);
  try {
    return await p;
  } finally {
    waits--;
  }
}
