// GPU timestamps for benchmarks. `profileNext` gives every dispatch of the next batch a timed pass of its own;
// `timelineNext` times the next batch pass by pass. The batch (batch.ts) asks which timestamps each pass it opens
// gets and, at submit, has the query sets resolved into its encoder; this file owns the query sets and turns
// them into milliseconds.
import { GpuValidationError } from '../errors.ts';

/** GPU time of each labelled dispatch of one profiled batch, in milliseconds. */
export interface DispatchTiming { label: string; ms: number }

/** One pass of a timed batch (see `timelineNext`): GPU milliseconds from the batch's first pass's start. */
export interface PassSpan { startMs: number; endMs: number; dispatches: number }

interface Profile { querySet: GPUQuerySet; labels: string[]; capacity: number }
interface Timeline { querySet: GPUQuerySet; passes: number[]; capacity: number }

/** Begin / end timestamps of pass `i` into the `2i`th and `2i + 1`th queries. */
function writes(querySet: GPUQuerySet, i: number): GPUComputePassTimestampWrites {
  return { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
}

export class Profiler {
  private profile: Profile | null = null;
  private timeline: Timeline | null = null;
  /** Timings of the last profiled flush (see `profileNext`). */
  lastTimings: DispatchTiming[] = [];
  /** The passes of the last timed batch (see `timelineNext`), once its flush has resolved them. */
  lastTimeline: PassSpan[] = [];

  constructor(private readonly device: GPUDevice) {}

  /** A profiled batch is being recorded: it is not submitted early (its passes share one query set). */
  get profiling(): boolean {
    return this.profile !== null;
  }

  /** Profile the next flush: every dispatch gets its own pass with timestamps (slower; for benchmarks). */
  profileNext(capacity: number): void {
    const querySet = this.querySet('profile', capacity);
    this.profile = { querySet, labels: [], capacity };
  }

  /**
   * Time the next batch pass by pass (for benchmarks): each pass, so each part a long batch is submitted in while
   * it is recorded, gets timestamps at its start and end, and the flush that ends the batch puts them in
   * `lastTimeline`. Unlike profileNext the batch runs as it would untimed; the gaps between its passes are where
   * the GPU waited for JavaScript.
   */
  timelineNext(capacity: number): void {
    const querySet = this.querySet('timeline', capacity);
    this.timeline = { querySet, passes: [], capacity };
  }

  /** While profiling with queries left: the timestamps of a pass of its own for the dispatch `label`; else null. */
  dispatchWrites(label: string): GPUComputePassTimestampWrites | null {
    const p = this.profile;
    if (!p || p.labels.length >= p.capacity) return null;
    p.labels.push(label);
    return writes(p.querySet, p.labels.length - 1);
  }

  /** While a timeline is taken with queries left: the timestamps of the batch pass about to open; else undefined. */
  passWrites(): GPUComputePassTimestampWrites | undefined {
    const t = this.timeline;
    if (!t || t.passes.length >= t.capacity) return undefined;
    t.passes.push(0);
    return writes(t.querySet, t.passes.length - 1);
  }

  /** Count a dispatch in the timeline's last pass. */
  counted(): void {
    const passes = this.timeline?.passes;
    if (passes?.length) passes[passes.length - 1]++;
  }

  /**
   * Encode the resolves of this batch's timestamps into `encoder`, which the caller submits at once; the promises
   * settle when `lastTimings` / `lastTimeline` hold them. The profile ends with any submit; the timeline only with
   * the batch's last one (not an early `part`).
   */
  resolve(encoder: GPUCommandEncoder, part: boolean): Promise<void>[] {
    const timed: Promise<void>[] = [];
    if (this.profile) timed.push(this.resolveTimings(encoder, this.profile).then((t) => { this.lastTimings = t; }));
    if (!part && this.timeline) {
      timed.push(this.resolveTimeline(encoder, this.timeline).then((p) => { this.lastTimeline = p; }));
      this.timeline = null;
    }
    this.profile = null;
    return timed;
  }

  private querySet(op: string, capacity: number): GPUQuerySet {
    if (!this.device.features.has('timestamp-query')) {
      throw new GpuValidationError(op, 'this adapter does not offer timestamp-query');
    }
    return this.device.createQuerySet({ type: 'timestamp', count: capacity * 2 });
  }

  private async resolveTimings(encoder: GPUCommandEncoder, p: Profile): Promise<DispatchTiming[]> {
    const t = await readTimestamps(this.device, encoder, p.querySet, p.labels.length)
      .finally(() => p.querySet.destroy());
    return p.labels.map((label, i) => ({ label, ms: Number(t[2 * i + 1] - t[2 * i]) / 1e6 }));
  }

  private async resolveTimeline(encoder: GPUCommandEncoder, l: Timeline): Promise<PassSpan[]> {
    const t = await readTimestamps(this.device, encoder, l.querySet, l.passes.length)
      .finally(() => l.querySet.destroy());
    const at = (i: number) => Number(t[i] - t[0]) / 1e6;
    return l.passes.map((dispatches, i) => ({ startMs: at(2 * i), endMs: at(2 * i + 1), dispatches }));
  }
}

/**
 * The first `pairs` begin / end timestamp pairs of `querySet` (ns): the resolve and the copy are encoded into
 * `encoder` at once, so call this before finishing and submitting it; the copy is mapped once that has run.
 */
export async function readTimestamps(
  device: GPUDevice, encoder: GPUCommandEncoder, querySet: GPUQuerySet, pairs: number,
): Promise<BigUint64Array> {
  if (!pairs) return new BigUint64Array(0);
  const size = 16 * pairs;
  const resolve = device.createBuffer({ size, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readback = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    encoder.resolveQuerySet(querySet, 0, 2 * pairs, resolve, 0);
    encoder.copyBufferToBuffer(resolve, 0, readback, 0, size);
    await new Promise((r) => setTimeout(r, 0));   // the caller's submit first: mapping a buffer it copies into fails
    await readback.mapAsync(GPUMapMode.READ);
    return new BigUint64Array(readback.getMappedRange().slice(0));
  } finally {
    readback.destroy(); resolve.destroy();
  }
}
