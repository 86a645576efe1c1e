// The Backend interface REFRACT's axes run against (REFRACT `backends/base.py`, in TypeScript).
// A backend wraps an inference engine; axes only see these five primitives. Option objects mirror the
// Python keyword arguments (kv_config_str -> kvConfig, n_predict -> nPredict, ...).
import { HrmError } from '../errors.ts';
import type { KldProgress, KldStatistics } from './axes/kld-stats.ts';

/** Raised when a backend cannot do what an axis asks (say which backend or axis to use instead). */
export class BackendCapabilityError extends HrmError {}

/** Raised by REFRACT itself when a run cannot produce a trustworthy score (empty trajectories, floor failure). */
export class RefractError extends HrmError {}

export type Metadata = Record<string, unknown>;

export interface CompletionOptions {
  model: string;
  prompt: string;
  /** llama.cpp-style KV string, e.g. `ctk=q8_0,ctv=q4_0` (see src/hrm/kv-spec.ts). */
  kvConfig: string;
  nPredict?: number; // default 128
  ctx?: number; // default 512
  seed?: number; // default 42
  temperature?: number; // default 0 (greedy)
  applyChatTemplate?: boolean; // default true
  system?: string | null;
  reasoning?: 'off' | 'on'; // default 'off'
  signal?: AbortSignal;
}

export type TrajectoryOptions = Omit<CompletionOptions, 'reasoning'>;

export interface KldOptions {
  model: string;
  /** The corpus text (not a path: browsers have no files). */
  corpus: string;
  refKv: string;
  candKv: string;
  chunks?: number; // default 32
  ctx?: number; // default 512
  /** Ask for the kept per-position KL values (for plots); a backend may ignore it. */
  perPosition?: boolean;
  /** Called after each chunk. */
  onChunk?: (done: number, total: number) => void;
  /** Chunks already scored and their statistics: a backend continues from `done` (device-loss recovery). */
  resume?: KldProgress;
  signal?: AbortSignal;
}

export interface TokenizeOptions {
  model: string;
  text: string;
}

export interface ModelMetadataOptions {
  model: string;
}

export interface DecodeTokensOptions {
  model: string;
  ids: readonly number[];
}

export interface CompletionResult {
  /** The generated text only (no prompt echo). */
  text: string;
  /** Tokens actually decoded (REFRACT's MLX backend reports 0 here; report real counts). */
  nTokens: number;
  metadata: Metadata;
}

export interface TrajectoryResult {
  /** Token ids as sampled at decode time (no detokenize round trip). */
  tokenIds: number[];
  metadata: Metadata;
}

export interface KLDResult {
  /** Mean KL(P_ref || P_cand) in nats over all kept positions. */
  meanKld: number;
  ppl: number | null;
  rmsDpPct?: number | null;
  sameToppPct?: number | null;
  /** llama.cpp's --kl-divergence statistics (KldAccumulator.result().stats), when the backend computes them. */
  stats?: KldStatistics;
  chunks: number;
  ctx: number;
  metadata: Metadata;
  /** Per-position KL in corpus order (chunk-major), NaN where a position was dropped; when asked for. */
  perPosition?: ArrayLike<number>;
}

/** REFRACT backend. Methods are async: engines in browsers cannot block. */
export interface Backend {
  readonly name: string;
  runCompletion(opts: CompletionOptions): Promise<CompletionResult>;
  runCompletionTrajectory(opts: TrajectoryOptions): Promise<TrajectoryResult>;
  runKld(opts: KldOptions): Promise<KLDResult>;
  tokenizeToIds(opts: TokenizeOptions): Promise<number[]>;
  /** Backend name, versions, and `context_length` (tokens) when known: R-NIAH skips longer cells. */
  modelMetadata(opts: ModelMetadataOptions): Promise<Metadata>;
  /**
   * Optional: how many tokens a completion's prompt takes as the model reads it (chat template included), so that
   * R-NIAH can fit a cell to a model whose context is a hard limit.
   */
  promptTokens?(opts: Pick<CompletionOptions, 'model' | 'prompt' | 'system' | 'applyChatTemplate'>): Promise<number>;
  /** Optional: true once the backend's device is gone, so a failed call is retried on a new one (resilient.ts). */
  deviceLost?(): boolean;
  /** Optional: one display string per token id, for the HTML token diff. */
  decodeTokens?(opts: DecodeTokensOptions): Promise<string[]>;
}

/**
 * The model's context length (tokens) from the backend's metadata, Infinity when unknown. Metadata only informs,
 * as in the original (a failing call leaves the report's environment empty): a call that throws is unknown too.
 */
export async function contextLengthOf(backend: Backend, model: string): Promise<number> {
  const meta = await backend.modelMetadata({ model }).catch((): Metadata => ({}));
  return typeof meta.context_length === 'number' && meta.context_length > 0 ? meta.context_length : Infinity;
}

/** Defaults shared by the axes, as in REFRACT's CLI. */
export const DEFAULTS = { nPredict: 128, ctx: 512, seed: 42, chunks: 32 } as const;
