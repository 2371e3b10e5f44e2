import { randomBytes } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  ListBucketsCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { inject } from 'vitest';
import type { S3Settings } from '../../src/blob/blob-config.ts';
import { createS3Client } from '../../src/blob/s3-blob-store.ts';

type S3Server = { endpoint: string; accessKeyId: string; secretAccessKey: string };

/** The global setup's readiness probe: the server answers a signed ListBuckets. */
export async function s3Answers(server: S3Server): Promise<boolean> {
  const client = createS3Client(settingsFor(server, 'probe'));
  try {
    await client.send(new ListBucketsCommand({}));
    return true;
  } finally {
    client.destroy();
  }
}

function settingsFor(server: S3Server, bucket: string, keyPrefix = ''): S3Settings {
  return {
    bucket,
    region: 'us-east-1',
    endpoint: server.endpoint,
    forcePathStyle: true,
    keyPrefix,
    credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
  };
}

/** The run's S3 server (test/global-setup.ts). */
export function testS3Server(): S3Server {
  return { endpoint: inject('s3Endpoint'), accessKeyId: inject('s3AccessKeyId'), secretAccessKey: inject('s3SecretAccessKey') };
}

export interface TestBucket {
  bucket: string;
  settings: S3Settings;
  /** The environment that configures Herald's processes for this bucket (BLOB_STORE=s3). */
  env: Record<string, string>;
  client: S3Client;
  /** Every object key under the prefix and every unfinished multipart upload (`upload:<key>`), sorted. */
  leftovers(): Promise<string[]>;
  /** Empties the bucket (objects, unfinished uploads) and removes it. */
  drop(): Promise<void>;
}

/** A bucket of its own for a test file (or a test), on the run's S3 server, with keys under `keyPrefix`. */
export async function createTestBucket(keyPrefix = 'herald/'): Promise<TestBucket> {
  const server = testS3Server();
  const bucket = `herald-test-${randomBytes(5).toString('hex')}`;
  const settings = settingsFor(server, bucket, keyPrefix);
  const client = createS3Client(settings);
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  /** Every key under `prefix`, page by page (a listing answers 1,000 keys at most). */
  const objects = async (prefix: string) => {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      keys.push(...(page.Contents ?? []).map((object) => object.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys;
  };
  const uploads = async () =>
    ((await client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).map((upload) => `upload:${upload.Key!}`);
  return {
    bucket,
    settings,
    client,
    env: {
      BLOB_STORE: 's3',
      S3_ENDPOINT: server.endpoint,
      S3_BUCKET: bucket,
      S3_ACCESS_KEY_ID: server.accessKeyId,
      S3_SECRET_ACCESS_KEY: server.secretAccessKey,
      S3_FORCE_PATH_STYLE: 'true',
      S3_KEY_PREFIX: keyPrefix,
    },
    async leftovers() {
      const keys = (await objects(keyPrefix)).map((key) => key.slice(keyPrefix.length));
      return [...keys, ...(await uploads())].sort();
    },
    async drop() {
      for (const key of await objects('')) await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
      await client.send(new DeleteBucketCommand({ Bucket: bucket })).catch(() => {});
      client.destroy();
    },
  };
}
