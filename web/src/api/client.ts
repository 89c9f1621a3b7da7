// The API client: typed by `schema.d.ts` (generated from the served OpenAPI document), errors
// as problem+json with their stable `code`. Locally the API is the app's own origin (the dev
// server proxies it); a build for AWS names it in `VITE_API_BASE_URL` and the API allows the
// site's origin by CORS.
import type { components } from './schema';

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

/** The API's origin when it is not the app's own (a build for AWS: `VITE_API_BASE_URL`). */
const API_BASE = (import.meta.env.VITE_API_BASE_URL ?? '').replace(/\/+$/, '');

let token: string | null = null;
export function setToken(t: string | null): void {
  token = t;
}

interface Options {
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** `304 Not Modified` is an answer, not an error (a read with `If-None-Match`). */
  notModified?: boolean;
}

async function send(method: string, path: string, o: Options = {}): Promise<Response> {
  const h: Record<string, string> = { ...o.headers };
  if (token) h.authorization = `Bearer ${token}`;
  if (o.body !== undefined) h['content-type'] = 'application/json';
  const res = await fetch(`${API_BASE}${path}`, { method, headers: h, body: o.body === undefined ? undefined : JSON.stringify(o.body), signal: o.signal });
  if (!res.ok && !(o.notModified && res.status === 304)) {
    const problem = await res.json().then((p: unknown) => p as Problem, () => null);
    const ra = res.headers.get('retry-after');
    throw new ApiError(res.status, problem, ra === null ? null : Number(ra));
  }
  return res;
}

async function call<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ data: T; res: Response }> {
  const res = await send(method, path, { body, headers });
  return { data: (await res.json()) as T, res };
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

export const api = {
  styles: async () => (await call<Schemas['StyleList']>('GET', '/v1/styles')).data.items,
  packs: async () => (await call<Schemas['PackList']>('GET', '/v1/packs')).data.items,
  account: async () => (await call<Account>('GET', '/v1/account')).data,
  ledger: async (cursor?: string) => (await call<LedgerPage>('GET', `/v1/account/ledger?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).data,
  jobs: async (cursor?: string) => (await call<JobPage>('GET', `/v1/edits?limit=10${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)).data,
  /** The job; a delivered result's `url` serves `format` (the API's default is a phone-sized JPEG). */
  job: async (id: string, format?: Schemas['ResultFormat']) =>
    (await call<Job>('GET', `/v1/edits/${encodeURIComponent(id)}${format ? `?format=${format}` : ''}`)).data,
  /**
   * The job, waiting on the server (a long-poll: `Prefer: wait=N` with `If-None-Match`) until
   * it differs from the copy tagged `etag`; `null` when it did not change within the wait.
   * Without `etag`, the job at once.
   */
  watch: async (id: string, etag: string | null, signal?: AbortSignal): Promise<TaggedJob | null> => {
    const headers: Record<string, string> = etag === null ? {} : { prefer: `wait=${String(LONG_POLL_SECS)}`, 'if-none-match': etag };
    const res = await send('GET', `/v1/edits/${encodeURIComponent(id)}`, { headers, signal, notModified: true });
    if (res.status === 304) {
      // Answered without the wait (no `Preference-Applied`: this user holds the most waits the
      // API allows): pause before the caller asks again.
      if (res.headers.get('preference-applied') === null) await new Promise((r) => setTimeout(r, UNWAITED_PAUSE_MS));
      return null;
    }
    return { job: (await res.json()) as Job, etag: res.headers.get('etag') };
  },
  cancel: async (id: string) => (await call<Job>('POST', `/v1/edits/${encodeURIComponent(id)}/cancel`)).data,
  quote: async (req: EditRequest) => (await call<Quote>('POST', '/v1/quotes', req)).data,
  submit: async (req: EditRequest, key: string) => (await call<Job>('POST', '/v1/edits', req, { 'idempotency-key': key })).data,
  repair: async (id: string, instruction: string, key: string) =>
    (await call<Job>('POST', `/v1/edits/${encodeURIComponent(id)}/repairs`, { instruction }, { 'idempotency-key': key })).data,
  checkout: async (pack: string, key: string) =>
    (await call<Schemas['CheckoutView']>('POST', '/v1/checkout', { pack, success_url: `${location.origin}/?checkout=success`, cancel_url: `${location.origin}/?checkout=cancel` }, { 'idempotency-key': key })).data,
  /** Asks for an upload slot, then PUTs the bytes with exactly the signed headers. */
  upload: async (kind: Schemas['AssetKind'], blob: Blob): Promise<string> => {
    const slot = (await call<Schemas['UploadView']>('POST', '/v1/uploads', { kind, content_type: blob.type, bytes: blob.size })).data;
    const res = await fetch(storageUrl(slot.upload_url), { method: slot.method, headers: slot.headers, body: blob });
    if (!res.ok) throw new ApiError(res.status, null, null);
    return slot.asset_id;
  },
};

/**
 * Presigned storage URLs. Locally the storage (ministack) is another origin without CORS, so
 * the development server proxies it under `/s3` (`VITE_STORAGE_PROXY=1`); in AWS the bucket
 * allows the app's origin and the URL is used as given.
 */
export function storageUrl(url: string): string {
  if (import.meta.env.VITE_STORAGE_PROXY !== '1') return url;
  const u = new URL(url);
  return `/s3${u.pathname}${u.search}`;
}

/** A sentence a person can act on, from a problem's stable code. */
export function explain(e: unknown): string {
  if (!(e instanceof ApiError)) return 'Something went wrong. Check your connection and try again.';
  switch (e.code) {
    case 'INSUFFICIENT_CREDITS':
      return `Not enough credits: this edit costs ${String(e.problem?.price ?? '?')}, you have ${String(e.problem?.balance ?? '?')}. Buy a pack below.`;
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
