// Benchmark settings: command-line flags (Node, Deno) or the page's query string (browser) -> one Settings object,
// with defaults per model shape. Every runner parses the same way, so every runner measures the same thing.

import type { DecodeMerge } from '../src/kernels/attention/sdpa_one.ts';

export type ConfigName = '1b' | 'tiny';
export type CacheName = 'full' | 'q8' | 'q4';
export const CACHES: Record<CacheName, { k: number | null; v: number | null }> = {
  full: { k: null, v: null }, q8: { k: 8, v: 8 }, q4: { k: 4, v: 4 },
};

export interface Settings {
  config: ConfigName;
  quick: boolean;
  only: 'all' | 'kernels' | 'model';
  /** Activation mode of the model: 'bf16' rounds where an MLX bf16 model rounds (what a bf16 checkpoint runs). */
  dtype: 'bf16' | 'f32';
  caches: CacheName[];
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
  /** Greedy decode steps queued ahead of the token being read; 'auto': src/hrm/decode.ts QueueDepth, as generate() queues them. */
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
   * DeviceOptions.kernels.decodeMerge).
   */
  decodeMerge: DecodeMerge;
  /** A JSON file (bench/torch-anchors.py's output) stored verbatim under the result's `anchors` key. */
  anchors: string | null;
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
  const base = { config, quick, sweepGemv: false, checkSgmat: false, decodeMerge: 'fold' as const, ahead: 'auto' as const, anchors: null, only: 'all' as const, dtype: 'bf16' as const, caches: ['full', 'q8', 'q4'] as CacheName[], warmup: 1, seed: 1, budget: 420, out: 'bench/results', robustness: false };
  if (config === '1b') {
    return quick
      ? { ...base, prefill: [128, 512], prompt: 512, decodeTokens: 32, reps: 2, decodeReps: 1, samples: 3, streamBytes: 1024 * MiB, cacheBust: 256 * MiB, matmulRows: 512, dispatchChain: 500 }
      : { ...base, prefill: [128, 512], prompt: 512, decodeTokens: 128, reps: 5, decodeReps: 3, samples: 7, streamBytes: 1024 * MiB, cacheBust: 256 * MiB, matmulRows: 512, dispatchChain: 1000 };
  }
  // The small Brown-corpus shape (max_position_embeddings 512): for CPU drivers, where a token takes ~0.3 s.
  return quick
    ? { ...base, prefill: [8, 16], prompt: 16, decodeTokens: 4, reps: 1, decodeReps: 1, samples: 2, streamBytes: 16 * MiB, cacheBust: 4 * MiB, matmulRows: 64, dispatchChain: 100 }
    : { ...base, prefill: [16, 64], prompt: 64, decodeTokens: 16, reps: 3, decodeReps: 2, samples: 5, streamBytes: 64 * MiB, cacheBust: 16 * MiB, matmulRows: 512, dispatchChain: 500 };
}

export const USAGE = `usage: bench [options]
  --config 1b|tiny       model shape: HRM-Text-1B (default) or the small Brown-corpus model, random bf16 weights
  --quick                fewer repetitions and tokens
  --only kernels|model   run one half (the streaming-read ceiling is measured either way)
  --out DIR              output folder (default bench/results)
  --caches full,q8,q4    KV-cache configurations (default all three)
  --prefill 128,512      prompt lengths of the prefill measurement
  --prompt N             prompt length before decoding (default 512)
  --decode-tokens N      tokens decoded per repetition (default 128)
  --reps N               prefill repetitions (and decode, unless --decode-reps)
  --decode-reps N        decode repetitions
  --warmup N             untimed warm-up runs (default 1)
  --samples N            timed batches per kernel microbenchmark
  --matmul-rows N        rows of x in the matmul microbenchmark (default 512)
  --dtype bf16|f32       activation mode (default bf16)
  --budget S             skip what has not started after S seconds (default 420)
  --seed N               seed of the random weights and prompts
  --sweep-gemv           also time the decode projections' matrix-vector kernels (vec4, upl) over workgroup shapes
  --check-sgmat          first run the subgroup-matrix matmul's parity checks (needs the repository's tests/fixtures)
  --ahead N|auto         greedy decode steps queued ahead of the token being read (default auto: as generate()
                         queues them, ~100 ms of steps, 4-32)
  --decode-merge fold|separate  full-cache decode attention's merge inside its split (default) or a dispatch of its own
  --robustness           Dawn with its robust buffer access (Node; the library turns it off by default)
  --anchors FILE         store FILE's JSON (bench/torch-anchors.py) under 'anchors' and compare with it`;

