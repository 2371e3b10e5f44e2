import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { AttachmentUpload } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from './api.ts';
import type { ApiResponse } from './http.ts';

/** The 201 of POST /api/v1/outbox/attachments. */
export interface UploadSlot {
  attachment_id: string;
  upload_url: string;
  expires_at: string;
  required_headers: Record<string, string>;
}

/** Every file under a directory (relative paths, sorted); [] when it does not exist. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

export interface UploadHarness extends ApiHarness {
  /** The api's BLOB_DIR (a temporary directory). */
  blobDir: string;
  /** POST /api/v1/outbox/attachments. */
  create(body: Record<string, unknown>, headers?: Record<string, string>): Promise<ApiResponse>;
  /** An upload slot (a PDF of 10 bytes unless overridden); fails the test unless 201. */
  slot(body?: Partial<{ filename: string; content_type: string; size_bytes: number }>): Promise<UploadSlot>;
  /** An upload URL aimed at the running api (PUBLIC_URL in tests is http://herald.test). */
  local(uploadUrl: string): string;
  /** Sends `body` to an upload URL (PUT unless told otherwise). */
  put(uploadUrl: string, body: RequestInit['body'] | undefined, headers: Record<string, string>, method?: string): Promise<ApiResponse>;
  /** The upload's row. */
  row(attachmentId: string): Promise<AttachmentUpload>;
  /** The files in the blob store that belong to an upload (finished or partial). */
  blobsOf(attachmentId: string): Promise<string[]>;
}

/** A running api with a blob store in a temporary directory, and helpers for both upload steps. */
export async function startUploadHarness(): Promise<UploadHarness> {
  const blobDir = await mkdtemp(join(tmpdir(), 'herald-uploads-'));
  const h = await startApiHarness({ BLOB_DIR: blobDir });
  const local = (uploadUrl: string) => {
    const url = new URL(uploadUrl);
    return `${h.api.url}${url.pathname}${url.search}`;
  };
  const create = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
    h.request('POST', '/api/v1/outbox/attachments', { body, headers });
  return {
    ...h,
    blobDir,
    create,
    async slot(body = {}) {
      const response = await create({ filename: 'report.pdf', content_type: 'application/pdf', size_bytes: 10, ...body });
      expect(response.status, JSON.stringify(response.body)).toBe(201);
      return response.body.data as UploadSlot;
    },
    local,
    async put(uploadUrl, body, headers, method = 'PUT') {
      const response = await fetch(local(uploadUrl), { method, headers, ...(body !== undefined ? { body, duplex: 'half' } : {}) });
      const text = await response.text();
      return { status: response.status, headers: response.headers, body: JSON.parse(text) as ApiResponse['body'] };
    },
    row: (attachmentId) => scopeToOrg(h.stack.orm.em, h.workspace.org.id).findOneOrFail(AttachmentUpload, { id: attachmentId }),
    blobsOf: async (attachmentId) => (await filesUnder(blobDir)).filter((path) => path.includes(attachmentId)),
    async close() {
      await h.close();
      await rm(blobDir, { recursive: true, force: true });
    },
  };
}
