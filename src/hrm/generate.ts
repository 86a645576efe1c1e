// Generation: format the prompt (HRM envelope or the checkpoint's chat template), prefill it as one
// bidirectional block, then decode token by token (causal) with greedy / temperature / top-p sampling, stopping
// at eos, max tokens, the end of the model's context or a stop string. Text streams as whole characters. Timing
// separates prompt and decode.
// Decode steps replay a captured step (decode.ts), one per attention reach (stepper.ts); greedy steps chain on the
// GPU, a few queued ahead of the token being streamed (those past a stop are computed and dropped). `logits`, the
// other thing an app does with a loaded model, is here too: both take the cache's KV setting as a llama.cpp string
// (kv-spec.ts) or bits.
import { checkOptions, InputError } from '../errors.ts';
import type { LoadedModel } from './load.ts';
import { formatPrompt } from './prompt.ts';
import { Sampler, type SamplerOptions } from './sampling.ts';
import { TextStreamer } from './stream.ts';
import type { KvStorage, QuantMode } from './cache.ts';
import { kvStorage } from './kv-spec.ts';
import { readAndDispose, Stepper } from './stepper.ts';

/**
 * A generation's `cache` option (mlx-lm's kv_bits and quantized_kv_start, with llama.cpp's cache types): what each
 * side stores, as a KV string or a `KvStorage`, and when it is quantized.
 */
export interface CacheSpec {
  /** Cache types: a llama.cpp string (`ctk=q8_0,ctv=q4_0`, see parseKvConfig) or bits per side (default: full
   *  precision, as `ctk=f16,ctv=f16`). */
  kv?: string | KvStorage;
  /** When K/V are quantized: 'after-prefill' (mlx-lm's generation, default) or 'before-pass' (every attention). */
  mode?: QuantMode;
}

/** Options of `generate`, grouped as mlx-lm's: the prompt and stop settings here, the sampler, the cache. */
export interface GenerateOptions {
  /** Comma-separated condition tags: direct, cot, synth, noisy. Default 'synth,cot'. */
  condition?: string;
  /** Tokens to generate at most (default 128); the model's context may end it sooner. */
  maxTokens?: number;
  /** Stop before the first of these strings in the text (it is cut off). */
  stop?: string[];
  /** Stops the generation between tokens (stopReason 'aborted'). */
  signal?: AbortSignal;
  /** How the next token is picked: greedy (temperature 0, the default) or a seeded top-p draw. */
  sampler?: SamplerOptions;
  /** The KV cache: its cache types and when it quantizes. */
  cache?: CacheSpec;
  /** Use these ids as the formatted prompt (no envelope, no template): REFRACT and tests. */
  promptIds?: number[];
  /** Record every decode step instead of replaying a captured one (comparisons, debugging). */
  noGraph?: boolean;
}

/** What `generate` needs of a model: a LoadedModel (or one with another HrmModel over the same weights). */
export type GenerateModel = Pick<LoadedModel, 'model' | 'tokenizer' | 'chatTemplate'>;

export interface GenerateStats {
  promptTokens: number;
  promptMs: number;
  decodeTokens: number;
  decodeMs: number;
  ids: number[];
  /** 'context': the model's context (max_position_embeddings) filled before maxTokens were generated. */
  stopReason: 'eos' | 'max_tokens' | 'context' | 'stop_string' | 'aborted';
  /** Waited before the prompt for GPU work submitted earlier (a stopped job's last steps): in no other figure. */
  waitMs: number;
  cacheBytes: number;
  /** Dispatches a replayed decode step runs, or why steps were recorded one by one. */
  decodePath: { replayed: number } | { recorded: string };
  /**
   * Decode steps whose MLPs ran on the persistent kernel (DeviceOptions.kernels.decodeStep; 0 on the per-op path).
   * A step whose grid barrier ran out was redone per op, as was every step after it (gpu.summary.fastPaths says why).
   */
  persistentSteps: number;
}

export type GenerateEvent = { type: 'text'; text: string } | { type: 'done'; stats: GenerateStats; text: string };

