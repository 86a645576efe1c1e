// Streams a download is read through: counted as it arrives, and stopped the moment the user cancels.

/**
 * `source` re-streamed, counting its bytes (`failed` is told why it fails), and errored the moment `signal` aborts.
 * The stop errors the stream itself rather than through a pipe's signal: a pipe's abort first waits until the chunks
 * it holds are written, which a reader that has stopped reading (the cache's) may never allow. An unfinished put
 * keeps Cache Storage busy, and every later read of the cache would wait behind it. The network read is cancelled
 * as well.
 */
export function counted(source: ReadableStream<Uint8Array>, count: (bytes: number) => void, signal?: AbortSignal,
  failed?: (e: unknown) => void): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let stop = () => {};
  return new ReadableStream<Uint8Array>({
    start(ctl) {
      if (!signal) return;
      stop = () => { ctl.error(signal.reason); reader.cancel(signal.reason).catch(() => {}); };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    },
    async pull(ctl) {
      // The source's own error, told: a cache put that it ends rejects with a bare "network error".
      const { done, value } = await reader.read().catch((e: unknown) => { failed?.(e); throw e; });
      if (signal?.aborted) return;
      if (done) { signal?.removeEventListener('abort', stop); ctl.close(); return; }
      count(value.byteLength);
      ctl.enqueue(value);
    },
    cancel(reason) {
      signal?.removeEventListener('abort', stop);
      return reader.cancel(reason);
    },
  });
}

/** A promise that rejects with `signal`'s reason when it aborts (never without one); `done` drops the listener. */
export function abortable(signal?: AbortSignal): { promise: Promise<never>; done: () => void } {
  let done = () => {};
  const promise = new Promise<never>((_, reject) => {
    if (!signal) return;
    if (signal.aborted) { reject(signal.reason); return; }
    const on = () => reject(signal.reason);
    signal.addEventListener('abort', on, { once: true });
    done = () => signal.removeEventListener('abort', on);
  });
  promise.catch(() => {});
  return { promise, done };
}
