import { useEffect, useState } from 'react';
import { api, explain, type Job, type LedgerPage } from './api/client';

const STATUS: Record<Job['status'], string> = {
  queued: 'Waiting to start',
  processing: 'Being made',
  succeeded: 'Delivered',
  failed: 'Failed (refunded)',
  canceled: 'Canceled (refunded)',
};
export const statusText = (s: Job['status']): string => STATUS[s];

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
            <button type="button" className="link" onClick={() => props.onOpen(j.id)}>
              {j.operation === 'repair' ? 'Repair' : 'Edit'}: {j.settings.style.replace(/_/g, ' ')} on {j.settings.target} — {statusText(j.status)}, {String(j.credits)} credits, {new Date(j.created_at).toLocaleString()}
            </button>
          </li>
        ))}
      </ul>
      {items.length === 0 && !error && <p>No edits yet.</p>}
      {cursor && <button type="button" onClick={() => load(cursor)}>Show more</button>}
    </section>
  );
}

/** Ledger rows, newest first, a page at a time. */
export function Ledger() {
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
              <td>{r.kind.replace(/_/g, ' ')}{r.reason ? ` (${r.reason})` : ''}</td>
              <td>{r.amount > 0 ? `+${String(r.amount)}` : String(r.amount)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {page?.next_cursor && <button type="button" onClick={() => load(page.next_cursor ?? undefined)}>Show more</button>}
    </section>
  );
}
