/**
 * How Herald reaches its Temporal frontend, from the TEMPORAL_TLS* and TEMPORAL_API_KEY settings:
 * plain (the dev server), TLS (a secured cluster, or Temporal Cloud), mutual TLS with a client
 * certificate, an API key (Temporal Cloud; implies TLS). Only file names here: the files are
 * read when a process connects (src/temporal/connection-options.ts), so a missing file is
 * reported by the process that needs it, naming its setting.
 */
export interface TemporalTlsSettings {
  /** PEM file of the authority that signed the frontend's certificate (TEMPORAL_TLS_CA_FILE); unset: the system's roots. */
  caFile?: string;
  /** The client certificate (TEMPORAL_TLS_CERT_FILE) and its key (TEMPORAL_TLS_KEY_FILE): mutual TLS. */
  client?: { certFile: string; keyFile: string };
  /** The name the frontend's certificate must carry when it is not the address's host (TEMPORAL_TLS_SERVER_NAME). */
  serverName?: string;
}

export interface TemporalAccessInput {
  tls: boolean;
  caFile: string;
  certFile: string;
  keyFile: string;
  serverName: string;
  apiKey: string;
}

/** TLS on when asked for or implied by any TLS file, the server name or an API key; null: plaintext. Or the problems found. */
export function resolveTemporalTls(input: TemporalAccessInput): TemporalTlsSettings | null | string[] {
  const problems: string[] = [];
  if (input.certFile && !input.keyFile) problems.push('TEMPORAL_TLS_CERT_FILE: mutual TLS needs TEMPORAL_TLS_KEY_FILE too');
  if (input.keyFile && !input.certFile) problems.push('TEMPORAL_TLS_KEY_FILE: mutual TLS needs TEMPORAL_TLS_CERT_FILE too');
  if (problems.length > 0) return problems;
  const implied = Boolean(input.caFile || input.certFile || input.serverName || input.apiKey);
  if (!input.tls && !implied) return null;
  return {
    ...(input.caFile ? { caFile: input.caFile } : {}),
    ...(input.certFile ? { client: { certFile: input.certFile, keyFile: input.keyFile } } : {}),
    ...(input.serverName ? { serverName: input.serverName } : {}),
  };
}

/** How the worker treats Herald's namespace and search attributes at start (TEMPORAL_SEARCH_ATTRIBUTES). */
export const SEARCH_ATTRIBUTE_MODES = ['register', 'check', 'off'] as const;
export type SearchAttributeMode = (typeof SEARCH_ATTRIBUTE_MODES)[number];
