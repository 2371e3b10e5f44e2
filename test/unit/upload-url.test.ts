import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { attachmentProblems, fileExtension, mimeEssence } from '../../src/modules/attachments/attachments.fns.ts';
import { createUploadUrlSigner } from '../../src/modules/attachments/upload-url.ts';

describe('signed upload URLs', () => {
  const key = randomBytes(32);
  const signer = createUploadUrlSigner(key, 'https://herald.example.com');
  const claim = { attachmentId: '6b0160fda0137013257687ee', contentType: 'application/pdf', sizeBytes: 48_213, expires: 1_795_255_200 };

  it('builds <public url>/uploads/<id>?expires=&sig= with a 64-hex signature that verifies', () => {
    const url = new URL(signer.url(claim));
    expect(`${url.origin}${url.pathname}`).toBe('https://herald.example.com/uploads/6b0160fda0137013257687ee');
    expect(url.searchParams.get('expires')).toBe('1795255200');
    const sig = url.searchParams.get('sig')!;
    expect(sig).toMatch(/^[0-9a-f]{64}$/);
    expect(sig).toBe(signer.sign(claim));
    expect(signer.verify(claim, sig)).toBe(true);
  });

  it('binds the id, content type, size and expiry', () => {
    const sig = signer.sign(claim);
    for (const changed of [
      { ...claim, attachmentId: '6b0160fda0137013257687ef' },
      { ...claim, contentType: 'application/pdf; x=1' },
      { ...claim, contentType: 'Application/pdf' },
      { ...claim, sizeBytes: 48_214 },
      { ...claim, expires: claim.expires + 1 },
    ]) {
      expect(signer.verify(changed, sig), JSON.stringify(changed)).toBe(false);
    }
  });

  it("refuses malformed signatures and another key's signature", () => {
    const sig = signer.sign(claim);
    for (const bad of ['', 'zz', sig.slice(2), `${sig}00`, sig.toUpperCase(), 'g'.repeat(64)])
      expect(signer.verify(claim, bad), bad).toBe(false);
    expect(createUploadUrlSigner(randomBytes(32), 'https://herald.example.com').verify(claim, sig)).toBe(false);
    expect(createUploadUrlSigner(key, 'https://other.example.com').verify(claim, sig)).toBe(true);
  });
});

describe('attachment rules', () => {
  it('reads the extension that decides, ignoring case and trailing dots and spaces', () => {
    expect(fileExtension('a.PDF')).toBe('pdf');
    expect(fileExtension('invoice.pdf.exe')).toBe('exe');
    expect(fileExtension('invoice.exe. . ')).toBe('exe');
    expect(fileExtension('.bashrc')).toBe('');
    expect(fileExtension('README')).toBe('');
  });

  it('reads the essence of a content type', () => {
    expect(mimeEssence(' Text/HTML ; charset=UTF-8')).toBe('text/html');
  });

  it('accepts ordinary files and refuses executables by name or type', () => {
    expect(attachmentProblems({ filename: 'a.pdf', content_type: 'application/pdf' })).toEqual([]);
    expect(attachmentProblems({ filename: 'a.txt', content_type: 'text/plain; charset="utf-8"' })).toEqual([]);
    expect(attachmentProblems({ filename: 'a.exe', content_type: 'application/pdf' }).map((p) => p.type)).toEqual(['denied_extension']);
    expect(attachmentProblems({ filename: 'a.pdf', content_type: 'application/x-msdownload' }).map((p) => p.type)).toEqual([
      'denied_content_type',
    ]);
  });

  it('refuses an executable named as an NTFS alternate data stream', () => {
    for (const filename of [
      'invoice.exe::$DATA',
      'invoice.EXE::$data',
      'invoice.exe:stream',
      'invoice.exe:stream:$DATA',
      'notes.txt:payload.exe',
      'invoice.exe. ::$DATA',
    ]) {
      expect(
        attachmentProblems({ filename, content_type: 'application/pdf' }).map((p) => p.type),
        filename,
      ).toEqual(['denied_extension']);
    }
    expect(attachmentProblems({ filename: 'minutes 10:30.pdf', content_type: 'application/pdf' })).toEqual([]);
  });
});