/** generate's keys (a Record, so that a new option must be named here to be accepted). */
const KEYS: Record<keyof GenerateOptions, true> = {
  condition: true, maxTokens: true, stop: true, signal: true, sampler: true, cache: true, promptIds: true,
  noGraph: true,
};
const sampler = (k: string) => `it belongs in sampler.${k}: { sampler: { ${k}: ... } }`;
/** Where keys of other libraries' generation options (transformers.js, WebLLM, mlx-lm, llama.cpp) live here. */
const MOVED: Record<string, string> = {
  temperature: sampler('temperature'), topP: sampler('topP'), top_p: sampler('topP'), seed: sampler('seed'),
  do_sample: 'sampling is sampler.temperature above 0', top_k: 'top-k sampling is not offered; use sampler.topP',
  topK: 'top-k sampling is not offered; use sampler.topP',
  kv: 'it belongs in cache.kv', kv_bits: 'it belongs in cache.kv', kvConfig: 'it belongs in cache.kv',
  mode: 'it belongs in cache.mode', max_new_tokens: 'it is maxTokens', maxNewTokens: 'it is maxTokens',
  max_tokens: 'it is maxTokens', n_predict: 'it is maxTokens', nPredict: 'it is maxTokens', stop_strings: 'it is stop',
  onText: "it is generateText's; generate yields the text as events", dtype: "the activations' dtype is loadModel's",
};
const SAMPLER_KEYS = ['temperature', 'topP', 'seed'];
const SAMPLER_MOVED: Record<string, string> = {
  top_p: 'it is topP', top_k: 'top-k sampling is not offered; use topP',
  topK: 'top-k sampling is not offered; use topP',
};

/** Refuse what generate would otherwise ignore: keys it does not know, at the top and in sampler and cache. */
export function checkGenerateOptions(op: string, opts: object, own: readonly string[] = []): void {
  checkOptions(op, 'the options', opts, [...Object.keys(KEYS), ...own], MOVED);
  const o = opts as GenerateOptions;
  checkOptions(op, 'sampler', o.sampler, SAMPLER_KEYS, SAMPLER_MOVED);
  checkOptions(op, 'cache', o.cache, ['kv', 'mode'], { kv_bits: 'it is kv', ctk: "it is kv: 'ctk=q8_0,ctv=q8_0'" });
}

const now = () => (globalThis.performance ?? Date).now();

/** Returned by `orAborted` when the signal fired first. */
export const ABORTED: unique symbol = Symbol('aborted');

/**
 * `p`'s value, or ABORTED as soon as `signal` aborts. Submitted GPU work cannot be cancelled, so a stopped caller
 * returns at once and leaves `p` to finish on its own (its outcome is dropped).
 */
