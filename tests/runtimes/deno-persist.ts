// Deno entry of the persistent-kernel runtime test (persist.test.ts): the run with this driver's shader text, then
// with the loops written out as Deno gives a GPU (kernels/unroll.ts), printed as one JSON line.
import { persist } from './persist.ts';

const step = (s: string) => console.error(`step: ${s}`);
const plain = await persist(step);
console.log(JSON.stringify({ plain, unrolled: await persist(step, true) }));
