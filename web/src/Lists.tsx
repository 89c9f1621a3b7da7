import { useEffect, useState, type ReactNode } from 'react';
import { pathOf } from './route';
import { api, explain, type Job, type LedgerPage, type Schemas } from './api/client';

const STATUS: Record<Job['status'], string> = {
  queued: 'Waiting to start',
  processing: 'Being made',
  succeeded: 'Delivered',
  failed: 'Failed (refunded)',
  canceled: 'Canceled (refunded)',
};
export const statusText = (s: Job['status']): string => STATUS[s];

/** A job stopped to ask which subject was meant: a question, not a failure. */
export const asksWhichOne = (j: Job): boolean => j.failure?.code === 'NEEDS_CLARIFICATION';
/** A preview: the area shown, nothing drawn, refunded. */
export const isPreview = (j: Job): boolean => j.failure?.code === 'PREVIEWED';

/** A job's state in a list: a repair that did not improve delivered nothing new. */
function listedStatus(j: Job): string {
  if (j.retained_previous) return 'Not better: you keep the previous version';
  if (asksWhichOne(j)) return 'A question for you (refunded)';
  if (isPreview(j)) return 'The area, shown before drawing (refunded)';
  return statusText(j.status);
}

/**
 * An edit's address as a real link (open in a new tab, copy, middle-click), opened inside the
 * app on a plain click.
 */
export function JobLink(props: { id: string; onOpen: (id: string) => void; className?: string; children: ReactNode }) {
  return (
    <a
      href={pathOf({ page: 'edit', job: props.id })}
      className={props.className}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        props.onOpen(props.id);
      }}
    >
      {props.children}
    </a>
  );
}

/** An edit's small picture in a list (none once its images are gone). */
export function Thumb(props: { job: Job }) {
  return props.job.thumbnail_url ? (
    <img className="thumb" src={props.job.thumbnail_url} alt="" width={64} height={64} loading="lazy" />
  ) : <span className="thumb none" aria-hidden="true" />;
}

/** The caller's edits, newest first, a page at a time. */
export function History(props: { onOpen: (id: string) => void }) {
  const [items, setItems] = useState<Job[]>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | null>(null);
  const load = (c?: string) => {
    api.jobs(c).then((page) => {
      setItems((old) => (c ? [...old, ...page.items] : page.items));
      setCursor(page.next_cursor ?? undefined);
    }, (e: unknown) => setError(explain(e)));
  };
  useEffect(() => load(), []);
  return (
    <section aria-labelledby="hist">
      <h2 id="hist">Your edits</h2>
      {error && <p role="alert" className="error">{error}</p>}
      <ul className="history">
        {items.map((j) => (
          <li key={j.id}>
            <JobLink id={j.id} className="link entry" onOpen={props.onOpen}>
              <Thumb job={j} />
              <span>
                {j.operation === 'repair' ? 'Repair' : 'Edit'}: {j.settings.style.replace(/_/g, ' ')} on {j.settings.target} — <span data-testid="listed-status">{listedStatus(j)}</span>, {String(j.credits)} credits, {new Date(j.created_at).toLocaleString()}
              </span>
            </JobLink>
          </li>
        ))}
      </ul>
      {items.length === 0 && !error && <p>No edits yet.</p>}
      {cursor && <button type="button" onClick={() => load(cursor)}>Show more</button>}
    </section>
  );
}

type LedgerRow = LedgerPage['items'][number];

/** What a ledger row is, in a person's words. */
const KIND: Record<Schemas['LedgerKind'], string> = {
  grant: 'Credits from Atelier',
  debit: 'Paid for an edit',
  refund: 'Refunded',
  purchase: 'Bought credits',
  purchase_reversal: 'Purchase refunded by the payment provider',
  reversal_restored: 'Credits restored',
};

/** Why an edit was refunded: the failure code on the row (none: the edit was canceled). */
const REFUND_WHY: Partial<Record<Schemas['FailureCode'], string>> = {
  NEEDS_CLARIFICATION: 'we needed to know which one you meant',
  DAILY_LIMIT_REACHED: "the day's limit was reached",
  BUDGET_PAUSED: 'edits were paused',
  INVALID_IMAGE: 'the photo could not be read',
  TIMED_OUT: 'the edit took too long',
};

const CANCELED: Schemas['FailureCode'] = 'CANCELED';
const PREVIEWED: Schemas['FailureCode'] = 'PREVIEWED';

function rowText(r: LedgerRow): string {
  if (r.kind === 'grant' && r.reference === 'grant:signup') return 'Welcome credits';
  if (r.kind !== 'refund') return KIND[r.kind];
  if (!r.reason) return 'Refunded';
  // The person's own cancel is not a failure.
  if (r.reason === CANCELED) return 'Canceled by you: refunded';
  if (r.reason === PREVIEWED) return 'Area shown first: refunded';
  return `Refunded: ${REFUND_WHY[r.reason as Schemas['FailureCode']] ?? 'the edit could not be made'}`;
}

/** Ledger rows, newest first, a page at a time; a row of an edit opens it. */
export function Ledger(props: { onOpen: (id: string) => void }) {
  const [page, setPage] = useState<LedgerPage | null>(null);
  const [rows, setRows] = useState<LedgerPage['items']>([]);
  const [error, setError] = useState<string | null>(null);
  const load = (c?: string) => {
    api.ledger(c).then((p) => {
      setPage(p);
      setRows((old) => (c ? [...old, ...p.items] : p.items));
    }, (e: unknown) => setError(explain(e)));
  };
  useEffect(() => load(), []);
  return (
    <section aria-labelledby="ledger">
      <h2 id="ledger">Ledger</h2>
      {error && <p role="alert" className="error">{error}</p>}
      <table>
        <thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Credits</th></tr></thead>
        <tbody data-testid="ledger">
          {rows.map((r) => (
            <tr key={`${r.reference}-${r.kind}`}>
              <td>{new Date(r.created_at).toLocaleString()}</td>
              <td>
                {r.job_id ? (
                  <JobLink id={r.job_id} className="link" onOpen={props.onOpen}>{rowText(r)}</JobLink>
                ) : rowText(r)}
              </td>
              <td>{r.amount > 0 ? `+${String(r.amount)}` : String(r.amount)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page?.next_cursor && <button type="button" onClick={() => load(page.next_cursor ?? undefined)}>Show more</button>}
    </section>
  );
}