/** Parse flags ('--name value' or '--name=value'); throws with the usage on anything unknown. */
export function parseArgs(argv: string[]): Settings & { help: boolean } {
  const flags = new Map<string, string>();
  let help = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { help = true; continue; }
    if (a === '--quick') { flags.set('quick', '1'); continue; }
    if (a === '--sweep-gemv') { flags.set('sweep-gemv', '1'); continue; }
    if (a === '--check-sgmat') { flags.set('check-sgmat', '1'); continue; }
    if (a === '--robustness') { flags.set('robustness', '1'); continue; }
    if (!a.startsWith('--')) throw new Error(`[bench] unexpected argument '${a}'\n${USAGE}`);
    const eq = a.indexOf('=');
    const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
    const value = eq > 0 ? a.slice(eq + 1) : argv[++i];
    if (value === undefined) throw new Error(`[bench] --${name} needs a value\n${USAGE}`);
    flags.set(name, value);
  }
  const config = (flags.get('config') ?? '1b') as ConfigName;
  if (config !== '1b' && config !== 'tiny') throw new Error(`[bench] --config must be 1b or tiny (got '${config}')`);
  const s: Settings = defaults(config, flags.has('quick'));
  flags.delete('config');
  flags.delete('quick');
  const int = (name: string, v: string, min = 0): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`[bench] --${name} must be an integer >= ${min} (got '${v}')`);
    return n;
  };
  for (const [name, v] of flags) {
    switch (name) {
      case 'only':
        if (v !== 'kernels' && v !== 'model') throw new Error(`[bench] --only must be kernels or model (got '${v}')`);
        s.only = v; break;
      case 'out': s.out = v; break;
      case 'dtype':
        if (v !== 'bf16' && v !== 'f32') throw new Error(`[bench] --dtype must be bf16 or f32 (got '${v}')`);
        s.dtype = v; break;
      case 'caches': {
        const list = v.split(',').filter(Boolean);
        const bad = list.find((c) => !(c in CACHES));
        if (bad || !list.length) throw new Error(`[bench] --caches takes a list of ${Object.keys(CACHES).join(', ')} (got '${v}')`);
        s.caches = list as CacheName[]; break;
      }
      case 'prefill': s.prefill = v.split(',').filter(Boolean).map((x) => int(name, x, 1)); break;
      case 'prompt': s.prompt = int(name, v, 1); break;
      case 'decode-tokens': s.decodeTokens = int(name, v, 1); break;
      case 'reps': s.reps = int(name, v, 1); if (!flags.has('decode-reps')) s.decodeReps = s.reps; break;
      case 'decode-reps': s.decodeReps = int(name, v, 1); break;
      case 'warmup': s.warmup = int(name, v); break;
      case 'samples': s.samples = int(name, v, 1); break;
      case 'matmul-rows': s.matmulRows = int(name, v, 1); break;
      case 'budget': s.budget = int(name, v, 1); break;
      case 'seed': s.seed = int(name, v); break;
      case 'sweep-gemv': s.sweepGemv = true; break;
      case 'check-sgmat': s.checkSgmat = true; break;
      case 'robustness': s.robustness = true; break;
      case 'ahead': s.ahead = v === 'auto' ? 'auto' : int(name, v, 1); break;
      case 'decode-merge':
        if (v !== 'fold' && v !== 'separate') throw new Error(`[bench] --decode-merge must be fold or separate (got '${v}')`);
        s.decodeMerge = v; break;
      case 'anchors': s.anchors = v; break;
      default: throw new Error(`[bench] unknown option --${name}\n${USAGE}`);
    }
  }
  return { ...s, help };
}
