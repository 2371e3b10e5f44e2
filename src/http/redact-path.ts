/**
 * Paths as log lines show them: the one-use tokens some public paths carry are replaced with
 * `[redacted]`, so a log reader cannot sign in, accept an invitation or unsubscribe someone
 * with a token read there. The query string (an upload URL's signature, a tracked link's
 * target) is never logged at all.
 */
const TOKEN_PATHS = /(\/dashboard\/sign-in\/|\/dashboard\/invite\/|\/unsubscribe\/|\/t\/[oc]\/)[^/\s?#]+/g;

/** `text` (a path, or a message that quotes one) with the token of each token path redacted. */
export function redactTokens(text: string): string {
  return text.replace(TOKEN_PATHS, '$1[redacted]');
}

/** `path` without its tokens (redactTokens) and without any query string. */
export function redactPath(path: string): string {
  return redactTokens(path.split('?')[0] ?? '');
}
