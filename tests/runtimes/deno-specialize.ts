// Deno entry of specialize.test.ts's Deno case: the embedded model's logits with overrides as pipeline constants
// and written into the source (what Deno runs), as one JSON line. Not gemv_wide: naga panics on its constants.
import { outputBits } from '../helpers/specialized-bits.ts';

const [plain] = await outputBits(false, false);
const [special] = await outputBits(true, false);
const diff = plain.findIndex((b, i) => b !== special[i]);
console.log(JSON.stringify({ n: plain.length, same: plain.length === special.length && diff < 0, firstDiff: diff }));
