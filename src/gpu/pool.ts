// The buffer pool: storage buffers handed out by size (rounded up to 4 bytes) and given back for reuse, so a decode
// step allocates nothing new once warm. The hand-out order is deterministic, which capture and replay rely on
// (capture.ts, "Pool order").
import { BindingSizeError } from '../errors.ts';

export interface BufferView { buffer: GPUBuffer; offset: number; size: number }

const bufferIds = new WeakMap<GPUBuffer, number>();
let nextBufferId = 1;
/** A stable small id per buffer (creation order), for cache keys and deterministic pool order. */
export function bufferId(b: GPUBuffer): number {
  let id = bufferIds.get(b);
  if (id === undefined) bufferIds.set(b, (id = nextBufferId++));
  return id;
}

export class BufferPool {
  /** Free buffers by size, each list oldest (lowest bufferId) last, where `allocate` pops. */
  private readonly free = new Map<number, GPUBuffer[]>();
  private readonly maxBuffer: number;

  constructor(private readonly device: GPUDevice) {
    this.maxBuffer = device.limits.maxBufferSize;
  }

  /** A storage buffer of exactly `bytes` bytes (rounded up to 4), from the pool when one is free. */
  allocate(bytes: number, label: string): GPUBuffer {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    if (size > this.maxBuffer) {
      const limit = `this adapter's maxBufferSize is ${this.maxBuffer}`;
      throw new BindingSizeError(label, `needs a buffer of ${size} bytes, but ${limit}`);
    }
    const free = this.free.get(size);
    return free?.length ? free.pop()! : this.createStorage(size, label);
  }

  /**
   * Take buffers out of the pool for good (a captured step keeps binding them); `release` gives them back.
   * Buffers not in the pool (held by live tensors) are left alone.
   */
  claim(buffers: Iterable<GPUBuffer>): GPUBuffer[] {
    const taken: GPUBuffer[] = [];
    for (const b of buffers) {
      const list = this.free.get(b.size);
      const i = list?.indexOf(b) ?? -1;
      if (i >= 0) { list!.splice(i, 1); taken.push(b); }
    }
    return taken;
  }

  /**
   * Give a buffer back to the pool; commands already recorded keep reading it in order. Free lists are kept
   * sorted so `allocate` hands out the oldest free buffer: the same sequence of allocations then gets the same
   * buffers every decode step, which keeps cached bind groups valid.
   */
  release(buffer: GPUBuffer): void {
    const list = this.free.get(buffer.size) ?? [];
    const id = bufferId(buffer);
    let i = list.length;
    while (i > 0 && bufferId(list[i - 1]) < id) i--;
    list.splice(i, 0, buffer);
    this.free.set(buffer.size, list);
  }

  /** Destroy pooled buffers (frees GPU memory held for reuse). */
  trim(): void {
    for (const list of this.free.values()) for (const b of list) b.destroy();
    this.free.clear();
  }

  private createStorage(size: number, label: string): GPUBuffer {
    const b = this.device.createBuffer({
      size, label,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    bufferId(b);
    return b;
  }
}
