// Benchmark settings: one option table, from which the command line (Node, Deno: flags.ts, through node:util
// parseArgs), the page's query string (browser: ?config=tiny&quick, valuesFromQuery) and --help all come, so every
// runner measures the same thing and no runner keeps a list of flags of its own. Defaults depend on the model shape.

import type { DecodeMerge } from '../../src/kernels/attention/sdpa-one.ts';
import {
  DECODE_STEPS, DEFAULT_POLICY, type DecodeMlp, type DecodeStep, type TurboDecode,
} from '../../src/kernels/plan/options.ts';
import type { QuantSpec } from '../../src/hrm/config.ts';
import type { KvStorage } from '../../src/hrm/cache.ts';

export type ConfigName = '1b' | 'tiny';
export type CacheName = 'full' | 'q8' | 'q4' | 'turbo4' | 'turbo3';
/** The benchmark's KV caches: full precision, MLX's group-64 q8 / q4, TurboQuant's turbo4 / turbo3 (K and V alike). */
export const CACHES: Record<CacheName, KvStorage> = {
  full: { k: null, v: null }, q8: { k: 8, v: 8 }, q4: { k: 4, v: 4 },
  turbo4: { k: 'turbo4', v: 'turbo4' }, turbo3: { k: 'turbo3', v: 'turbo3' },
};
export type WeightsName = 'bf16' | 'q8' | 'q4';
/** The model's weights: bf16 (the full-cache run) or quantized on the GPU as a bf16 checkpoint quantized on load. */
export const WEIGHTS: Record<WeightsName, QuantSpec | null> = {
  bf16: null, q8: { bits: 8, groupSize: 64 }, q4: { bits: 4, groupSize: 64 },
};

export interface Settings {
  config: ConfigName;
  quick: boolean;
  only: 'all' | 'kernels' | 'model';
  /** Activation mode of the model: 'bf16' rounds where an MLX bf16 model rounds (what a bf16 checkpoint runs). */
  dtype: 'bf16' | 'f32';
  caches: CacheName[];
  /** Weights the model runs with, full cache each (`weights` in the result); bf16 is the full-cache run itself. */
  weights: WeightsName[];
  /** Prompt lengths of the prefill measurement. */
  prefill: number[];
  /** Decode: prompt length, then this many tokens decoded one at a time. */
  prompt: number;
  decodeTokens: number;
  /** Untimed runs before the timed ones (pipeline compilation, pool warm-up). */
  warmup: number;
  /** Timed prefill repetitions per length and cache; timed decode repetitions per cache. */
  reps: number;
  decodeReps: number;
  /** Greedy decode steps queued ahead of the token being read; 'auto': as generate() queues them (QueueDepth). */
  ahead: number | 'auto';
  /** Kernel microbenchmarks: timed batches per kernel. */
  samples: number;
  /** Bytes of the streaming-read buffer (capped by the adapter's binding limit). */
  streamBytes: number;
  /** GEMV weights are cycled through copies totalling at least this many bytes, so they cannot sit in cache. */
  cacheBust: number;
  /** Rows of x in the matmul (prefill-shaped) microbenchmark. */
  matmulRows: number;
  /** Dependent tiny dispatches in the dispatch-overhead measurement. */
  dispatchChain: number;
  seed: number;
  /** Also time the matrix-vector kernel over a grid of workgroup shapes on the decode layer's four projections. */
  sweepGemv: boolean;
  /** Run the tensor-core matmul's parity checks first and store their report (bench/h200.sh passes it). */
  checkSgmat: boolean;
  /**
   * Full-cache decode attention's merge: folded into its split (one dispatch) or separate (the Gpu's
   * kernels.decodeMerge).
   */
  decodeMerge: DecodeMerge;
  /** A decode layer's MLP on dense weights: two products or one dispatch (the Gpu's kernels.decodeMlp). */
  decodeMlp: DecodeMlp;
  /** Decode attention over two TurboQuant sides: read from the codes, or decoded then sdpa (kernels.turboDecode). */
  turboDecode: TurboDecode;
  /**
   * A decode step per op, or with the persistent kernels where the grid barrier's self-check passes (the Gpu's
   * kernels.decodeStep).
   */
  decodeStep: DecodeStep;
  /** A JSON file (bench/suites/torch-anchors.py's output) stored verbatim under the result's `anchors` key. */
  anchors: string | null;
  /** A JSON file (bench/peers/run.sh's peers.json: llama.cpp, transformers.js) stored verbatim under `peers`. */
  peers: string | null;
  /** bench/probes/read-probe.mjs's JSON line (a file), stored under kernels.readProbe and held against the stream. */
  readProbe: string | null;
  /** Soft time limit in seconds: measurements not started by then are skipped (and listed as skipped). */
  budget: number;
  /** Output folder (runners that write files). */
  out: string;
  /** Dawn's robust buffer access under Node (DeviceOptions.robustness: off unless --robustness). */
  robustness: boolean;
}

