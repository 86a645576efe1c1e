// The checks of bench/runners/parity-transformers.ts: one loaded model (one kernel path: DeviceOptions, activation
// dtype, dense or quantized weights) against a third party's reference.safetensors in the layout
// tools/train-embedded/reference.py writes (transformers' HrmTextForCausalLM, f32 with TF32 off and bf16):
//   prompt{i}.ids; prompt{i}.{f32,bf16}.gen_ids / gen_logits, and (where written) .prefix_logits / .causal_logits.
// Kept apart from the runner so that tests/bench/parity-transformers.test.ts runs them on the CPU driver.
import type { LoadedModel } from '../../src/index.ts';
import type { ActDtype } from '../../src/hrm/cache.ts';
import { stackCalls } from '../../src/hrm/config.ts';
import type { SafetensorsFile } from '../../src/io/safetensors.ts';
import { logitsOf, teacherForced } from '../../testkit/helpers/model.ts';

export interface TfCheck { name: string; figure: number; bound: number; ok: boolean }

/** Our outputs of one prompt on a run, kept for the runs on quantized weights (compared with the dense run). */
export interface PromptOutputs { prefix?: Float32Array; causal?: Float32Array; decode: Float32Array }

/** What one run checks: its activation dtype, the quantized KV caches (bits) it also runs, its name in checks. */
export interface RunChecks {
  name: string;
  dtype: ActDtype;
  caches: number[];
  /** Bits of this run's quantized weights (none: dense). */
  weightBits?: number;
  /** The dense run's outputs when this run's weights are quantized: compared with them, not with the reference. */
  dense?: PromptOutputs[];
}

export interface CheckOptions {
  /** Greedy decode steps compared (at most the reference's). */
  steps: number;
  /** Which prompts (indices); default all. */
  prompts?: number[];
  /** A reference without prefix/causal logits is a failed check (true, the 1B run) or those checks are left out. */
  requireLogits: boolean;
  /**
   * Float64 logits of the same math (tools/train-embedded/exact.py: `prompt{i}.f64.*`), where there are some: our
   * f32 is then held against them at the f32 bound, and against transformers' f32 at the f32 bound plus the
   * reference's own distance from them (the triangle inequality), so that a reference less exact than f32 allows
   * (measured on the embedded model: transformers' f32 was 1e-4..3e-4 from float64 on 3 of 4 prompts) is told
   * apart from an error of ours.
   */
  exact?: SafetensorsFile;
}

/** NaN or a length mismatch is an infinite difference (never a pass). */
function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = Number.isNaN(d) ? Infinity : d;
  }
  return m;
}

const maxAbs = (a: Float32Array) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
/** max |a - ref| / max |ref|: a relative figure, free of the logits' scale (a trained model's or random weights'). */
export const relMax = (a: Float32Array, ref: Float32Array) => maxAbsDiff(a, ref) / maxAbs(ref);

/** rms(a - ref) / rms(ref) (NaN -> Infinity). */
function relRms(a: Float32Array, ref: Float32Array): number {
  if (a.length !== ref.length) return Infinity;
  let d = 0, r = 0;
  for (let i = 0; i < a.length; i++) { d += (a[i] - ref[i]) ** 2; r += ref[i] ** 2; }
  const x = Math.sqrt(d / r);
  return Number.isNaN(x) ? Infinity : x;
}

/**
 * The f32 bound on relMax: c * sqrt(K) * u * calls, u = 2^-24 (f32's unit roundoff), K the longest sum (hidden,
 * intermediate or attention's positions: 4096 at the 1B shape), calls the layer calls per token (128 at 1B). Two
 * correct f32 implementations differ only in summation order (and in sin/cos, exp): each dot product of K terms
 * differs by about sqrt(K) * u relative (random-walk rounding; K * u is the worst case), and the differences of the
 * layer calls add along the residual stream (each stack ends in an RMSNorm, so nothing grows them); taking them to
 * add linearly, not as a random walk, and c = 4 leaves a margin of more than 10: at 1B the bound is 2.0e-3, and
 * the figure expected of a correct implementation 1e-5..1e-4. A wrong one (q and k swapped, a norm missing, another
 * RoPE base, gate rows in the wrong order) changes the logits by a large part of their size: 1e-1..1, 50 to 500
 * times the bound.
 */
