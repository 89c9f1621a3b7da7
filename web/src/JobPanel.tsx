import { useCallback, useEffect, useRef, useState } from 'react';
import { api, explain, type Job, type Schemas } from './api/client';
import { InlineError } from './InlineError';
import { LimitNote, TEXT_LIMITS, overLimit } from './TextLimit';
import { sendPending } from './Editor';
import { asksWhichOne, isPreview, statusText } from './Lists';
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

  // Focus moves to the job's status once it is shown (after a submit, or opened from a list),
  // so a keyboard or screen-reader user is where the news is.
  const status = useRef<HTMLParagraphElement>(null);
  const shown = job !== null;
  useEffect(() => {
    if (shown) status.current?.focus();
  }, [shown, id]);

  if (!job) return <p role="status">Loading…</p>;
  return (
    <section aria-labelledby="job" className="job">
      <h2 id="job">{job.operation === 'repair' ? 'Repair' : 'Edit'}: {job.settings.style.replace(/_/g, ' ')} on {job.settings.target}</h2>
      <p role="status" data-testid="status" data-status={job.status} tabIndex={-1} ref={status}>{asksWhichOne(job) ? 'A question before drawing' : isPreview(job) ? 'The area, before drawing' : statusText(job.status)}{job.status === 'queued' || job.status === 'processing' ? '…' : '.'} {String(job.credits)} credits.</p>
      {job.stage && <Progress stage={job.stage} usualSecs={job.usual_secs} />}
      {job.status === 'queued' && (
        <button type="button" onClick={() => { void api.cancel(job.id).then(setJob, onError); }}>Cancel and refund</button>
      )}
      {job.failure && <Failure job={job} onOpen={open} onError={onError} />}
      <ImagesGone job={job} />
      {job.result && <Result job={job} />}
      {job.result?.candidate_url && <Candidate job={job} onAdopted={(j) => { setError(null); setJob(j); }} onError={onError} />}
      {job.status === 'succeeded' && !job.images_deleted_at && !job.images_expired_at && <Repair job={job} onOpen={open} onError={onError} />}
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
          <p data-testid="repairs-left">{repairsLeft(job.lineage)}</p>
        </section>
      )}
      <button type="button" onClick={props.onClose}>New edit</button>
    </section>
  );
}

/** How many repairs are left, and why none when none. */
function repairsLeft(l: NonNullable<Job['lineage']>): string {
  if (l.repairs_stopped) return 'No more repairs on this edit: a repair was not judged better than the version you kept (you can still choose its version, free).';
  if (l.repairs_left === 0) return `No repairs left: this edit has had ${String(l.repairs_used)}, the most an edit can have.`;
  return l.repairs_left === 1 ? '1 repair left.' : `${String(l.repairs_left)} repairs left.`;
}

/** An edit whose images were deleted or expired: said with the date, and nothing offered on them. */
function ImagesGone(props: { job: Job }) {
  const { images_deleted_at: deleted, images_expired_at: expired } = props.job;
  const at = deleted ?? expired;
  if (!at) return null;
  return (
    <p data-testid="images-gone">
      {deleted ? 'Images deleted' : 'Images expired'} on {new Date(at).toLocaleString()}. The ledger keeps what was paid; there is nothing left to show or repair.
    </p>
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
      {f.code === 'PREVIEWED' && <PreviewedArea job={props.job} onOpen={props.onOpen} onError={props.onError} />}
      {f.code === 'NEEDS_CLARIFICATION' && (
        <form onSubmit={(e) => { e.preventDefault(); resubmit(); }} aria-labelledby="question">
          <h3 id="question">Which one did you mean?</h3>
          <ul>{f.questions?.map((q) => <li key={q}>{q}</li>)}</ul>
          <PickOnPhoto failure={f} chosen={answer} onPick={setAnswer} />
          <p className="hint">{f.candidates?.length && f.photo_url ? 'Tap one on the photo or answer in words' : 'Answer'}, then send it again at the same price.</p>
          <label htmlFor="answer">Your answer</label>
          <input id="answer" required aria-describedby="answer-count" aria-invalid={overLimit(answer, TEXT_LIMITS.description)} value={answer} onChange={(e) => setAnswer(e.target.value)} />
          <LimitNote id="answer-count" text={answer} limit={TEXT_LIMITS.description} />
          <button type="submit" disabled={overLimit(answer, TEXT_LIMITS.description)}>Try again with this answer</button>
        </form>
      )}
    </div>
  );
}

/**
 * A preview's answer: the area the checker would redraw, outlined on the photo, and the edit
 * itself one press away (the same settings; it draws this very area, without a second look).
 */