const MiB = 1 << 20;

/** Defaults for a shape and speed. */
export function defaults(config: ConfigName, quick: boolean): Settings {
  const base = {
    config, quick, sweepGemv: false, checkSgmat: false, ahead: 'auto' as const,
    decodeMerge: 'fold' as const, decodeMlp: DEFAULT_POLICY.decodeMlp, turboDecode: DEFAULT_POLICY.turboDecode,
    decodeStep: DEFAULT_POLICY.decodeStep, anchors: null, peers: null, readProbe: null, only: 'all' as const,
    dtype: 'bf16' as const,
    caches: ['full', 'q8', 'q4'] as CacheName[], weights: ['bf16'] as WeightsName[], warmup: 1, seed: 1,
    budget: 420, out: 'bench/results', robustness: false,
  };
  if (config === '1b') {
    const shape = { prefill: [128, 512], prompt: 512 };
    const sizes = { streamBytes: 1024 * MiB, cacheBust: 256 * MiB, matmulRows: 512 };
    return quick
      ? { ...base, ...shape, decodeTokens: 32, reps: 2, decodeReps: 1, samples: 3, ...sizes, dispatchChain: 500 }
      : { ...base, ...shape, decodeTokens: 128, reps: 5, decodeReps: 3, samples: 7, ...sizes, dispatchChain: 1000 };
  }
  // The small Brown-corpus shape (max_position_embeddings 512): for CPU drivers, too slow for the 1B shape.
  return quick
    ? {
      ...base, prefill: [8, 16], prompt: 16, decodeTokens: 4, reps: 1, decodeReps: 1, samples: 2,
      streamBytes: 16 * MiB, cacheBust: 4 * MiB, matmulRows: 64, dispatchChain: 100,
    }
    : {
      ...base, prefill: [16, 64], prompt: 64, decodeTokens: 16, reps: 3, decodeReps: 2, samples: 5,
      streamBytes: 64 * MiB, cacheBust: 16 * MiB, matmulRows: 512, dispatchChain: 500,
    };
}

/** An option's raw value: a string, or true for a flag given (as node:util parseArgs returns them). */
export type Values = Record<string, string | boolean | undefined>;

/**
 * One command-line option (`--name`, or `?name=` in the page's query): `arg` names its value in --help (a flag has
 * none), `apply` writes a given value into the settings (config and quick pick the defaults instead).
 */
export interface BenchOption {
  name: string;
  arg?: string;
  help: string;
  short?: string;
  apply?: (s: Settings, v: string) => void;
}

const fail = (m: string): never => { throw new Error(`[bench] ${m}`); };
const int = (name: string, v: string, min = 0): number => {
  const n = Number(v);
  return Number.isInteger(n) && n >= min ? n : fail(`--${name} must be an integer >= ${min} (got '${v}')`);
};
/** A comma-separated list of names from `of` (at least one). */
const listOf = <T extends string>(name: string, v: string, of: readonly T[]): T[] => {
  const list = v.split(',').filter(Boolean);
  return list.length && list.every((x) => (of as readonly string[]).includes(x))
    ? list as T[] : fail(`--${name} takes a list of ${of.join(', ')} (got '${v}')`);
};
const oneOf = <T extends string>(name: string, v: string, of: readonly T[]): T =>
  (of as readonly string[]).includes(v) ? v as T : fail(`--${name} must be ${of.join(' or ')} (got '${v}')`);

