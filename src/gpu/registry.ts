// Per-device state that kernels keep (self-check verdicts, placeholders, counters), owned by the Gpu it belongs to
// instead of module-level WeakMaps: it lives and dies with the device, and two Gpus in one process never share it.

/** A typed name for one kind of state; make one per kind at module level with `stateKey`. */
export interface StateKey<T> { readonly name: string; readonly phantom?: T }

export function stateKey<T>(name: string): StateKey<T> {
  return Object.freeze({ name });
}

export class DeviceState {
  private readonly slots = new Map<StateKey<unknown>, unknown>();

  /** The value under `key`, made by `make` on first use. */
  get<T>(key: StateKey<T>, make: () => T): T {
    if (!this.slots.has(key)) this.slots.set(key, make());
    return this.slots.get(key) as T;
  }

  /** The value under `key`, or undefined while none was set. */
  peek<T>(key: StateKey<T>): T | undefined {
    return this.slots.get(key) as T | undefined;
  }

  set<T>(key: StateKey<T>, value: T): void {
    this.slots.set(key, value);
  }
}
