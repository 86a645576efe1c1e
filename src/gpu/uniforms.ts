// The uniform arena: kernels' small uniform blocks packed into 64 KiB chunks at the device's uniform offset
// alignment, written to the queue when their batch is submitted (or kept by a capture), then reused by the next
// batch. One buffer per chunk instead of one per dispatch.
import type { BufferView } from './pool.ts';
import type { Upload } from './batch.ts';

const UNIFORM_CHUNK = 64 * 1024;

interface Chunk { buffer: GPUBuffer; data: Uint8Array<ArrayBuffer>; used: number }

export class UniformArena {
  private readonly chunks: Chunk[] = [];
  /** The chunk being filled; the ones before it are full. */
  private index = 0;

  constructor(private readonly device: GPUDevice) {}

  /** Stage a uniform block; returns where it will live once the batch is submitted. */
  uniform(bytes: Uint8Array): BufferView {
    const align = this.device.limits.minUniformBufferOffsetAlignment;
    let chunk = this.chunks[this.index];
    if (chunk && chunk.used + bytes.byteLength > UNIFORM_CHUNK) chunk = this.chunks[++this.index];
    if (!chunk) {
      const usage = GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
      chunk = {
        buffer: this.device.createBuffer({ size: UNIFORM_CHUNK, usage, label: 'uniforms' }),
        data: new Uint8Array(new ArrayBuffer(UNIFORM_CHUNK)), used: 0,
      };
      this.chunks[this.index] = chunk;
    }
    const offset = chunk.used;
    chunk.data.set(bytes, offset);
    chunk.used = Math.ceil((offset + bytes.byteLength) / align) * align;
    return { buffer: chunk.buffer, offset, size: bytes.byteLength };
  }

  /**
   * The uniform blocks staged since the last submit; the arena starts over. A capture keeps them (`copy`); a
   * submit writes them to the queue at once (writeBuffer copies), so views of the arena serve.
   */
  take(copy = true): Upload[] {
    const out: Upload[] = [];
    for (let i = 0; i <= this.index && i < this.chunks.length; i++) {
      const ch = this.chunks[i];
      if (ch.used) {
        const data = copy ? ch.data.slice(0, ch.used) : ch.data.subarray(0, ch.used);
        out.push({ buffer: ch.buffer, offset: 0, data });
      }
      ch.used = 0;
    }
    this.index = 0;
    return out;
  }
}
