// The planner's options, per Gpu: the options a Gpu was created with (DeviceOptions.kernels) are checked once and
// kept in its state. Every path choice of the kernels lives in this folder (src/kernels/plan/): matmul.ts (the
// products' paths, qlinear's, the tensor cores' kernel and schedule, the decode MLP fold), gemv.ts (the matrix-vector
// shapes), attention.ts (attention's path, tensor cores and merge, a decode step's fused kernels), persist.ts (the
// persistent decode step's grid and form), paths.ts (the on/off verdicts in the adapter summary) and prepare.ts (a
// new device's preparation). Kernels dispatch what the planners say, and nothing is module-wide: two Gpus in one
// process may take different paths. A new choice is a field of KernelOptions with its default in DEFAULT_POLICY, a
// planner function here, and its verdict in paths.ts.
import type { Gpu } from '../../gpu/gpu.ts';
import type { KernelOptions } from '../../gpu/device.ts';
import { stateKey } from '../../gpu/registry.ts';
import { InputError } from '../../errors.ts';
import { DEFAULT_SCHEDULE, withSchedule, type SgmatSchedule } from '../matmul/sgmat-schedule.ts';

/**
 * Full-precision decode attention's merge: 'fold', the last chunk of a head to finish merges (one dispatch);
 * 'separate', a merge dispatch after the split (the reference form). The same bits either way.
 */
export type DecodeMerge = 'fold' | 'separate';
export const MERGES: readonly DecodeMerge[] = ['fold', 'separate'];

/**
 * A decode layer's MLP: 'fold', gate_up, SwiGLU, down and the residual in one dispatch (matmul/gemv-mlp.ts on dense
 * weights, qlinear/qgemv-mlp.ts on 4- and 8-bit ones: the down partial sums added by the last workgroups to
 * finish); 'separate', the norm + SwiGLU product then the residual product (the reference). The same roundings, f32
 * sums in another order.
 */
export type DecodeMlp = 'fold' | 'separate';
export const MLPS: readonly DecodeMlp[] = ['fold', 'separate'];

/**
 * A decode step over two TurboQuant sides: 'fused', turbo/turbo-one.ts reads the codes (append and attention in one
 * dispatch); 'general', the sides decoded to full precision then sdpa (the reference). The same codes written,
 * f32 sums in another order (tests/kernels/turbo/turbo-one.test.ts states the tolerance).
 */
export type TurboDecode = 'fused' | 'general';
export const TURBO_DECODES: readonly TurboDecode[] = ['fused', 'general'];

/**
 * A decode step's form (issue 39): 'per-op', a dispatch an op (the reference and the fallback); 'persistent', the
 * persistent kernels (kernels/persist/: workgroups meeting at a grid barrier inside one dispatch) wherever the
 * device's grid self-check passes, CPU drivers included; 'auto', the same on GPUs only. The same bits either way.
 */
export type DecodeStep = 'per-op' | 'persistent' | 'auto';
export const DECODE_STEPS: readonly DecodeStep[] = ['per-op', 'persistent', 'auto'];

// The fields of DeviceOptions.kernels, declared here so that the GPU layer names no kernel.
declare module '../../gpu/device.ts' {
  interface KernelOptions {
    /**
     * The tensor-core prefill matmul's schedule (sgmat-schedule.ts: kernel, pipe, splitK); fields left out keep
     * the default, which benchmarks chose (bench/kernels.ts, sgmatSchedules).
     */
    sgmat?: Partial<SgmatSchedule>;
    /** Whether bf16 prefill attention's products may run on the tensor cores where they can (default true). */
    attentionTensorCores?: boolean;
    /**
     * Full-precision decode attention's merge when a call names none: 'fold' (default) or 'separate' (benchmarks
     * compare the two). The quantized caches' values pass (qsdpa_one) always merges in its last chunk, its
     * reference being the multi-pass qsdpa; both folds are stress-checked on the benchmark GPU (bench/parity.ts).
     */
    decodeMerge?: DecodeMerge;
    /**
     * A decode layer's MLP: 'separate' (default: two products) or 'fold' (one dispatch, a layer call of 4
     * dispatches; slower on the H200 at HRM-Text-1B's shapes, bench/results/README.md).
     */
    decodeMlp?: DecodeMlp;
    /**
     * Write the overrides into the WGSL source (kernels/specialize.ts), as for naga; default: where the runtime
     * needs it (Deno, Firefox). Tests set it to run the same kernels both ways on one adapter.
     */
    specialize?: boolean;
    /** Unroll a specialized module's constant-trip loops (kernels/unroll.ts); default: on GPUs, not CPU drivers. */
    unroll?: boolean;
    /** A decode step over two TurboQuant sides: 'fused' (default) or 'general' (the reference). */
    turboDecode?: TurboDecode;
    /** A decode step's form: 'per-op' (default until a GPU measures the persistent step), 'persistent', 'auto'. */
    decodeStep?: DecodeStep;
    /** The persistent kernels' grid, checked at creation; default the largest the self-check passes (tests: 1, 2). */
    persistGrid?: number;
    /** Loads a workgroup waits at a grid barrier before it gives up (default persist/grid-check.ts's DEFAULT_SPIN). */
    persistSpin?: number;
  }
}
export type { KernelOptions };

