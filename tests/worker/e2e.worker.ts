// The dedicated worker of the browser test (page.ts): the library's handler, as an app's worker script has it.
import { installWorkerHandler } from '../../src/worker/handler.ts';

installWorkerHandler();
