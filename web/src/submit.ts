// Paying once. A paid request's Idempotency-Key is written to session storage BEFORE it is
// sent, with the body it goes with; a reload, a double click or a retry sends the same key and
// body again and gets the same job (`200 Idempotent-Replayed`), never a second charge.
const PENDING = 'atelier.pending';

export interface Pending {
  key: string;
  kind: 'edit' | 'repair';
  /** The edit to repair (repairs only). */
  parent?: string;
  body: unknown;
}

export function pending(): Pending | null {
  const raw = sessionStorage.getItem(PENDING);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as Pending;
  } catch {
    return null;
  }
}

/** The pending request for this body, or a new one with a fresh key, saved before sending. */
export function begin(kind: Pending['kind'], body: unknown, parent?: string): Pending {
  const existing = pending();
  if (existing && existing.kind === kind && existing.parent === parent && JSON.stringify(existing.body) === JSON.stringify(body)) {
    return existing;
  }
  const p: Pending = { key: crypto.randomUUID(), kind, parent, body };
  sessionStorage.setItem(PENDING, JSON.stringify(p));
  return p;
}

/** The API answered (a job, or a refusal that charged nothing): the key is spent. */
export function finish(): void {
  sessionStorage.removeItem(PENDING);
}
