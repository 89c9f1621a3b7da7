// The person's data on the Account page: download everything kept (the export), delete an
// edit's images or the photo it was made from, or delete the whole account. Every deletion
// asks twice — a second press for one edit, the typed word for the account — and then says
// what the API did.
import { useEffect, useState } from 'react';
import { ApiError, api, explain, type Job } from './api/client';
import { InlineError } from './InlineError';
import { exportArchive } from './exportArchive';
import { Thumb } from './Lists';

function save(name: string, bytes: Uint8Array, type: string): void {
  const url = URL.createObjectURL(new Blob([bytes as BlobPart], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => { URL.revokeObjectURL(url); }, 10_000);
}

export function YourData(props: { onAccountDeleted: () => void; onChange: () => void }) {
  return (
    <section aria-labelledby="data">
      <h2 id="data">Your photos and data</h2>
      <ExportButton />
      <EditImages onChange={props.onChange} />
      <DeleteAccount onDeleted={props.onAccountDeleted} />
    </section>
  );
}

function ExportButton() {
  const [state, setState] = useState<{ ok: string | null; error: string | null; busy: boolean }>({ ok: null, error: null, busy: false });
  const run = async () => {
    setState({ ok: null, error: null, busy: true });
    try {
      const a = await exportArchive();
      save('atelier-export.zip', a.zip, 'application/zip');
      const gaps = a.missing.length > 0 ? ` ${String(a.missing.length)} image(s) could not be fetched (listed in README.txt); download again to retry.` : '';
      setState({ ok: `Downloaded atelier-export.zip: ${String(a.edits)} edit(s), ${String(a.images)} image(s) and ${String(a.rows)} ledger row(s).${gaps}`, error: null, busy: false });
    } catch (e) {
      setState({ ok: null, error: explain(e), busy: false });
    }
  };
  return (
    <div>
      <h3>Download your data</h3>
      <p className="hint" id="export-what">One .zip: your account and every ledger row (data.json), each edit’s settings and review, the photos your edits started from and their results, with a README saying what each file is.</p>
      <button type="button" aria-describedby="export-what" disabled={state.busy} onClick={() => void run()}>{state.busy ? 'Preparing…' : 'Download my data'}</button>
      {state.ok && <p role="status" data-testid="export-done">{state.ok}</p>}
      <InlineError message={state.error} />
    </div>
  );
}

/** Each edit with its images, a page at a time: delete them, or the uploaded photo it was made from. */
function EditImages(props: { onChange: () => void }) {
  const [items, setItems] = useState<Job[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const load = (c?: string) => {
    api.jobs(c).then((p) => {
      const edits = p.items.filter((j) => j.operation === 'edit');
      setItems((old) => (c ? [...(old ?? []), ...edits] : edits));
      setCursor(p.next_cursor ?? null);
    }, (e: unknown) => { setError(explain(e)); });
  };
  useEffect(() => load(), []);
  const replace = (j: Job) => { setItems((old) => old?.map((o) => (o.id === j.id ? j : o)) ?? null); };
  return (
    <div>
      <h3>Edit images</h3>
      <InlineError message={error} />
      {items && items.length === 0 && !cursor && <p>No edits yet.</p>}
      <ul className="history" data-testid="edit-images">
        {(items ?? []).map((j) => <EditImagesRow key={j.id} job={j} onDeleted={(d) => { replace(d); props.onChange(); }} />)}
      </ul>
      {cursor && <button type="button" onClick={() => load(cursor)}>Show more</button>}
    </div>
  );
}

function EditImagesRow(props: { job: Job; onDeleted: (j: Job) => void }) {
  const j = props.job;
  const [armed, setArmed] = useState<'images' | 'photo' | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const what = `${j.settings.style.replace(/_/g, ' ')} on ${j.settings.target}, ${new Date(j.created_at).toLocaleString()}`;
  const press = async (kind: 'images' | 'photo') => {
    if (armed !== kind) { setArmed(kind); setError(null); return; }
    setArmed(null);
    try {
      if (kind === 'images') {
        props.onDeleted(await api.deleteEditImages(j.id));
        setDone('The images of this edit and its repairs, and the photo it was made from, are deleted. The ledger keeps what was paid.');
      } else {
        await api.deleteAsset(j.settings.original_asset_id);
        setDone('The uploaded photo is deleted. The edit keeps its own copy until you delete its images.');
      }
    } catch (e) {
      setError(e instanceof ApiError && e.status === 404 && kind === 'photo' ? 'That photo is already gone (uploads are kept for a day).' : explain(e));
    }
  };
  const gone = Boolean(j.images_deleted_at);
  return (
    <li data-testid={`data-${j.id}`}>
      <Thumb job={j} />
      <span>{what}{gone ? ' — images deleted' : ''}</span>{' '}
      {!gone && (
        <button type="button" className={armed === 'images' ? 'danger' : undefined} onClick={() => void press('images')}>
          {armed === 'images' ? 'Press again to delete its images' : 'Delete its images'}
        </button>
      )}{' '}
      {!gone && (
        <button type="button" className={armed === 'photo' ? 'danger' : undefined} onClick={() => void press('photo')}>
          {armed === 'photo' ? 'Press again to delete the photo' : 'Delete the uploaded photo'}
        </button>
      )}
      {done && <p role="status">{done}</p>}
      <InlineError message={error} />
    </li>
  );
}

const CONFIRM_WORD = 'DELETE';

function DeleteAccount(props: { onDeleted: () => void }) {
  const [typed, setTyped] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = async () => {
    setError(null);
    try {
      // `202`: closed, edits still processing; the same request finishes it later.
      for (;;) {
        const { deletion, retryAfter } = await api.deleteAccount();
        if (deletion.status === 'deleted') break;
        setBusy(`Closed. Waiting for ${String(deletion.processing)} edit(s) in progress to finish…`);
        await new Promise((r) => setTimeout(r, Math.min(retryAfter ?? 5, 10) * 1000));
      }
      props.onDeleted();
    } catch (e) {
      setBusy(null);
      setError(explain(e));
    }
  };
  return (
    <div>
      <h3>Delete your account</h3>
      <p>Every photo and image is deleted and queued edits are refunded. The ledger of credits bought, spent and refunded (dates, amounts, references; no photos, none of your words) is kept as the financial record a business must keep, and signing in again with this address shows only that the account was deleted. This cannot be undone.</p>
      <label>
        Type {CONFIRM_WORD} to confirm{' '}
        <input value={typed} onChange={(e) => { setTyped(e.target.value); }} autoComplete="off" />
      </label>{' '}
      <button type="button" className="danger" disabled={typed !== CONFIRM_WORD || busy !== null} onClick={() => { setBusy('Deleting…'); void run(); }}>
        Delete my account
      </button>
      {busy && <p role="status">{busy}</p>}
      <InlineError message={error} />
    </div>
  );
}
