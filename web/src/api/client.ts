// The API client, generated from the OpenAPI document's paths: `openapi-fetch` over the types
// `openapi-typescript` writes to `schema.d.ts`, so a changed route, parameter or response fails
// `tsc`. Errors are problem+json with their stable `code`. The API is another origin (in AWS
// API Gateway's, locally the runner's): `VITE_API_BASE_URL`, and the API allows the app's
// origin by CORS.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema';

export type Schemas = components['schemas'];
export type Job = Schemas['JobView'];
export type Problem = Schemas['Problem'];
/** Every code a problem can carry, from the API's catalogue: an unknown one fails `tsc`. */
export type ProblemCode = Schemas['ProblemCode'];
export type EditRequest = Schemas['EditRequest'];
export type Quote = Schemas['Quote'];
export type Style = Schemas['Style'];
export type Account = Schemas['AccountView'];
export type LedgerPage = Schemas['LedgerPage'];
export type JobPage = Schemas['JobPage'];
export type Pack = Schemas['PackView'];
export type Target = Schemas['Target'];
export type Strength = Schemas['Strength'];

/** A refusal from the API, carrying its problem document and `Retry-After` when given. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem | null;
  readonly retryAfter: number | null;
  constructor(status: number, problem: Problem | null, retryAfter: number | null) {
    super(problem?.detail ?? problem?.title ?? `HTTP ${String(status)}`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
  get code(): ProblemCode | 'NETWORK' {
    return this.problem?.code ?? 'NETWORK';
  }
}

/** The API's origin (the stack output `WebApiBaseUrl`; locally the runner's). */
export const API_BASE = (import.meta.env.VITE_API_BASE_URL ?? '').replace(/\/+$/, '');

let token: string | null = null;
export function setToken(t: string | null): void {
  token = t;
}

const client = createClient<paths>({ baseUrl: API_BASE });
client.use({
  onRequest({ request }) {
    if (token) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
});

function refusal(response: Response, error: unknown): ApiError {
  const problem = typeof error === 'object' && error !== null && 'code' in error ? (error as Problem) : null;
  const ra = response.headers.get('retry-after');
  return new ApiError(response.status, problem, ra === null ? null : Number(ra));
}

/**
 * Fired whenever the balance may have moved: a paid call answered (a charge, a refund, or a
 * `402` that shows this tab's number was old). The app reads the account again, so the balance
 * it shows has one source.
 */
export const ACCOUNT_CHANGED = 'atelier:account-changed';
function accountChanged(): void {
  window.dispatchEvent(new Event(ACCOUNT_CHANGED));
}

/** The answer's body, or its problem thrown as an `ApiError`. */
async function ok<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw refusal(response, error);
  return data as T;
}

/** A call that moves credits: the balance is read again once it is answered, either way (a `402`
 *  comes only from these). */
function paid<T>(call: Promise<T>): Promise<T> {
  return call.finally(accountChanged);
}

/** The longest the API waits for a job to change (`Prefer: wait=20`). */
export const LONG_POLL_SECS = 20;

/** The pause after an unchanged job was answered without the wait. */
const UNWAITED_PAUSE_MS = 2000;

/** A job as read, with its `ETag` (the same while nothing it shows changes). */
export interface TaggedJob {
  job: Job;
  etag: string | null;
}

const PAGE = 10;
const idempotent = (key: string) => ({ 'Idempotency-Key': key });

