import { useCallback, useEffect, useState } from 'react';
import { api, explain, type Job } from './api/client';
import { InlineError } from './InlineError';
import { sendPending } from './Editor';
import { statusText } from './Lists';
import { begin } from './submit';

const VERDICT = {
  passed: 'Checked: the part you chose reads as the medium and the rest still looks like your photo.',
  failed: 'The check found a problem with this result. You can ask for a repair.',
  not_verified: 'This result could not be checked automatically. Look it over before you use it.',
} as const;

/** How long before its presigned links expire a settled job is read again, and the bounds. */
const LINK_MARGIN_MS = 30_000;
const LINK_REREAD_MIN_MS = 60_000;
const LINK_REREAD_MAX_MS = 300_000;

/** One job: its state while it runs, then the result, or why it failed and what to do. */
export function JobPanel(props: { id: string; onClose: () => void; onChange: () => void; onOpen: (id: string) => void }) {
  const { id, onChange } = props;
  const [job, setJob] = useState<Job | null>(null);
  // Shown under the panel's actions (cancel, answer, repair), where the person pressed.
  const [error, setError] = useState<string | null>(null);
  const onError = useCallback((e: unknown) => { setError(explain(e)); }, []);
  const open = useCallback((next: string) => { setError(null); props.onOpen(next); }, [props]);
  useEffect(() => {
    // A long-poll: each read after the first waits on the server until the job changes.
    let stop = false;
    let etag: string | null = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const abort = new AbortController();
    const poll = () => {
      api.watch(id, etag, abort.signal).then((r) => {
        if (stop) return;
        if (r === null) {
          poll();
          return;
        }
        setJob(r.job);
        etag = r.etag;
        if (r.job.status !== 'queued' && r.job.status !== 'processing') {
          if (!settled) onChange();
          settled = true;
          // Presigned links expire (10 min by default): read the job again 30 s before, so a
          // result left open still downloads. The expiry is the server's clock, this is the
          // device's: within [1 min, 5 min] a skewed clock neither spins nor lets links die.
          const expires = r.job.result ? Date.parse(r.job.result.url_expires_at) : NaN;
          if (Number.isFinite(expires)) {
            etag = null;
            const due = expires - Date.now() - LINK_MARGIN_MS;
            timer = setTimeout(poll, Math.min(LINK_REREAD_MAX_MS, Math.max(LINK_REREAD_MIN_MS, due)));
          }
        }
        // Without a tag there is nothing to wait on: ask again in a second.
        else if (etag === null) timer = setTimeout(poll, 1000);
        else poll();
      }, (e: unknown) => {
        if (!stop) onError(e);
      });
    };
    poll();
    return () => {
      stop = true;
      clearTimeout(timer);
      abort.abort();
    };
  }, [id, onChange, onError]);

  if (!job) return <p role="status">Loading…</p>;
  return (
    <section aria-labelledby="job" className="job">
      <h2 id="job">{job.operation === 'repair' ? 'Repair' : 'Edit'}: {job.settings.style.replace(/_/g, ' ')} on {job.settings.target}</h2>
      <p role="status" data-testid="status" data-status={job.status}>{statusText(job.status)}{job.status === 'queued' || job.status === 'processing' ? '…' : '.'} {String(job.credits)} credits.</p>
      {job.stage && <Progress stage={job.stage} usualSecs={job.usual_secs} />}
      {job.status === 'queued' && (
        <button type="button" onClick={() => { void api.cancel(job.id).then(setJob, onError).finally(onChange); }}>Cancel and refund</button>
      )}
      {job.failure && <Failure job={job} onOpen={open} onError={onError} />}
      {job.result && <Result job={job} />}
      {job.result?.candidate_url && <Candidate job={job} onAdopted={(j) => { setError(null); setJob(j); onChange(); }} onError={onError} />}
      {job.status === 'succeeded' && <Repair job={job} onOpen={open} onError={onError} />}
      <InlineError message={error} />
      {job.lineage && (
        <section aria-labelledby="versions">
          <h3 id="versions">Versions</h3>
          <ol>
            {job.lineage.versions.map((v) => (
              <li key={v.job_id}>
                <button type="button" className="link" onClick={() => props.onOpen(v.job_id)}>
                  {v.operation === 'repair' ? `Repair "${v.instruction ?? ''}"` : 'Original edit'} — {statusText(v.status)}{v.current ? ' (the one you keep)' : ''}
                </button>
              </li>
            ))}
          </ol>
          <p>{String(job.lineage.repairs_left)} repair(s) left.</p>
        </section>
      )}
      <button type="button" onClick={props.onClose}>New edit</button>
    </section>
  );
}

