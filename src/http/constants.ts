export const API_PREFIX = '/api/v1';
/** The request-body ceiling behind REQUEST_TOO_LARGE. */
export const MAX_BODY_BYTES = 25 * 1024 * 1024;
