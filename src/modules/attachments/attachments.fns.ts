import type { FieldProblem } from '../../validation.ts';

/** The per-file limit of the spec (Limits: one attachment 12 MB), in bytes. */
export const MAX_ATTACHMENT_BYTES = 12 * 1024 * 1024;

export const FILENAME_MAX_LENGTH = 512;

/** The column holding the content type is 255 characters. */
export const CONTENT_TYPE_MAX_LENGTH = 255;

/** How long a signed upload URL works. */
export const UPLOAD_URL_TTL_SECONDS = 60 * 60;

/** Uploads unused for this long (since creation, or since their last reference) are deleted. */
export const UPLOAD_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Content types refused at upload: executables, installers, scripts and archives of code that a
 * mail client may run or that mail providers reject outright. Compared on the essence
 * (`type/subtype`, lower-cased, parameters dropped).
 */
export const DENIED_CONTENT_TYPES: ReadonlySet<string> = new Set([
  'application/x-msdownload',
  'application/x-msdos-program',
  'application/x-dosexec',
  'application/x-winexe',
  'application/vnd.microsoft.portable-executable',
  'application/x-ms-installer',
  'application/x-msi',
  'application/x-ms-shortcut',
  'application/x-ms-application',
  'application/x-executable',
  'application/x-elf',
  'application/x-mach-binary',
  'application/x-sharedlib',
  'application/x-sh',
  'application/x-csh',
  'application/x-shellscript',
  'text/x-shellscript',
  'application/x-bat',
  'application/x-msbatch',
  'application/bat',
  'application/java-archive',
  'application/x-java-archive',
  'application/x-java-jnlp-file',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'text/javascript',
  'text/ecmascript',
  'text/jscript',
  'text/vbscript',
  'application/x-vbscript',
  'application/hta',
  'application/x-powershell',
  'application/vnd.android.package-archive',
  'application/x-apple-diskimage',
  'application/vnd.ms-cab-compressed',
]);

/**
 * File name extensions refused at upload (case-insensitive, judged after trailing dots and
 * spaces, which Windows ignores, and on each part of an NTFS stream name: deniedExtension): the same family as DENIED_CONTENT_TYPES, plus disk images
 * commonly used to smuggle them past filters.
 */
export const DENIED_EXTENSIONS: ReadonlySet<string> = new Set([
  'ade',
  'adp',
  'apk',
  'appx',
  'appxbundle',
  'bat',
  'cab',
  'chm',
  'cmd',
  'com',
  'cpl',
  'dll',
  'dmg',
  'exe',
  'hta',
  'img',
  'inf',
  'ins',
  'iso',
  'isp',
  'jar',
  'jnlp',
  'js',
  'jse',
  'lnk',
  'mde',
  'msc',
  'msi',
  'msix',
  'msixbundle',
  'msp',
  'mst',
  'pif',
  'ps1',
  'psm1',
  'reg',
  'scf',
  'scr',
  'sct',
  'sh',
  'shb',
  'sys',
  'vb',
  'vbe',
  'vbs',
  'vhd',
  'vhdx',
  'vxd',
  'ws',
  'wsc',
  'wsf',
  'wsh',
  'xll',
]);

const TOKEN = "[A-Za-z0-9!#$&^_.+'*`|~-]+";
const QUOTED = '"(?:[^"\\\\\\p{Cc}]|\\\\.)*"';
const MIME_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED}))*$`, 'u');

/** `type/subtype` of a content type, lower-cased, without parameters. */
export function mimeEssence(contentType: string): string {
  return (contentType.split(';')[0] ?? '').trim().toLowerCase();
}

/** The extension a file name ends with (lower-cased, trailing dots and spaces ignored), or ''. */
export function fileExtension(filename: string): string {
  const name = filename.replace(/[. ]+$/, '');
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}

/**
 * The denied extension a file name carries, or null. NTFS reads `name.exe::$DATA` and
 * `name.exe:stream` as streams of `name.exe`, so each colon-separated part is judged: the file's
 * own name, the stream's and its type.
 */
export function deniedExtension(filename: string): string | null {
  for (const part of filename.split(':')) {
    const extension = fileExtension(part);
    if (DENIED_EXTENSIONS.has(extension)) return extension;
  }
  return null;
}

function problem(path: string, type: string, message: string): FieldProblem {
  return { path, location: 'body', type, message };
}

/** What is wrong with an upload's file name, or null. */
export function filenameProblem(filename: string): FieldProblem | null {
  if (filename.length < 1 || filename.length > FILENAME_MAX_LENGTH) {
    return problem('filename', 'length', `must be 1 to ${FILENAME_MAX_LENGTH} characters`);
  }
  if (filename.trim() === '' || /^[. ]+$/.test(filename)) return problem('filename', 'filename', 'must name a file');
  if (/\p{Cc}/u.test(filename)) return problem('filename', 'filename', 'must not contain control characters');
  if (/[/\\]/.test(filename)) return problem('filename', 'filename', 'must be a file name, not a path');
  const extension = deniedExtension(filename);
  if (extension !== null) {
    return problem('filename', 'denied_extension', `.${extension} files are not accepted as attachments`);
  }
  return null;
}

/** What is wrong with an upload's content type, or null. */
export function contentTypeProblem(contentType: string): FieldProblem | null {
  if (contentType.length > CONTENT_TYPE_MAX_LENGTH || !MIME_TYPE.test(contentType)) {
    return problem('content_type', 'mime_type', 'must be a MIME type such as application/pdf');
  }
  if (DENIED_CONTENT_TYPES.has(mimeEssence(contentType))) {
    return problem('content_type', 'denied_content_type', `${mimeEssence(contentType)} is not accepted as an attachment`);
  }
  return null;
}

/** Every problem with the file name and content type of an upload request (empty when fine). */
export function attachmentProblems(input: { filename: string; content_type: string }): FieldProblem[] {
  return [filenameProblem(input.filename), contentTypeProblem(input.content_type)].filter((found): found is FieldProblem => found !== null);
}

/** The blob key reserved for an upload when it is created (no bytes are stored under it). */
export function reservedBlobKey(orgId: string, attachmentId: string): string {
  return `uploads/${orgId}/${attachmentId}`;
}

/**
 * The blob key one PUT attempt writes to: its own key, so two concurrent PUTs of the same URL
 * never overwrite each other's bytes; the attempt that marks the row uploaded wins.
 */
export function attemptBlobKey(orgId: string, attachmentId: string, attempt: string): string {
  return `${reservedBlobKey(orgId, attachmentId)}.${attempt}`;
}