export function f32Bound(lm: LoadedModel, positions: number): number {
  const c = lm.config;
  const K = Math.max(c.hidden_size, c.intermediate_size, positions);
  return 4 * Math.sqrt(K) * 2 ** -24 * c.num_layers_per_stack * stackCalls(c);
}

/**
 * bf16 runs are held against transformers' f32 logits in units of transformers' own bf16 error (relMax of its
 * bf16 logits against its f32 ones): two bf16 implementations rounding at different points are each about one
 * unit from f32 (ours rounds where MLX does; the tensor-core prefill takes f16 products, closer still), so 4
 * units holds with margin, while a wrong kernel path is as far from f32 as a wrong f32 model (tens of units).
 */
export const BF16_UNITS = 4;

/**
 * Quantized KV caches and weights have no third-party reference (transformers has no such cache, no MLX affine
 * weights): they are held against this path's own full-precision (dense) run as rms(diff) / rms(logits). Affine
 * quantization of a group of 64 with b bits errs by about range / (2^b - 1) / sqrt(12) of each value, range ~4.6
 * sigma: 0.5 % at 8 bits, 9 % at 4; what reaches the logits through every layer call is of that order (the errors
 * of different layers are independent). A cache or weight kernel that reads the wrong rows, scales or groups gives
 * noise as large as the logits (figure ~1.4, the rms of the difference of two unrelated vectors of equal size).
 * In bf16 any perturbation also moves bf16's own rounding through the layer calls, a floor of ~1e-2 at 1B. Measured
 * on the CPU driver: the embedded model (24 layer calls, f32) q8 / q4 caches 1e-3 / 2.5e-2, q8 / q4 weights 6e-3 /
 * 8e-2; make.py's 1B weights (8 tokens, 2 steps) q8 / q4 caches 1.3e-3 / 2.3e-2 in f32 and 1.2e-2 / 2.8e-2 in
 * bf16, q4 weights 0.19. Bounds 0.1 and 0.5: 8x and 2.5x those at 1B, 14x and 3x below a broken kernel's 1.4. No
 * greedy-ids check: random weights' logits are nearly flat (top-2 margins ~0.1 of rms 0.6), so a correct q8 cache
 * may flip a pick within 32 steps.
 */
export const QUANT_RMS: Record<number, number> = { 8: 0.1, 4: 0.5 };

/** A reference tensor, or undefined when absent. */
async function maybe(ref: SafetensorsFile, name: string): Promise<Float32Array | undefined> {
  return ref.names.includes(name) ? (await ref.array(name)) as Float32Array : undefined;
}

async function ints(ref: SafetensorsFile, name: string): Promise<number[]> {
  if (!ref.names.includes(name)) throw new Error(`reference: no tensor '${name}' (reference.py writes it)`);
  return [...await ref.array(name)];
}

