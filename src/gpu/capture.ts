// Capture and replay: a batch of dispatches recorded once (`capture`) and encoded again later as it was
// (`replay`), without running the JavaScript that recorded it. hrm/decode.ts records a decode step this way and
// replays it every token.
//
// What a replay relies on, and where each is checked (tests/hrm/decode.test.ts unless named):
//  - Buffer identity: bind groups name exact buffers. A capture keeps every buffer it allocated (`Gpu.claim`
//    takes them out of the pool, `release` gives them back), so no later allocation is handed one; the buffers it
//    did not allocate belong to live tensors (weights, the cache, the step's ids) that outlive it. Checked by
//    "replayed logits equal recorded ones at every position" and "greedy steps chain on the GPU" (ordinary
//    forwards run between and after replays).
//  - Pool order: `Gpu.allocate` hands out the oldest free buffer of a size, so the same sequence of allocations
//    gets the same buffers and two captures of one step bind the same ones (equal `key`s). DecodeGraph.tryBuild
//    captures at three positions and refuses when pipelines, keys or workgroups differ (decode.ts sameStructure).
//  - Uniform words: only words that move linearly with the position (offset, kv_len, pos0) may differ; the
//    replaying code patches them (decode.ts linearPatches, checked at the next, the one after and the last
//    position of the attention's reach). The kernels keep everything else fixed by the cache capacity and the
//    reach (kernels/plan/reach.ts): tests/kernels/sdpa_one, qsdpa_one, qappend_attend and kvcache
//    (expectSameStructure with only kv_len / offset varying).
//  - Uploads made while capturing (`Gpu.write`) are redone, in order, before every replay: a step may upload into
//    a pooled buffer that a later dispatch of the same step overwrites.
//  - Only dispatches replay: a buffer copy while capturing is a NotReplayableError ("a step that copies buffers
//    is refused"). NotReplayableError is the one error tryBuild turns into a reason to record steps one by one; a
//    lost device or a validation error while capturing propagates as itself ("a lost device or a validation
//    error while capturing is not mistaken for a step that cannot be replayed").
import { HrmError } from '../errors.ts';
import type { Dispatch, Gpu, Upload } from './gpu.ts';

/**
 * What `capture` recorded: the dispatches, the uploads made meanwhile, the uniform bytes the dispatches read,
 * and every buffer allocated meanwhile.
 */
export interface Capture<T> {
  result: T;
  dispatches: Dispatch[];
  uploads: Upload[];
  uniforms: Upload[];
  allocated: Set<GPUBuffer>;
}

/**
 * Run `fn` recording its dispatches instead of encoding them; nothing is submitted. Data uploads still happen
 * (on the queue, in order). Needs an empty batch: the uniform arena then holds exactly the capture's blocks,
 * which are copied out and the arena reset.
 */
export function capture<T>(gpu: Gpu, fn: () => T): Capture<T> {
  if (!gpu.idle) throw new HrmError('capture', 'flush the open batch (and any profiled one) before capturing');
  const rec = { dispatches: [] as Dispatch[], uploads: [] as Upload[], allocated: new Set<GPUBuffer>() };
  gpu.record(rec);
  let result: T;
  try {
    result = fn();
  } finally {
    gpu.record(null);
  }
  return { result, ...rec, uniforms: gpu.takeUniforms() };
}

/** A compute pass that can write timestamps between its dispatches (Gpu.inPassTimestamps). */
interface StampingPass { writeTimestamp(querySet: GPUQuerySet, index: number): void }

/**
 * Encode captured dispatches as one batch of their own: redo the uploads (uniform blocks included), one compute
 * pass (with `timestampWrites` where given: benchmarks), then `after` (copies out), submit. With `stamps`
 * (Gpu.inPassTimestamps; a query set of dispatches + 1), timestamp 0 is written before the first dispatch and
 * timestamp i + 1 after dispatch i, inside the pass. Resolves when WebGPU has judged the batch; rejects with its
 * error.
 */
export function replay(
  gpu: Gpu, dispatches: readonly Dispatch[], uploads: readonly Upload[], after?: (e: GPUCommandEncoder) => void,
  timestampWrites?: GPUComputePassTimestampWrites, stamps?: GPUQuerySet,
): Promise<void> {
  if (stamps && !gpu.inPassTimestamps) throw new HrmError('replay',
    'this device cannot write timestamps inside a pass');
  if (!gpu.idle) throw new HrmError('replay', 'flush the open batch before replaying a captured step');
  const device = gpu.device;
  return gpu.scoped('replay', () => {
    for (const u of uploads) device.queue.writeBuffer(u.buffer, u.offset, u.data);
    const enc = device.createCommandEncoder({ label: 'replay' });
    const pass = enc.beginComputePass({ label: 'replay', timestampWrites });
    const stamp = stamps ? (i: number) => (pass as unknown as StampingPass).writeTimestamp(stamps, i) : null;
    stamp?.(0);
    let last: GPUComputePipeline | null = null;
    for (let i = 0; i < dispatches.length; i++) {   // an index loop: this runs every decode token
      const d = dispatches[i];
      if (d.pipeline !== last) pass.setPipeline((last = d.pipeline));
      pass.setBindGroup(0, d.bindGroup);
      pass.dispatchWorkgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
      stamp?.(i + 1);
    }
    pass.end();
    after?.(enc);
    device.queue.submit([enc.finish()]);
    gpu.dispatchCount += dispatches.length;
  });
}
