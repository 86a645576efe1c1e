// A scripted stand-in for the worker, for the client's tests (Node, no GPU): every message in either direction goes
// through structuredClone with its transfer list, as postMessage does, so a payload that would not survive the real
// boundary fails here too. The test answers the requests it receives by hand.
import type { Reply, Request } from '../../src/worker/protocol.ts';
import type { WorkerPort } from '../../src/worker/client.ts';

type Listener = (ev: { data?: unknown; message?: string }) => void;

export class FakeWorker implements WorkerPort {
  /** Requests the client sent, in order (clones, as the worker would see them). */
  readonly received: Request[] = [];
  /** The same requests as the client passed them (before cloning). */
  readonly sent: Request[] = [];
  terminated = false;
  private readonly listeners = new Map<string, Listener[]>();
  private waiters: Array<() => void> = [];

  addEventListener(type: string, listener: Listener): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  postMessage(message: Request, transfer: Transferable[] = []): void {
    if (this.terminated) throw new Error('posted to a terminated worker');
    this.received.push(structuredClone(message, { transfer }));
    this.sent.push(message);
    for (const w of this.waiters.splice(0)) w();
  }

  terminate(): void {
    this.terminated = true;
  }

  /** Answer as the worker would; the reply arrives on a later task, as a real message does. */
  reply(m: Reply, transfer: Transferable[] = []): void {
    const data = structuredClone(m, { transfer });
    setTimeout(() => this.fire('message', { data }), 0);
  }

  /** An error the worker did not catch. */
  crash(message: string): void {
    this.fire('error', { message });
  }

  /** The n-th request (0-based), once it has arrived. */
  async request(n: number): Promise<Request> {
    while (this.received.length <= n) await new Promise<void>((r) => this.waiters.push(r));
    return this.received[n];
  }

  private fire(type: string, ev: { data?: unknown; message?: string }): void {
    for (const l of this.listeners.get(type) ?? []) l(ev);
  }
}
