// Checks of the plain-number arguments kernels share (tensor shapes have their own checks, ShapeError).
import { InputError } from '../../errors.ts';

/** A position or count argument (an offset, a cache length): an integer >= 0. */
export function checkIndex(op: string, name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0) throw new InputError(op, `${name} ${value} must be an integer >= 0`);
}
