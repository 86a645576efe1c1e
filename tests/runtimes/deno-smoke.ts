// Deno entry of the runtime smoke test: prints the result as one JSON line.
import { smoke } from './smoke.ts';

console.log(JSON.stringify(await smoke()));
