/**
 * Runs one autocannon load in its own process (so the load generator never shares an event
 * loop with what it measures): reads the options as JSON from argv[2], prints autocannon's
 * result as JSON on stdout. Used by runHttpLoad in load.ts.
 */
import { createRequire } from 'node:module';

type Autocannon = (options: Record<string, unknown>) => Promise<Record<string, unknown>>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const options = JSON.parse(process.argv[2] ?? '{}') as Record<string, unknown>;
const result = await autocannon(options);
process.stdout.write(`${JSON.stringify(result)}\n`);