const STAGES = [
  ['queued', 'Waiting its turn'],
  ['looking', 'Looking at your photo'],
  ['drawing', 'Drawing'],
  ['checking', 'Checking the result'],
] as const;

/** Where a running job is (as the consumer last recorded it), and how long edits usually take. */
function Progress(props: { stage: NonNullable<Job['stage']>; usualSecs?: number | null }) {
  const at = STAGES.findIndex(([s]) => s === props.stage);
  return (
    <div className="progress" data-testid="progress" data-stage={props.stage}>
      <ol>
        {STAGES.map(([s, words], i) => (
          <li key={s} className={i < at ? 'done' : i === at ? 'now' : 'later'} aria-current={i === at ? 'step' : undefined}>{words}</li>
        ))}
      </ol>
      {props.usualSecs != null && <p data-testid="usual">Your edits usually take about {String(props.usualSecs)} s.</p>}
    </div>
  );
}

function Failure(props: { job: Job; onOpen: (id: string) => void; onError: (e: unknown) => void }) {
  const f = props.job.failure;
  const [answer, setAnswer] = useState('');
  if (!f) return null;
  const resubmit = () => {
    const s = props.job.settings;
    begin('edit', {
      style: s.style, target: s.target, strength: s.strength, original_asset_id: s.original_asset_id,
      ...(s.mask_asset_id ? { mask_asset_id: s.mask_asset_id } : {}),
      target_description: answer.trim(),
    });
    sendPending(props.onOpen).catch(props.onError);
  };
  return (
    <div className="failure">
      <p>{f.message} <strong>Refunded {String(props.job.credits)} credits.</strong></p>
      {f.code === 'NEEDS_CLARIFICATION' && (
        <form onSubmit={(e) => { e.preventDefault(); resubmit(); }}>
          <ul>{f.questions?.map((q) => <li key={q}>{q}</li>)}</ul>
          <label htmlFor="answer">Your answer</label>
          <input id="answer" required maxLength={200} value={answer} onChange={(e) => setAnswer(e.target.value)} />
          <button type="submit">Try again with this answer</button>
        </form>
      )}
    </div>
  );
}

function Result(props: { job: Job }) {
  const r = props.job.result;
  const [split, setSplit] = useState(50);
  const [showArea, setShowArea] = useState(true);
  if (!r) return null;
  const leak = r.leakage;
  const url = r.url;
  return (
    <div className="result">
      <div className="compare" style={{ aspectRatio: `${String(r.width)} / ${String(r.height)}` }}>
        <img src={url} alt="The result" data-testid="result" />
        <BeforeImage job={props.job} split={split} />
        {r.area && showArea && <AreaOverlay area={r.area} />}
      </div>
      {r.area && (
        <label>
          <input type="checkbox" checked={showArea} onChange={(e) => setShowArea(e.target.checked)} />
          {' '}Show the area the checker found around the {props.job.settings.target}
        </label>
      )}
      <label htmlFor="split">Compare before and after</label>
      <input id="split" type="range" min={0} max={100} value={split} onChange={(e) => setSplit(Number(e.target.value))} />
      <p>{VERDICT[r.review.verdict]}</p>
      {leak && (
        <p data-testid="leakage">
          {leak.changed_outside === 0
            ? `Nothing outside ${outside(leak.basis, props.job.settings.target)} changed.`
            : `${(leak.ratio_ppm / 10000).toFixed(2)}% of the photo outside ${outside(leak.basis, props.job.settings.target)} changed.`}
        </p>
      )}
      {r.adopted_at && <p data-testid="adopted">You chose this repair&apos;s version over the one the comparison preferred.</p>}
      <a href={url} download={`atelier-${props.job.id}.${r.format === 'png' ? 'png' : 'jpg'}`}>Download</a>
      {r.format !== 'png' && <LosslessDownload id={props.job.id} />}
    </div>
  );
}

