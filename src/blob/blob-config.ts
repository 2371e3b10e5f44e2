/** An S3-compatible bucket's settings (S3_*): the store of src/blob/s3-blob-store.ts. */
export interface S3Settings {
  bucket: string;
  region: string;
  /** S3_ENDPOINT; absent: AWS S3 in `region`. */
  endpoint?: string;
  /** Bucket in the path (`http://host/bucket/key`) instead of the host name: most S3-compatible servers want it. */
  forcePathStyle: boolean;
  /** Put before every key: `''` or segments ending in `/` (`herald/`), so one bucket can hold several installations. */
  keyPrefix: string;
  /** Absent: the AWS SDK's default credential chain (AWS_* variables, shared files, the instance or task role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** Which blob store the processes use (BLOB_STORE); a filesystem store with an empty `dir` is none. */
export type BlobStoreSettings = { kind: 'filesystem'; dir: string } | { kind: 's3'; s3: S3Settings };

export interface BlobStoreEnv {
  BLOB_STORE: 'filesystem' | 's3';
  BLOB_DIR: string;
  S3_ENDPOINT: string | undefined;
  S3_REGION: string;
  S3_BUCKET: string;
  S3_ACCESS_KEY_ID: string;
  S3_SECRET_ACCESS_KEY: string;
  S3_FORCE_PATH_STYLE: boolean;
  S3_KEY_PREFIX: string;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX = /^([A-Za-z0-9._-]+\/)*[A-Za-z0-9._-]*$/;

/** The blob store's settings from its variables, or the problems found (cross-field rules). */
export function blobStoreSettings(env: BlobStoreEnv): BlobStoreSettings | string[] {
  if (env.BLOB_STORE === 'filesystem') return { kind: 'filesystem', dir: env.BLOB_DIR.trim() };
  const problems: string[] = [];
  const bucket = env.S3_BUCKET.trim();
  if (!bucket) problems.push('S3_BUCKET: required when BLOB_STORE=s3');
  else if (!BUCKET.test(bucket)) problems.push('S3_BUCKET: must be a bucket name (3–63 lower-case letters, digits, dots and dashes)');
  const accessKeyId = env.S3_ACCESS_KEY_ID.trim();
  const secretAccessKey = env.S3_SECRET_ACCESS_KEY.trim();
  if (Boolean(accessKeyId) !== Boolean(secretAccessKey)) {
    problems.push('S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: set both, or neither to use the AWS default credential chain');
  }
  const prefix = env.S3_KEY_PREFIX.trim();
  if (!PREFIX.test(prefix) || prefix.split('/').some((segment) => segment === '.' || segment === '..')) {
    problems.push('S3_KEY_PREFIX: must be `/`-separated segments of letters, digits, `.`, `_` and `-` (e.g. `herald/`)');
  }
  if (problems.length > 0) return problems;
  return {
    kind: 's3',
    s3: {
      bucket,
      region: env.S3_REGION.trim() || 'us-east-1',
      ...(env.S3_ENDPOINT ? { endpoint: env.S3_ENDPOINT.replace(/\/+$/, '') } : {}),
      forcePathStyle: env.S3_FORCE_PATH_STYLE,
      keyPrefix: prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`,
      ...(accessKeyId ? { credentials: { accessKeyId, secretAccessKey } } : {}),
    },
  };
}