export const OPTIONS: readonly BenchOption[] = [
  { name: 'config', arg: '1b|tiny', help: 'model shape: HRM-Text-1B (default) or the small Brown-corpus model, random '
    + 'bf16 weights' },
  { name: 'quick', help: 'fewer repetitions and tokens' },
  { name: 'only', arg: 'kernels|model', help: 'run one half (the streaming-read ceiling is measured either way)',
    apply: (s, v) => { s.only = oneOf('only', v, ['kernels', 'model']); } },
  { name: 'out', arg: 'DIR', help: 'output folder (default bench/results)', apply: (s, v) => { s.out = v; } },
  { name: 'caches', arg: 'full,q8,q4', help: 'KV-cache configurations (default full,q8,q4; also turbo4, turbo3)',
    apply: (s, v) => { s.caches = listOf('caches', v, Object.keys(CACHES) as CacheName[]); } },
  { name: 'weights', arg: 'bf16,q8,q4', help: 'weights of the full-cache model runs (default bf16 only; q8 and q4: '
    + 'the model again\non random quantized weights, group 64)',
    apply: (s, v) => { s.weights = listOf('weights', v, Object.keys(WEIGHTS) as WeightsName[]); } },
  { name: 'prefill', arg: '128,512', help: 'prompt lengths of the prefill measurement',
    apply: (s, v) => { s.prefill = v.split(',').filter(Boolean).map((x) => int('prefill', x, 1)); } },
  { name: 'prompt', arg: 'N', help: 'prompt length before decoding (default 512)',
    apply: (s, v) => { s.prompt = int('prompt', v, 1); } },
  { name: 'decode-tokens', arg: 'N', help: 'tokens decoded per repetition (default 128)',
    apply: (s, v) => { s.decodeTokens = int('decode-tokens', v, 1); } },
  // Options apply in this order: --decode-reps, after --reps, overrides the decode repetitions --reps set.
  { name: 'reps', arg: 'N', help: 'prefill repetitions (and decode, unless --decode-reps)', apply: (s, v) => {
    s.reps = int('reps', v, 1);
    s.decodeReps = s.reps;
  } },
  { name: 'decode-reps', arg: 'N', help: 'decode repetitions',
    apply: (s, v) => { s.decodeReps = int('decode-reps', v, 1); } },
  { name: 'warmup', arg: 'N', help: 'untimed warm-up runs (default 1)',
    apply: (s, v) => { s.warmup = int('warmup', v); } },
  { name: 'samples', arg: 'N', help: 'timed batches per kernel microbenchmark',
    apply: (s, v) => { s.samples = int('samples', v, 1); } },
  { name: 'matmul-rows', arg: 'N', help: 'rows of x in the matmul microbenchmark (default 512)',
    apply: (s, v) => { s.matmulRows = int('matmul-rows', v, 1); } },
  { name: 'dtype', arg: 'bf16|f32', help: 'activation mode (default bf16)',
    apply: (s, v) => { s.dtype = oneOf('dtype', v, ['bf16', 'f32']); } },
  { name: 'budget', arg: 'S', help: 'skip what has not started after S seconds (default 420)',
    apply: (s, v) => { s.budget = int('budget', v, 1); } },
  { name: 'seed', arg: 'N', help: 'seed of the random weights and prompts',
    apply: (s, v) => { s.seed = int('seed', v); } },
  { name: 'sweep-gemv', help: "also time the decode projections' matrix-vector kernels over workgroup shapes, bf16 "
    + 'and 4/8-bit weights', apply: (s) => { s.sweepGemv = true; } },
  { name: 'check-sgmat', help: "first run the subgroup-matrix matmul's parity checks (needs the repository's "
    + 'tests/fixtures)', apply: (s) => { s.checkSgmat = true; } },
  { name: 'ahead', arg: 'N|auto', help: 'greedy decode steps queued ahead of the token being read (default auto: as '
    + 'generate()\nqueues them, ~100 ms of steps, 1-32)',
    apply: (s, v) => { s.ahead = v === 'auto' ? 'auto' : int('ahead', v, 1); } },
  { name: 'decode-merge', arg: 'fold|separate', help: "full-cache decode attention's merge inside its split (default) "
    + 'or a dispatch of its own',
    apply: (s, v) => { s.decodeMerge = oneOf('decode-merge', v, ['fold', 'separate']); } },
  { name: 'decode-mlp', arg: 'fold|separate', help: "a decode layer's MLP as two products (the library's default) "
    + 'or in one dispatch',
    apply: (s, v) => { s.decodeMlp = oneOf('decode-mlp', v, ['fold', 'separate']); } },
  { name: 'turbo-decode', arg: 'fused|general', help: 'decode attention over turbo caches read from the codes (the '
    + "library's default)\nor the caches decoded, then sdpa",
    apply: (s, v) => { s.turboDecode = oneOf('turbo-decode', v, ['fused', 'general']); } },
  { name: 'decode-step', arg: 'per-op|persistent|auto', help: 'a decode step per op (the library\'s default) or with '
    + 'the persistent layer tails\n(grid barriers inside one dispatch; auto: on GPUs only)',
    apply: (s, v) => { s.decodeStep = oneOf('decode-step', v, DECODE_STEPS); } },
  { name: 'robustness', help: 'Dawn with its robust buffer access (Node; the library turns it off by default)',
    apply: (s) => { s.robustness = true; } },
  { name: 'anchors', arg: 'FILE', help: "store FILE's JSON (bench/suites/torch-anchors.py) under 'anchors' and compare "
    + 'with it', apply: (s, v) => { s.anchors = v; } },
  { name: 'peers', arg: 'FILE',
    help: "store FILE's JSON (bench/peers/run.sh: llama.cpp's and transformers.js's figures "
    + 'and token checks) under \'peers\'', apply: (s, v) => { s.peers = v; } },
  { name: 'read-probe', arg: 'FILE', help: "bench/probes/read-probe.mjs's JSON line: stored under kernels.readProbe, "
    + 'the stream\nread held against it', apply: (s, v) => { s.readProbe = v; } },
  { name: 'help', short: 'h', help: 'print this list' },
];

