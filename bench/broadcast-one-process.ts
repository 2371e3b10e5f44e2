/**
 * 10b. The broadcast benchmark (bench/broadcast.ts) with Herald as one `herald all` process
 * (api, worker and smtp), the shape `npm start` runs: the same figures, and the one process's
 * peak RSS against the 600 MB target.
 */
import { broadcastBenchmark } from './broadcast.ts';

export const benchmark = broadcastBenchmark('one-process');
