// The device watch: WebGPU's errors as typed errors, and the device's loss and uncaptured errors remembered so
// that the next call reports them.
import { DeviceLostError, GpuOutOfMemoryError, GpuValidationError, type HrmError } from '../errors.ts';

/** Turns a GPUError popped from an error scope into the matching typed error. */
export function toTypedError(op: string, err: GPUError): HrmError {
  const kind = err.constructor?.name ?? '';
  if (kind.includes('OutOfMemory')) return new GpuOutOfMemoryError(op, `out of GPU memory: ${err.message}`);
  if (kind.includes('Internal')) return new GpuValidationError(op, `internal GPU error: ${err.message}`);
  return new GpuValidationError(op, `WebGPU validation failed: ${err.message}`);
}

/** Watches the device: remembers loss and errors nobody captured, so the next call can report them. */
export class DeviceWatch {
  lost: GPUDeviceLostInfo | null = null;
  uncaptured: GPUError | null = null;

  constructor(device: GPUDevice) {
    device.lost.then((info) => { this.lost = info; });
    device.addEventListener?.('uncapturederror',
      (e: Event) => { this.uncaptured ??= (e as GPUUncapturedErrorEvent).error; });
  }

  /** Throw if the device is gone or an uncaptured error is pending. */
  check(op: string): void {
    if (this.lost) {
      throw new DeviceLostError(op,
        `the GPU device was lost (${this.lost.reason}: ${this.lost.message}); reload or create a new device`);
    }
    if (this.uncaptured) {
      const e = this.uncaptured;
      this.uncaptured = null;
      throw toTypedError(op, e);
    }
  }
}