/** A Gpu's options with every default filled in. */
export interface KernelPolicy {
  sgmat: SgmatSchedule;
  attentionTensorCores: boolean;
  decodeMerge: DecodeMerge;
  decodeMlp: DecodeMlp;
  /** null: the runtime decides (specialize.ts, unroll.ts). */
  specialize: boolean | null;
  unroll: boolean | null;
  turboDecode: TurboDecode;
  decodeStep: DecodeStep;
  /** null: the self-check's choice. */
  persistGrid: number | null;
  persistSpin: number | null;
}

export const DEFAULT_POLICY: Readonly<KernelPolicy> = Object.freeze({
  sgmat: DEFAULT_SCHEDULE, attentionTensorCores: true, decodeMerge: 'fold', decodeMlp: 'separate',
  turboDecode: 'fused', specialize: null, unroll: null, decodeStep: 'per-op', persistGrid: null, persistSpin: null,
});

const WHERE = 'DeviceOptions.kernels';
const POLICY = stateKey<KernelPolicy>('kernels.policy');

/** The policy `gpu` was created with (checked on first use; paths.ts uses it while Gpu.create runs). */
export function kernelPolicy(gpu: Gpu): KernelPolicy {
  return gpu.state.get(POLICY, () => resolvePolicy(gpu.kernelOptions));
}

/** Options with the defaults filled in; a field of the wrong kind is an InputError naming it. */
export function resolvePolicy(o: KernelOptions = {}): KernelPolicy {
  if (typeof o !== 'object' || o === null) throw new InputError(WHERE, `must be an object, got ${JSON.stringify(o)}`);
  const known = Object.keys(DEFAULT_POLICY);
  const odd = Object.keys(o).find((k) => !known.includes(k));
  if (odd !== undefined) throw new InputError(WHERE, `unknown field '${odd}'; use ${known.join(', ')}`);
  const tc = o.attentionTensorCores;
  if (tc !== undefined && typeof tc !== 'boolean') {
    throw new InputError(WHERE, `attentionTensorCores ${JSON.stringify(tc)} must be true or false`);
  }
  const merge = o.decodeMerge;
  const mlp = o.decodeMlp;
  if (mlp !== undefined && !MLPS.includes(mlp)) {
    throw new InputError(`${WHERE}.decodeMlp`, `'${mlp}' must be one of ${MLPS.join(', ')}`);
  }
  for (const k of ['specialize', 'unroll'] as const) {
    if (o[k] !== undefined && typeof o[k] !== 'boolean') {
      throw new InputError(WHERE, `${k} ${JSON.stringify(o[k])} must be true or false`);
    }
  }
  const turbo = o.turboDecode;
  if (turbo !== undefined && !TURBO_DECODES.includes(turbo)) {
    throw new InputError(`${WHERE}.turboDecode`, `'${turbo}' must be one of ${TURBO_DECODES.join(', ')}`);
  }
  const step = o.decodeStep;
  if (step !== undefined && !DECODE_STEPS.includes(step)) {
    throw new InputError(`${WHERE}.decodeStep`, `'${step}' must be one of ${DECODE_STEPS.join(', ')}`);
  }
  for (const [k, min] of [['persistGrid', 1], ['persistSpin', 0]] as const) {
    const v = o[k];
    if (v !== undefined && !(Number.isInteger(v) && v >= min && v < 2 ** 31)) {
      throw new InputError(`${WHERE}.${k}`, `${JSON.stringify(v)} must be a whole number from ${min} below 2^31`);
    }
  }
  return {
    sgmat: withSchedule(`${WHERE}.sgmat`, DEFAULT_SCHEDULE, o.sgmat ?? {}),
    attentionTensorCores: tc ?? DEFAULT_POLICY.attentionTensorCores,
    decodeMerge: merge === undefined ? DEFAULT_POLICY.decodeMerge : checkMerge(`${WHERE}.decodeMerge`, merge),
    decodeMlp: mlp ?? DEFAULT_POLICY.decodeMlp,
    specialize: o.specialize ?? null,
    unroll: o.unroll ?? null,
    turboDecode: turbo ?? DEFAULT_POLICY.turboDecode,
    decodeStep: step ?? DEFAULT_POLICY.decodeStep,
    persistGrid: o.persistGrid ?? null,
    persistSpin: o.persistSpin ?? null,
  };
}

/** `merge` when it names a form, `gpu`'s policy's when undefined; anything else is an InputError naming `op`. */
export function mergeFor(gpu: Gpu, op: string, merge: DecodeMerge | undefined): DecodeMerge {
  return merge === undefined ? kernelPolicy(gpu).decodeMerge : checkMerge(op, merge);
}

function checkMerge(op: string, merge: DecodeMerge): DecodeMerge {
  if (!MERGES.includes(merge)) throw new InputError(op, `merge '${merge}' must be one of ${MERGES.join(', ')}`);
  return merge;
}