/** Every check of one run on one reference; `outputs` gets our outputs per prompt (the dense run's, for later runs). */
export async function checkRun(lm: LoadedModel, ref: SafetensorsFile, run: RunChecks, o: CheckOptions,
  outputs: PromptOutputs[] = []): Promise<TfCheck[]> {
  const checks: TfCheck[] = [];
  const add = (what: string, figure: number, bound: number) =>
    checks.push({ name: `${run.name}: ${what}`, figure, bound, ok: figure <= bound });
  const missing = (name: string) => add(`the reference has no '${name}'`, Infinity, 0);
  const V = lm.config.vocab_size;
  const count = ref.names.filter((n) => /^prompt\d+\.ids$/.test(n)).length;
  const quantBound = QUANT_RMS[run.weightBits ?? 0] ?? 0;
  for (const [j, i] of (o.prompts ?? [...Array(count).keys()]).entries()) {
    const p = `prompt${i}`;
    const ids = await ints(ref, `${p}.ids`);
    // Decode: teacher-forced on transformers' f32 greedy ids (a free-running greedy decode makes the same ids
    // exactly when every teacher-forced pick equals the reference's, so this is the greedy check too).
    const gen = (await ints(ref, `${p}.f32.gen_ids`)).slice(0, o.steps);
    const bound = f32Bound(lm, ids.length + gen.length);
    const addF32 = (what: string, got: Float32Array, want: Float32Array, exact: Float32Array | undefined) => {
      if (!exact) return add(`${what} vs transformers f32, max |diff| / max |logit|`, relMax(got, want), bound);
      const own = relMax(exact, want);
      add(`${what} vs float64, max |diff| / max |logit|`, relMax(got, exact), bound);
      add(`${what} vs transformers f32 (its own distance from float64: ${own.toExponential(2)}), max |diff| / `
        + 'max |logit|', relMax(got, want), bound + own);
    };
    const tf = await teacherForced(lm, ids, gen);
    const out: PromptOutputs = { decode: tf.logits };
    const dense = run.dense?.[j];
    for (const mask of ['prefix', 'causal'] as const) {
      const key = `${p}.f32.${mask}_logits`;
      const want = await maybe(ref, key);
      if (!want) {
        if (o.requireLogits) missing(key);
        continue;
      }
      const got = out[mask] = await logitsOf(lm, ids, mask);
      if (dense) {
        const base = dense[mask] ?? new Float32Array(0);
        add(`${p} ${mask} logits vs our dense weights, rms diff / rms`, relRms(got, base), quantBound);
      } else if (run.dtype === 'f32') {
        addF32(`${p} f32 ${mask} logits`, got, want, o.exact && await maybe(o.exact, `${p}.f64.${mask}_logits`));
      } else {
        const want16 = await maybe(ref, `${p}.bf16.${mask}_logits`);
        if (!want16) { missing(`${p}.bf16.${mask}_logits`); continue; }
        const unit = relMax(want16, want);
        add(`${p} bf16 ${mask} logits vs transformers f32, in units of its bf16 error ${unit.toExponential(2)}`,
          relMax(got, want) / unit, BF16_UNITS);
      }
    }
    const ref32 = (await maybe(ref, `${p}.f32.gen_logits`))?.subarray(0, gen.length * V);
    if (dense) {
      add(`${p} ${gen.length} decode steps vs our dense weights, rms diff / rms`, relRms(tf.logits, dense.decode),
        quantBound);
    } else if (!ref32) {
      missing(`${p}.f32.gen_logits`);
    } else if (run.dtype === 'f32') {
      add(`${p} greedy ids (${gen.length} steps) differing from transformers f32`,
        tf.picks.filter((x, k) => x !== gen[k]).length, 0);
      const exact = o.exact && await maybe(o.exact, `${p}.f64.gen_logits`);
      addF32(`${p} f32 decode logits`, tf.logits, ref32, exact?.subarray(0, gen.length * V));
    } else {
      const pre = await maybe(ref, `${p}.f32.prefix_logits`), pre16 = await maybe(ref, `${p}.bf16.prefix_logits`);
      if (pre && pre16) {
        const unit = relMax(pre16, pre);
        add(`${p} bf16 decode logits vs transformers f32, in units of its bf16 prefix error ${unit.toExponential(2)}`,
          relMax(tf.logits, ref32) / unit, BF16_UNITS);
      }
    }
    for (const bits of run.caches) {
      const q = await teacherForced(lm, ids, gen, { k: bits, v: bits });
      add(`${p} q${bits} KV cache, ${gen.length} decode steps vs our full cache, rms diff / rms`,
        relRms(q.logits, tf.logits), QUANT_RMS[bits] ?? 0);
    }
    outputs.push(out);
  }
  return checks;
}