export function orAborted<T>(p: Promise<T>, signal?: AbortSignal): Promise<T | typeof ABORTED> {
  if (!signal) return p;
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Stream a completion: `{ type: 'text' }` events as whole characters arrive, then one `{ type: 'done' }` with the
 * text and timing. Greedy by default; `signal` stops it between tokens (stopReason 'aborted').
 * @example for await (const ev of generate(lm, 'The jury said', { sampler: { temperature: 0.7 } })) ...
 */
export async function* generate(lm: GenerateModel, prompt: string, opts: GenerateOptions = {}):
  AsyncGenerator<GenerateEvent> {
  checkGenerateOptions('generate', opts);
  const { model, tokenizer } = lm;
  if (!tokenizer) throw new InputError('generate',
    'this model has no tokenizer.json; generation needs one (logits work without)');
  const maxTokens = opts.maxTokens ?? 128;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InputError('generate',
    `maxTokens must be a positive integer (got ${maxTokens})`);
  const sampler = new Sampler(opts.sampler);
  const kv = kvStorage(opts.cache?.kv, 'cache.kv');
  const ids = opts.promptIds ??
    tokenizer.encode(formatPrompt(prompt, opts.condition ?? 'synth,cot', { chatTemplate: lm.chatTemplate }));
  const capacity = Math.min(model.config.max_position_embeddings, ids.length + maxTokens);
  if (ids.length >= model.config.max_position_embeddings) {
    throw new InputError('generate',
      `the prompt has ${ids.length} tokens; the model's context is ${model.config.max_position_embeddings}`);
  }
  const cache = model.newCache({ capacity, kv, mode: opts.cache?.mode ?? 'after-prefill' });
  // Every end-of-sequence id: the config's and all the tokenizer's (a checkpoint may list several).
  const eos = new Set([...tokenizer.eosTokenIds, ...model.config.eos_token_ids]);
  const streamer = new TextStreamer(tokenizer, { skipSpecialTokens: true });
  const out: number[] = [];
  let text = '';
  let stopReason: GenerateStats['stopReason'] = 'max_tokens';
  let steps: Stepper | null = null;
  try {
    // A stopped job's steps may still be running: the prompt's time starts once they are done.
    const tWait = now();
    if ((await orAborted(model.gpu.sync(), opts.signal)) === ABORTED) stopReason = 'aborted';
    const t0 = now();
    const prefill = () => readAndDispose(model.forward(ids, cache, { mask: 'prefix', logits: 'last' }));
    const first = stopReason === 'aborted' ? ABORTED : await orAborted(prefill(), opts.signal);
    const t1 = now();
    // Stopped during the prefill: the loop below ends at once.
    let tok = first === ABORTED ? -1 : sampler.sample(first);
    if (first !== ABORTED) {
      // Off the decode's clock and once per Gpu: the persistent MLP's grid, which the steps' forwards read.
      await model.prepareDecode();
      steps = new Stepper(model, cache, sampler, opts.noGraph ? 'disabled by noGraph' : null, tok, maxTokens - 1);
    }
    let tDecode = t1;
    let decodeForwards = 0;
    for (;;) {
      if (opts.signal?.aborted) { stopReason = 'aborted'; break; }
      if (eos.has(tok)) { stopReason = 'eos'; break; }
      out.push(tok);
      const piece = streamer.push(tok);
      if (piece) {
        text += piece;
        const hit = opts.stop?.find((s) => s && text.includes(s));
        if (hit) {
          const cut = text.indexOf(hit);
          const keep = piece.length - (text.length - cut);
          if (keep > 0) yield { type: 'text', text: piece.slice(0, keep) };
          text = text.slice(0, cut);
          stopReason = 'stop_string';
          break;
        }
        yield { type: 'text', text: piece };
      }
      if (out.length >= maxTokens) break;
      // The cache holds min(context, prompt + maxTokens): full before maxTokens only when the context cut it.
      if (ids.length + decodeForwards >= cache.capacity) { stopReason = 'context'; break; }
      if (out.length === 1) tDecode = now();
      // Stopped while the caller handled the last token: queue no step.
      if (opts.signal?.aborted) { stopReason = 'aborted'; break; }
      const next = await orAborted(steps!.next(), opts.signal);
      if (next === ABORTED) { stopReason = 'aborted'; break; }
      tok = next;
      decodeForwards++;
    }
    if (stopReason !== 'stop_string') {
      const rest = streamer.flush();
      if (rest) { text += rest; yield { type: 'text', text: rest }; }
    }
    const t2 = now();
    yield {
      type: 'done', text,
      stats: {
        promptTokens: ids.length, promptMs: t1 - t0, waitMs: t0 - tWait,
        decodeTokens: decodeForwards, decodeMs: decodeForwards ? t2 - tDecode : 0,
        ids: out, stopReason, cacheBytes: cache.bytes, decodePath: steps?.path ??
          { recorded: 'stopped during the prefill' }, persistentSteps: steps?.persistentSteps ?? 0,
      },
    };
  } finally {
    const drained = steps?.close() ?? Promise.resolve();
    // Stopped: return now and drop the queued steps; they finish on the GPU and the cache is freed after them.
    if (opts.signal?.aborted) void drained.catch(() => {}).finally(() => cache.dispose());
    else { await drained; cache.dispose(); }
  }
}

/** What `generateText` returns. */
export interface GenerationResult {
  /** The completion (without the prompt; cut before a stop string). */
  text: string;
  /** Token ids, timing, stop reason, cache size, decode path. */
  stats: GenerateStats;
}

/** Generate at once: the completion's text and stats. `onText` sees each piece as it arrives. */
export async function generateText(lm: GenerateModel, prompt: string,
  opts: GenerateOptions & { onText?: (text: string) => void } = {}): Promise<GenerationResult> {
  checkGenerateOptions('generateText', opts, ['onText']);
  const { onText, ...rest } = opts;
  for await (const ev of generate(lm, prompt, rest)) {
    if (ev.type === 'text') onText?.(ev.text);
    else return { text: ev.text, stats: ev.stats };
  }
  throw new InputError('generate', 'generation ended without a result');
}

/** Options of `logits`. */
export interface LogitsOptions {
  /** 'prefix' (HRM's bidirectional prompt block, default) or 'causal'. */
  mask?: 'prefix' | 'causal';
  /** KV cache, quantized before the pass (every attention reads quantized K/V). Default: full precision. */
  kv?: string | KvStorage;
}

/** f32 logits of `ids` with a fresh cache: `ids.length * vocab_size` values, row-major. */
export function logits(lm: Pick<LoadedModel, 'model'>, ids: number[], opts: LogitsOptions = {}): Promise<Float32Array> {
  return lm.model.logits(ids, { mask: opts.mask ?? 'prefix', kv: kvStorage(opts.kv, 'kv') });
}