/** What leakage was measured outside: the painted area exactly, or the checker's box. */
function outside(basis: string, target: string): string {
  return basis === 'region' ? `the box the checker drew around the ${target}` : 'the area you painted';
}

/** The readiness check's box around the target, drawn over the photo (thousandths of each side). */
function AreaOverlay(props: { area: NonNullable<NonNullable<Job['result']>['area']> }) {
  const a = props.area;
  const pct = (v: number) => `${String(v / 10)}%`;
  return (
    <div className="area" data-testid="area" aria-hidden="true"
      style={{ left: pct(a.x0), top: pct(a.y0), width: pct(a.x1 - a.x0), height: pct(a.y1 - a.y0) }} />
  );
}

/**
 * A repair the comparison judged no better: the version kept and the candidate the model drew,
 * side by side, and a free "Use this one" that makes the candidate the version the person keeps.
 */
function Candidate(props: { job: Job; onAdopted: (j: Job) => void; onError: (e: unknown) => void }) {
  const r = props.job.result;
  const [busy, setBusy] = useState(false);
  if (!r?.candidate_url || !r.retained_previous) return null;
  const adopt = () => {
    setBusy(true);
    api.adopt(props.job.id).then(props.onAdopted, props.onError).finally(() => setBusy(false));
  };
  return (
    <section aria-labelledby="candidate" className="candidate">
      <h3 id="candidate">This repair was not judged better, so you keep the previous version</h3>
      <p>{r.comparison?.notes} You may still prefer the repair: choosing it is free.</p>
      <div className="side-by-side">
        <figure>
          <img src={r.url} alt="The version you keep" data-testid="kept" />
          <figcaption>The version you keep</figcaption>
        </figure>
        <figure>
          <img src={r.candidate_url} alt="The repair's version" data-testid="candidate" />
          <figcaption>The repair&apos;s version</figcaption>
          <button type="button" disabled={busy} onClick={adopt}>Use this one</button>
        </figure>
      </div>
    </section>
  );
}

/** The lossless master (a larger file), fetched only when asked for: its link is short-lived. */
function LosslessDownload(props: { id: string }) {
  const [failed, setFailed] = useState(false);
  const fetchMaster = () => {
    api.job(props.id, 'png').then((j) => {
      if (!j.result) return;
      const a = document.createElement('a');
      a.href = j.result.url;
      a.download = `atelier-${props.id}.png`;
      a.click();
    }, () => setFailed(true));
  };
  return (
    <>
      <button type="button" onClick={fetchMaster}>Download lossless (PNG, larger)</button>
      {failed && <p role="alert">The lossless file could not be fetched. Try again.</p>}
    </>
  );
}

/** The photo the edit started from: the job's kept copy, so the compare survives a reload. */
function BeforeImage(props: { job: Job; split: number }) {
  const before = props.job.result?.original_url;
  if (!before) return null;
  return <img className="before" src={before} alt="Before" style={{ clipPath: `inset(0 ${String(100 - props.split)}% 0 0)` }} />;
}

function Repair(props: { job: Job; onOpen: (id: string) => void; onError: (e: unknown) => void }) {
  const [instruction, setInstruction] = useState('');
  const root = props.job.repair?.parent_job_id ?? props.job.id;
  const left = props.job.lineage?.repairs_left;
  if (left === 0) return null;
  return (
    <form onSubmit={(e) => {
      e.preventDefault();
      begin('repair', { instruction: instruction.trim() }, root);
      sendPending(props.onOpen).catch(props.onError);
    }}>
      <label htmlFor="instruction">Not quite right? Say what to improve (costs the same as the edit)</label>
      <input id="instruction" required maxLength={300} value={instruction} onChange={(e) => setInstruction(e.target.value)} />
      <button type="submit">Repair</button>
    </form>
  );
}
