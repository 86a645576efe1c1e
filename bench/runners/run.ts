// Node entry (Dawn through npm `webgpu`): `npm run bench -- [options]`, or the bundle bench/pack.sh builds.
import { main } from './cli.ts';

const code = await main(process.argv.slice(2));
// Dawn's instance keeps the event loop alive: leave explicitly once the files are written.
process.exit(code);
