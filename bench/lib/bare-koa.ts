/**
 * Baseline (a) of the api-read benchmark: a bare Koa app that answers every request with the
 * same JSON document from memory (Koa serialises it per request, as Herald does).
 *
 *   node bench/lib/bare-koa.ts <json file> <port>
 *
 * Prints `bare koa listening` once it accepts connections.
 */
import { readFileSync } from 'node:fs';
import Koa from 'koa';

const [file, port] = process.argv.slice(2);
if (!file || !port) throw new Error('usage: node bench/lib/bare-koa.ts <json file> <port>');
const document = JSON.parse(readFileSync(file, 'utf8')) as unknown;
const app = new Koa();
app.use((ctx) => {
  ctx.body = document;
});
const server = app.listen(Number(port), '127.0.0.1', () => process.stdout.write('bare koa listening\n'));
server.keepAliveTimeout = 65_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
