// The browser test's page (browser.test.ts): the embedded model in a dedicated worker (e2e.worker.ts) driven through
// HrmWorkerClient, and the same model on this page's own thread to compare with. Long tasks of this thread are
// recorded while the worker generates: the page must stay free.
import { HrmWorkerClient } from '../../src/worker/index.ts';
import { InputError, loadModel, logits } from '../../src/index.ts';
import type { GenerateEvent } from '../../src/worker/protocol.ts';

export interface PageResult {
  runtime: string;
  stages: string[];
  pieces: string[];
  done: GenerateEvent;
  /** Main-thread long tasks (ms) while the worker generated; and those of a 70 ms busy task (the observer works). */
  longTasks: number[];
  probe: number[];
  aborted: { stopReason: string; decodeTokens: number; textEvents: number; msAfterAbort: number };
  /** Greedy ids of the same prompt generated on this thread. */
  mainIds: number[];
  /** The worker's logits against the page thread's: values, ids x vocab expected, words that differ, the first. */
  logits: { length: number; expected: number; differing: number; first: number | null };
  error: { isInputError: boolean; name: string; message: string };
}

async function events(it: AsyncIterable<GenerateEvent>, each?: (ev: GenerateEvent) => void): Promise<GenerateEvent[]> {
  const out: GenerateEvent[] = [];
  for await (const ev of it) { out.push(ev); each?.(ev); }
  return out;
}

/** Where the page is, for the test's message when it never finishes. */
function step(name: string): void {
  (window as unknown as { __step: string }).__step = name;
}

export async function run(): Promise<PageResult> {
  step('long-task probe');
  let longTasks: number[] = [];
  let watching = false;
  new PerformanceObserver((list) => {
    if (watching) for (const e of list.getEntries()) longTasks.push(e.duration);
  }).observe({ type: 'longtask' });
  watching = true;
  await new Promise((r) => setTimeout(r, 0));
  const t0 = performance.now();
  while (performance.now() - t0 < 70) { /* a long task of our own */ }
  await new Promise((r) => setTimeout(r, 200));
  const probe = longTasks;
  longTasks = [];
  step('worker load');
  const hrm = new HrmWorkerClient(new Worker(new URL('./e2e.worker.ts', import.meta.url), { type: 'module' }));
  const stages: string[] = [];
  const info = await hrm.load(undefined, {
    progressCallback: (p) => { if (stages.at(-1) !== p.stage) stages.push(p.stage); },
  });
  const opts = { condition: 'noisy', maxTokens: 6 };
  longTasks = [];
  watching = true;
  step('worker generate');
  const streamed = await events(hrm.generate('The jury said', opts));
  watching = false;
  // Stop after the second piece: the worker's generation ends there, well before its 64 tokens.
  step('worker generate, aborted');
  const ctl = new AbortController();
  let textEvents = 0;
  let abortedAt = 0;
  const stopped = await events(hrm.generate('The jury said', { maxTokens: 64, signal: ctl.signal }), (ev) => {
    if (ev.type === 'text' && ++textEvents === 2) { abortedAt = performance.now(); ctl.abort(); }
  });
  const msAfterAbort = performance.now() - abortedAt;
  const last = stopped.at(-1)!;
  if (last.type !== 'done') throw new Error('the stopped generation ended without a done event');
  step('worker bad option');
  const error = await hrm.generateText('x', { cache: { kv: 'ctk=q9_9' } }).then(() => null, (e: Error) => e);
  if (!error) throw new Error('a bad KV string was accepted');

  step('page load');
  const lm = await loadModel();
  const main = await events((await import('../../src/index.ts')).generate(lm, 'The jury said', opts));
  const ids = lm.tokenizer!.encode('The jury said that the city');
  step('logits');
  const [mine, theirs] = [await logits(lm, ids), await hrm.logits(ids)];
  const bits = (x: Float32Array) => new Uint32Array(x.buffer, x.byteOffset, x.length);
  const [a, b] = [bits(mine), bits(theirs)];
  let differing = 0, first: number | null = null;
  for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) { differing++; first ??= i; }
  hrm.terminate();
  lm.model.gpu.destroy();
  const mainDone = main.at(-1)!;
  return {
    runtime: info.adapter.runtime, stages, pieces: streamed.flatMap((e) => (e.type === 'text' ? [e.text] : [])),
    done: streamed.at(-1)!, longTasks, probe,
    aborted: { stopReason: last.stats.stopReason, decodeTokens: last.stats.decodeTokens, textEvents, msAfterAbort },
    mainIds: mainDone.type === 'done' ? mainDone.stats.ids : [],
    logits: { length: b.length, expected: ids.length * lm.config.vocab_size, differing, first },
    error: { isInputError: error instanceof InputError, name: error.name, message: error.message },
  };
}
