// Generation: format the prompt (HRM envelope or the checkpoint's chat template), prefill it as one
// bidirectional block, then decode token by token (causal) with greedy / temperature / top-p sampling, stopping
// at eos, max tokens or a stop string. Text streams as whole characters. Timing separates prompt and decode.
import { InputError } from '../tensor/errors.ts';
import type { Tensor } from '../tensor/tensor.ts';
import type { HrmModel } from './model.ts';
import type { HrmTokenizer } from './tokenizer.ts';
import { formatPrompt } from './prompt.ts';
import { Sampler } from './sampling.ts';
import { TextStreamer } from './stream.ts';
import type { KvSpec, QuantMode } from './cache.ts';

export interface GenerateOptions {
  /** Comma-separated condition tags: direct, cot, synth, noisy. Default 'synth,cot'. */
  condition?: string;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  /** Bits per cache side (null = full precision). */
  kv?: KvSpec;
  /** 'after-prefill' (mlx-lm generation, default) or 'before-pass'. */
  kvMode?: QuantMode;
  stop?: string[];
  /** Use this formatted prompt's ids as is (no template): REFRACT and tests. */
  promptIds?: number[];
  chatTemplate?: string | null;
  signal?: AbortSignal;
}

export interface GenerateStats {
  promptTokens: number;
  promptMs: number;
  decodeTokens: number;
  decodeMs: number;
  ids: number[];
  stopReason: 'eos' | 'max_tokens' | 'stop_string' | 'aborted';
  cacheBytes: number;
}

export type GenerateEvent = { type: 'text'; text: string } | { type: 'done'; stats: GenerateStats; text: string };

const now = () => (globalThis.performance ?? Date).now();

async function readAndDispose(t: Tensor): Promise<Float32Array> {
  try { return await t.readF32(); } finally { t.dispose(); }
}

/** Stream a completion. */
export async function* generate(model: HrmModel, tokenizer: HrmTokenizer | null, prompt: string, opts: GenerateOptions = {}): AsyncGenerator<GenerateEvent> {
  if (!tokenizer) throw new InputError('generate', 'this model has no tokenizer.json; generation needs one (logits work without)');
  const maxTokens = opts.maxTokens ?? 128;
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InputError('generate', `--max-tokens must be a positive integer (got ${maxTokens})`);
  const sampler = new Sampler({ temperature: opts.temperature ?? 0, topP: opts.topP ?? 1, seed: opts.seed ?? 0 });
  const ids = opts.promptIds ?? tokenizer.encode(formatPrompt(prompt, opts.condition ?? 'synth,cot', { chatTemplate: opts.chatTemplate ?? null }));
  const capacity = Math.min(model.config.max_position_embeddings, ids.length + maxTokens);
  if (ids.length >= model.config.max_position_embeddings) {
    throw new InputError('generate', `the prompt has ${ids.length} tokens; the model's context is ${model.config.max_position_embeddings}`);
  }
  const cache = model.newCache({ capacity, kv: opts.kv, mode: opts.kvMode ?? 'after-prefill' });
  const eos = model.config.eos_token_id;
  const streamer = new TextStreamer(tokenizer, { skipSpecialTokens: true });
  const out: number[] = [];
  let text = '';
  let stopReason: GenerateStats['stopReason'] = 'max_tokens';
  try {
    const t0 = now();
    let logits = await readAndDispose(model.forward(ids, cache, { mask: 'prefix', logits: 'last' }));
    const t1 = now();
    let tDecode = t1;
    let decodeForwards = 0;
    for (;;) {
      if (opts.signal?.aborted) { stopReason = 'aborted'; break; }
      const tok = sampler.sample(logits);
      if (eos !== null && tok === eos) { stopReason = 'eos'; break; }
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
      if (out.length >= maxTokens || cache.offset >= cache.capacity) break;
      if (out.length === 1) tDecode = now();
      logits = await readAndDispose(model.forward([tok], cache, { mask: 'causal' }));
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
        promptTokens: ids.length, promptMs: t1 - t0, decodeTokens: decodeForwards, decodeMs: decodeForwards ? t2 - tDecode : 0,
        ids: out, stopReason, cacheBytes: cache.bytes,
      },
    };
  } finally {
    cache.dispose();
  }
}
