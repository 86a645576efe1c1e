// Errors across the worker boundary. Structured cloning keeps only the built-in error classes, so an error thrown in
// the worker crosses as its name and message (protocol.ts's ErrorPayload) and is rebuilt here as the same class:
// the library's typed errors (errors.ts, REFRACT's), the built-in ones, a DOMException (AbortError), or a
// plain Error carrying the original name.
import * as typed from '../errors.ts';
import { BackendCapabilityError, RefractError } from '../refract/backend.ts';
import type { ErrorPayload } from './protocol.ts';

/** The worker cannot answer: it failed to start, died, was terminated, or its model was never loaded. */
export class WorkerError extends typed.HrmError {}

type HrmErrorClass = new (op: string, message: string) => typed.HrmError;

/**
 * The typed errors by name. The names are the classes' export names, not their `name`s: a minifier renames
 * classes, each bundle (the page's, the worker's) its own way, so the same class may have two `name`s.
 */
const HRM_ERRORS = new Map<string, HrmErrorClass>(
  Object.entries({ ...typed, BackendCapabilityError, RefractError, WorkerError } as Record<string, unknown>)
    .filter((e): e is [string, HrmErrorClass] => {
      const c = e[1];
      return typeof c === 'function' && (c === typed.HrmError || c.prototype instanceof typed.HrmError);
    }),
);
const NAMES = new Map<unknown, string>([...HRM_ERRORS].map(([n, c]) => [c, n]));

/** The name `e` crosses with: its typed class's export name (or a parent's), else its own `name`. */
export function errorName(e: Error): string {
  for (let p = Object.getPrototypeOf(e); p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    const n = NAMES.get(p.constructor);
    if (n) return n;
  }
  return e.name;
}

const BUILT_IN: Record<string, ErrorConstructor> = {
  Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError,
};

/** DOMException names that WebGPU, fetch, streams and postMessage throw (NetworkError is the library's own). */
const DOM_EXCEPTIONS = new Set([
  'AbortError', 'TimeoutError', 'NotSupportedError', 'InvalidStateError', 'OperationError', 'DataCloneError',
  'NotAllowedError', 'SecurityError', 'QuotaExceededError', 'EncodingError', 'NotReadableError', 'NotFoundError',
  'DataError', 'UnknownError',
]);

/** The error `p` describes, as an instance of its class where this side knows the class. */
export function reviveError(p: ErrorPayload): Error {
  let e: Error;
  const Typed = HRM_ERRORS.get(p.name);
  if (Typed) {
    const op = p.op ?? 'worker';
    e = p.name === 'NetworkError' ? new typed.NetworkError(op, '', p.transient, p.status) : new Typed(op, '');
    e.message = p.message;
  } else if (BUILT_IN[p.name]) {
    e = new BUILT_IN[p.name](p.message);
  } else if (typeof DOMException !== 'undefined' && DOM_EXCEPTIONS.has(p.name)) {
    e = new DOMException(p.message, p.name) as unknown as Error;
  } else {
    e = new Error(p.message);
    e.name = p.name;
  }
  // The worker's stack says where it was thrown; this side's would only show the message handler.
  if (p.stack) {
    try {
      Object.defineProperty(e, 'stack', { value: p.stack, configurable: true, writable: true });
    } catch { /* a stack that cannot be redefined: keep this side's */ }
  }
  return e;
}
