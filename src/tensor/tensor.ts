// A GPU tensor: a storage buffer with a shape and a dtype. bf16/f16 are packed two per word; readback widens
// them to f32. Tensors own their buffer (returned to the pool on dispose) unless they are views.
import { BindingSizeError, DTypeError, ShapeError } from '../errors.ts';
import { dtypeBytes, packHalf, storageBytes, unpackHalf, type DType } from './dtype.ts';
import type { BufferView, Gpu } from '../gpu/gpu.ts';

export type HostArray = Float32Array | Int32Array | Uint32Array | Uint16Array | Uint8Array | number[];

export function numel(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new ShapeError('tensor', `bad shape [${shape.join(', ')}]`);
    n *= d;
  }
  return n;
}

export class Tensor {
  private disposed = false;
  private readonly derived: Tensor[] = [];

  constructor(
    readonly gpu: Gpu,
    readonly buffer: GPUBuffer,
    readonly shape: readonly number[],
    readonly dtype: DType,
    readonly label: string,
    /** Byte offset of element 0 inside `buffer` (views). */
    readonly offset = 0,
    private readonly owned = true,
  ) {}

  /** An uninitialised tensor from the pool. */
  static empty(gpu: Gpu, shape: readonly number[], dtype: DType, label: string): Tensor {
    return new Tensor(gpu, gpu.allocate(storageBytes(dtype, numel(shape)), label), [...shape], dtype, label);
  }

  /**
   * Upload host data. Numbers are converted to the dtype (bf16/f16 rounded to nearest even); a Uint16Array for
   * a half dtype, or a Uint8Array for any dtype, is taken as raw stored bits.
   */
  static from(gpu: Gpu, data: HostArray, shape: readonly number[], dtype: DType, label: string): Tensor {
    const n = numel(shape);
    const bytes = toBytes(data, n, dtype, label);
    const t = Tensor.empty(gpu, shape, dtype, label);
    gpu.write(t.buffer, 0, padToWord(bytes));
    return t;
  }

  get size(): number { return numel(this.shape); }
  get byteLength(): number { return storageBytes(this.dtype, this.size); }
  get rank(): number { return this.shape.length; }

  /** @internal The bytes a kernel binds. */
  binding(op: string): BufferView {
    if (this.disposed) throw new ShapeError(op, `tensor '${this.label}' was disposed`);
    if (this.byteLength > this.gpu.maxBinding) {
      throw new BindingSizeError(op,
        `tensor '${this.label}' [${this.shape.join(', ')}] ${this.dtype} is ${this.byteLength} bytes, ` +
        `more than this adapter binds at once (maxStorageBufferBindingSize ${this.gpu.maxBinding}); split it`);
    }
    return { buffer: this.buffer, offset: this.offset, size: this.byteLength };
  }

  /** Same storage, another shape with the same element count. */
  reshape(shape: readonly number[]): Tensor {
    if (numel(shape) !== this.size) {
      throw new ShapeError('reshape',
        `cannot view '${this.label}' [${this.shape.join(', ')}] as [${shape.join(', ')}]`);
    }
    return new Tensor(this.gpu, this.buffer, [...shape], this.dtype, this.label, this.offset, false);
  }

  /** Rows [start, start+count) of the leading axis, as a view (offset must meet the adapter's alignment). */
  rows(start: number, count: number): Tensor {
    const rowElems = this.size / this.shape[0];
    const offsetBytes = start * rowElems * dtypeBytes(this.dtype);
    if (offsetBytes % this.gpu.storageAlign !== 0 || start < 0 || start + count > this.shape[0]) {
      throw new ShapeError('rows',
        `cannot view rows ${start}..${start + count} of '${this.label}' [${this.shape.join(', ')}] ` +
        `(offset ${offsetBytes} must be a multiple of ${this.gpu.storageAlign})`);
    }
    return new Tensor(this.gpu, this.buffer, [count, ...this.shape.slice(1)], this.dtype, this.label,
      this.offset + offsetBytes, false);
  }

  /** Read back: f32/f16/bf16 as Float32Array, u32 as Uint32Array, i32 as Int32Array. */
  async read(): Promise<Float32Array | Int32Array | Uint32Array> {
    const raw = await this.gpu.read({ buffer: this.buffer, offset: this.offset, size: this.byteLength },
      `read '${this.label}'`);
    switch (this.dtype) {
      case 'f32': return new Float32Array(raw, 0, this.size);
      case 'u32': return new Uint32Array(raw, 0, this.size);
      case 'i32': return new Int32Array(raw, 0, this.size);
      default: return unpackHalf(this.dtype, new Uint16Array(raw), this.size);
    }
  }

  /** Read back as f32 whatever the dtype. */
  async readF32(): Promise<Float32Array> {
    const v = await this.read();
    return v instanceof Float32Array ? v : Float32Array.from(v);
  }

  /**
   * Dispose `t` with this tensor: a copy of its contents in another form that a kernel family keeps (the f16 copy
   * of a weight the tensor cores read). Only owned tensors take one (a view's dispose frees nothing).
   */
  attach(t: Tensor): void {
    if (!this.owned) throw new ShapeError('attach',
      `'${this.label}' is a view; attach to the tensor that owns its buffer`);
    this.derived.push(t);
  }

  /** Whether dispose() frees the buffer (false for views). */
  get ownsBuffer(): boolean { return this.owned; }

  dispose(): void {
    if (this.disposed || !this.owned) return;
    this.disposed = true;
    this.gpu.release(this.buffer);
    for (const t of this.derived.splice(0)) t.dispose();
  }
}

function toBytes(data: HostArray, n: number, dtype: DType, label: string): Uint8Array {
  const need = n * dtypeBytes(dtype);
  if (data instanceof Uint8Array) {
    if (data.byteLength !== need) throw new ShapeError('upload',
      `'${label}': ${data.byteLength} bytes given, ${dtype} x ${n} needs ${need}`);
    return data;
  }
  if (data.length !== n) throw new ShapeError('upload', `'${label}': ${data.length} values given for ${n} elements`);
  switch (dtype) {
    case 'f32': return bytesOf(data instanceof Float32Array ? data : Float32Array.from(data as ArrayLike<number>));
    case 'i32': return bytesOf(data instanceof Int32Array ? data : Int32Array.from(data as ArrayLike<number>));
    case 'u32': return bytesOf(data instanceof Uint32Array ? data : Uint32Array.from(data as ArrayLike<number>));
    case 'bf16': case 'f16': {
      const bits = data instanceof Uint16Array ? data : packHalf(dtype, data as ArrayLike<number>);
      return new Uint8Array(bits.buffer, bits.byteOffset, n * 2);
    }
    default: throw new DTypeError('upload', `unknown dtype ${dtype}`);
  }
}

function bytesOf(a: ArrayBufferView): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function padToWord(b: Uint8Array): Uint8Array {
  if (b.byteLength % 4 === 0) return b;
  const out = new Uint8Array(Math.ceil(b.byteLength / 4) * 4);
  out.set(b);
  return out;
}