/** The settings the given values ask for, on the defaults of their shape; a bad value throws, naming its flag. */
export function settingsFrom(given: Values): Settings {
  const config = oneOf('config', String(given.config ?? '1b'), ['1b', 'tiny']);
  const s = defaults(config, given.quick === true);
  for (const o of OPTIONS) {
    const v = given[o.name];
    if (v !== undefined && o.apply) o.apply(s, String(v));
  }
  return s;
}

/** The page's query parameters that carry --anchors' and --read-probe's JSON (the page cannot read files). */
export const ANCHORS_JSON = 'anchors-json';
export const READ_PROBE_JSON = 'read-probe-json';

/** The page's query string as option values: `?name=value` for an option with a value, `?name` for a flag. */
export function valuesFromQuery(q: URLSearchParams): Values {
  const v: Values = {};
  for (const o of OPTIONS) if (q.has(o.name)) v[o.name] = o.arg ? q.get(o.name)! : true;
  return v;
}

/** --help: every option of the table with its value and what it does. */
export function usage(): string {
  const lines = OPTIONS.map((o) => {
    const flag = `  --${o.name}${o.arg ? ` ${o.arg}` : ''}${o.short ? `, -${o.short}` : ''}`;
    const help = o.help.split('\n');
    // A flag too long for the column gets its help on the lines below.
    if (flag.length > 23) help.unshift('');
    return help.map((l, i) => `${i ? '' : flag}`.padEnd(24) + ` ${l}`.trimEnd()).join('\n');
  });
  return ['usage: bench [options]', ...lines].join('\n');
}
