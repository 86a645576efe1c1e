// Typed errors. Every message starts with `[op]` and carries the values a person needs to act on it.

/** Base class of every error this library throws on purpose. */
export class HrmError extends Error {
  constructor(readonly op: string, message: string) {
    super(`[${op}] ${message}`);
    this.name = new.target.name;
  }
}

/** A caller passed tensors of the wrong shape. */
export class ShapeError extends HrmError {}

/** A caller passed a tensor of the wrong dtype, or an unknown dtype. */
export class DTypeError extends HrmError {}

/** A tensor is larger than one storage binding (or one buffer) on this adapter. */
export class BindingSizeError extends HrmError {}

/** WebGPU rejected a command: the validator's message is kept. */
export class GpuValidationError extends HrmError {}

/** The device ran out of memory. */
export class GpuOutOfMemoryError extends HrmError {}

/** The device was lost (driver reset, tab backgrounded, destroy()). Reload to continue. */
export class DeviceLostError extends HrmError {}

/** No WebGPU adapter at all. */
export class NoWebGpuError extends HrmError {}

/** The adapter lacks a WebGPU feature the op needs (shader-f16, subgroup matrices): use the op's portable path. */
export class FeatureError extends HrmError {}

/**
 * A captured step cannot be replayed (it copies buffers, or its structure moves with the position): the caller
 * records steps one by one instead. Never a device or validation error (see gpu/capture.ts).
 */
export class NotReplayableError extends HrmError {}

/**
 * A persistent kernel's grid barrier ran out of spins in the decode step at `position` (its flag came back with the
 * step's readback): that step and every step queued after it are wrong, and are redone on the per-op path from
 * that position (hrm/stepper.ts). Never reaches generate's caller.
 */
export class BarrierRanOutError extends HrmError {
  constructor(op: string, readonly position: number) {
    super(op, `a grid barrier ran out of spins in the decode step at position ${position}`);
  }
}

/** A checkpoint, safetensors file or config is malformed. */
export class FormatError extends HrmError {}

/** Bad user input: a flag, a config key, a KV string. */
export class InputError extends HrmError {}

/**
 * A download failed: HTTP status, refused or reset connection, or a timeout. `transient` failures (timeouts,
 * resets, 408/429/5xx) are worth retrying; `status` is the HTTP status when there was one.
 */
export class NetworkError extends HrmError {
  constructor(op: string, message: string, readonly transient = false, readonly status?: number) {
    super(op, message);
  }
}

/** A command line the tool cannot parse (unknown flag, missing or invalid value): CLIs print the usage, exit 2. */
export class UsageError extends InputError {}

/** An options object holds a key the call does not know (a misspelling, or a setting that lives elsewhere). */
export class UnknownOptionError extends InputError {}

/**
 * Refuse keys of `opts` outside `known`: a key the call would ignore silently (`{ temperature: 0.8 }` at the top of
 * generate's options) is a setting the user asked for and would not get. `moved` names where a key belongs
 * (`temperature: 'sampler.temperature'`) or why it has no place. `where` is the options' name in the message.
 */
export function checkOptions(op: string, where: string, opts: object | undefined, known: readonly string[],
  moved: Readonly<Record<string, string>> = {}): void {
  if (opts === undefined || opts === null) return;
  if (typeof opts !== 'object') throw new InputError(op, `${where} must be an object (got ${typeof opts})`);
  for (const [key, value] of Object.entries(opts)) {
    // A key set to undefined asks for nothing (a wrapper forwarding its own optional fields).
    if (known.includes(key) || value === undefined) continue;
    const hint = Object.hasOwn(moved, key) ? moved[key] : `known: ${known.join(', ')}`;
    throw new UnknownOptionError(op, `unknown option '${key}' in ${where} (${hint})`);
  }
}
