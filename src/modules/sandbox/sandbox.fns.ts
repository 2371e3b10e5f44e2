import type { ApiKeyMode } from '../../../db/entities/index.ts';

/** Who accepts a send: the key (null for a dashboard person) and its mode. */
export interface SendCaller {
  keyId: string | null;
  keyMode: ApiKeyMode;
}

/** Whether what this caller sends stays in the sandbox: a test key's mail never leaves Herald. */
export function isSandboxCaller(caller: SendCaller): boolean {
  return caller.keyMode === 'test';
}