export const api = {
  styles: async () => (await ok(client.GET('/v1/styles'))).items,
  packs: async () => (await ok(client.GET('/v1/packs'))).items,
  account: () => ok(client.GET('/v1/account')),
  ledger: (cursor?: string) => ok(client.GET('/v1/account/ledger', { params: { query: { limit: PAGE, cursor } } })),
  jobs: (cursor?: string) => ok(client.GET('/v1/edits', { params: { query: { limit: PAGE, cursor } } })),
  /** The job; a delivered result's `url` serves `format` (the API's default is a phone-sized JPEG). */
  job: (id: string, format?: Schemas['ResultFormat']) =>
    ok(client.GET('/v1/edits/{id}', { params: { path: { id }, query: { format } } })),
  /**
   * The job, waiting on the server (a long-poll: `Prefer: wait=N` with `If-None-Match`) until
   * it differs from the copy tagged `etag`; `null` when it did not change within the wait.
   * Without `etag`, the job at once.
   */
  watch: async (id: string, etag: string | null, signal?: AbortSignal): Promise<TaggedJob | null> => {
    const header = etag === null ? {} : { Prefer: `wait=${String(LONG_POLL_SECS)}`, 'If-None-Match': etag };
    const { data, error, response } = await client.GET('/v1/edits/{id}', { params: { path: { id }, header }, signal });
    if (response.status === 304) {
      // Answered without the wait (no `Preference-Applied`: this user holds the most waits the
      // API allows): pause before the caller asks again.
      if (response.headers.get('preference-applied') === null) await new Promise((r) => setTimeout(r, UNWAITED_PAUSE_MS));
      return null;
    }
    if (!data) throw refusal(response, error);
    return { job: data, etag: response.headers.get('etag') };
  },
  cancel: (id: string) => paid(ok(client.POST('/v1/edits/{id}/cancel', { params: { path: { id } } }))),
  /** Keeps a repair's rejected candidate instead of the previous version: free, idempotent. */
  adopt: (id: string) => paid(ok(client.POST('/v1/edits/{id}/adopt', { params: { path: { id } } }))),
  quote: (body: EditRequest) => ok(client.POST('/v1/quotes', { body })),
  submit: (body: EditRequest, key: string) => paid(ok(client.POST('/v1/edits', { body, params: { header: idempotent(key) } }))),
  repair: (id: string, instruction: string, key: string) =>
    paid(ok(client.POST('/v1/edits/{id}/repairs', { body: { instruction }, params: { path: { id }, header: idempotent(key) } }))),
  checkout: (pack: string, key: string) =>
    ok(client.POST('/v1/checkout', {
      body: { pack, success_url: `${location.origin}/?checkout=success`, cancel_url: `${location.origin}/?checkout=cancel` },
      params: { header: idempotent(key) },
    })),
  exportPage: (cursor?: string) => ok(client.GET('/v1/account/export', { params: { query: { limit: 100, cursor } } })),
  deleteEditImages: (id: string) => ok(client.DELETE('/v1/edits/{id}/images', { params: { path: { id } } })),
  deleteAsset: async (id: string): Promise<void> => {
    const { error, response } = await client.DELETE('/v1/assets/{id}', { params: { path: { id } } });
    if (!response.ok) throw refusal(response, error);
  },
  /** `deleted`, or `pending` (closed, edits still processing) with the seconds to wait. */
  deleteAccount: async () => {
    const { data, error, response } = await client.DELETE('/v1/account');
    if (!response.ok || !data) throw refusal(response, error);
    const ra = response.headers.get('retry-after');
    return { deletion: data, retryAfter: ra === null ? null : Number(ra) };
  },
  /** Asks for an upload slot, then PUTs the bytes to the bucket with exactly the signed headers. */
  upload: async (kind: Schemas['AssetKind'], blob: Blob): Promise<string> => {
    const slot = await ok(client.POST('/v1/uploads', { body: { kind, content_type: blob.type, bytes: blob.size } }));
    const res = await fetch(slot.upload_url, { method: slot.method, headers: slot.headers, body: blob });
    if (!res.ok) throw new ApiError(res.status, null, null);
    return slot.asset_id;
  },
};

/** A sentence a person can act on, from a problem's stable code. */
export function explain(e: unknown): string {
  // fetch rejects with a TypeError when the network fails; the app's own errors say what happened.
  if (e instanceof Error && !(e instanceof ApiError) && !(e instanceof TypeError)) return e.message;
  if (!(e instanceof ApiError)) return 'Something went wrong. Check your connection and try again.';
  switch (e.code) {
    case 'INSUFFICIENT_CREDITS':
      return `Not enough credits: this costs ${String(e.problem?.price ?? '?')}, you have ${String(e.problem?.balance ?? '?')}. Buy a pack below.`;
    case 'TOO_MANY_REQUESTS':
    case 'TOO_MANY_IN_FLIGHT':
    case 'DAILY_LIMIT_REACHED':
    case 'UPLOAD_LIMIT_REACHED':
      return `${e.problem?.title ?? 'Too many requests'}. Try again in ${formatWait(e.retryAfter ?? 60)}.`;
    case 'UNAUTHENTICATED':
      return 'Your sign-in has expired. Sign in again.';
    case 'ACCOUNT_ON_HOLD':
      return 'Your account is on hold after a refunded purchase. Contact support.';
    case 'VALIDATION_FAILED':
      return (e.problem?.errors ?? []).map((f) => `${f.field}: ${f.message}`).join('; ') || 'Some fields are not valid.';
    default:
      return e.problem?.detail ?? e.problem?.title ?? `The request failed (HTTP ${String(e.status)}).`;
  }
}

export function formatWait(seconds: number): string {
  if (seconds < 90) return `${String(seconds)} seconds`;
  if (seconds < 5400) return `${String(Math.round(seconds / 60))} minutes`;
  return `${String(Math.round(seconds / 3600))} hours`;
}