function PreviewedArea(props: { job: Job; onOpen: (id: string) => void; onError: (e: unknown) => void }) {
  const f = props.job.failure;
  const area = f?.candidates?.[0]?.area;
  const draw = () => {
    const s = props.job.settings;
    begin('edit', {
      style: s.style, target: s.target, strength: s.strength, original_asset_id: s.original_asset_id,
      ...(s.target_description ? { target_description: s.target_description } : {}),
    });
    sendPending(props.onOpen).catch(props.onError);
  };
  return (
    <div data-testid="previewed">
      <h3>The area that would be redrawn</h3>
      {area && f.photo_url ? (
        <div className="pick">
          <img src={f.photo_url} alt={`Your photo, with the area the checker would redraw outlined around the ${props.job.settings.target}`} />
          <AreaOverlay area={area} />
        </div>
      ) : (
        <p>The checker found the {props.job.settings.target} but drew no box around it{props.job.settings.target === 'background' ? ': the background is everything around your subject' : ''}.</p>
      )}
      <p className="hint">If this is not the part you mean, start a new edit and say which one.</p>
      <button type="button" onClick={draw}>Draw it — {String(props.job.credits)} credits</button>
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
      {r.content_credentials && <Credentials credentials={r.content_credentials} />}
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

/**
 * The result's content credentials (C2PA), as the API reads them: the "Edited with AI" label
 * and one sentence saying what changed, with which model, when and who signed it. The words are
 * the server's; the downloaded files carry the signed manifest itself.
 */
function Credentials(props: { credentials: NonNullable<NonNullable<Job['result']>['content_credentials']> }) {
  const c = props.credentials;
  return (
    <p className="credentials" data-testid="credentials">
      <strong className="ai-label">{c.label}</strong> {c.summary}
    </p>
  );
}

/** What leakage was measured outside: the painted area exactly, or the checker's box. */
function outside(basis: string, target: string): string {
  return basis === 'region' ? `the box the checker drew around the ${target}` : 'the area you painted';
}

/** The readiness check's box around the target, drawn over the photo (thousandths of each side). */
/**
 * The subjects the checker could mean, outlined on the photo: tapping one puts its words in the
 * answer (sending stays a separate press, so a stray tap spends nothing).
 */
function PickOnPhoto(props: { failure: NonNullable<Job['failure']>; chosen: string; onPick: (label: string) => void }) {
  const { candidates, photo_url: photo } = props.failure;
  if (!candidates?.length || !photo) return null;
  const pct = (v: number) => `${String(v / 10)}%`;
  return (
    <div className="pick" role="group" aria-label="The subjects found on your photo">
      <img src={photo} alt="Your photo, with each subject the checker found outlined" />
      {candidates.map((c) => (
        <button key={c.label} type="button" className="pick-box" aria-pressed={props.chosen === c.label}
          style={{ left: pct(c.area.x0), top: pct(c.area.y0), width: pct(c.area.x1 - c.area.x0), height: pct(c.area.y1 - c.area.y0) }}
          onClick={() => { props.onPick(c.label); }}>
          <span>{c.label}</span>
        </button>
      ))}
    </div>
  );
}

function AreaOverlay(props: { area: NonNullable<NonNullable<Job['result']>['area']> }) {
  const a = props.area;
  const pct = (v: number) => `${String(v / 10)}%`;
  return (
    <div className="area" data-testid="area" aria-hidden="true"
      style={{ left: pct(a.x0), top: pct(a.y0), width: pct(a.x1 - a.x0), height: pct(a.y1 - a.y0) }} />
  );
}

/** Why the version before a repair was kept, by the comparison's outcome. */
const WHY_KEPT: Record<Schemas['ComparisonOutcome'], string> = {
  worse: 'The reviewer found the repair worse than the version you had.',
  unchanged: 'The reviewer found the repair not clearly better than the version you had.',
  improved: 'The reviewer found the repair better.',
  not_verified: 'The repair could not be compared with the version you had.',
};

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
      <p data-testid="why-kept">{WHY_KEPT[r.comparison?.outcome ?? 'not_verified']} You may still prefer the repair: choosing it is free.</p>
      {r.comparison?.notes && <p className="hint">The reviewer&apos;s note: {r.comparison.notes}</p>}
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
      <input id="instruction" required aria-describedby="instruction-count" aria-invalid={overLimit(instruction, TEXT_LIMITS.instruction)} value={instruction} onChange={(e) => setInstruction(e.target.value)} />
      <LimitNote id="instruction-count" text={instruction} limit={TEXT_LIMITS.instruction} />
      <button type="submit" disabled={overLimit(instruction, TEXT_LIMITS.instruction)}>Repair</button>
    </form>
  );
}
