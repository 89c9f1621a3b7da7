import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, api, explain, type EditRequest, type Quote, type Strength, type Style, type Target } from './api/client';
import { Brush, type BrushHandle, type Stroke } from './Brush';
import { BuyCredits } from './BuyCredits';
import { InlineError } from './InlineError';
import { preparePhoto, type Photo } from './image';
import { begin, finish, pending } from './submit';
import { clearDraft, draftPhoto, loadDraft, photoCopy, saveDraft, type Draft } from './draft';
import { LimitNote, TEXT_LIMITS, overLimit } from './TextLimit';

const TARGETS: { id: Target; label: string }[] = [
  { id: 'pet', label: 'A pet' },
  { id: 'person', label: 'A person' },
  { id: 'background', label: 'The background' },
  { id: 'brush', label: 'An area I paint' },
];

/**
 * Sends a paid request saved in session storage and opens its job; a 4xx means nothing was
 * charged. The job's address is taken before the request is forgotten: a reload between the
 * two resends the same key (a replay, no second charge) instead of losing the job.
 */
export async function sendPending(open: (id: string) => void): Promise<string | null> {
  const p = pending();
  if (!p) return null;
  try {
    const job = p.kind === 'edit' ? await api.submit(p.body as EditRequest, p.key) : await api.repair(p.parent ?? '', (p.body as { instruction: string }).instruction, p.key);
    open(job.id);
    finish();
    return job.id;
  } catch (e) {
    if (refusesTheBody(e)) finish();
    throw e;
  }
}

/**
 * Whether an answer refuses the request itself, so that no copy of it under this key can have
 * charged. Not so for a missing sign-in (401), a timeout (408), a rate limit (429), a server
 * error or no answer: an earlier copy may still be on its way, so the key is kept.
 */
function refusesTheBody(e: unknown): boolean {
  return e instanceof ApiError && e.status >= 400 && e.status < 500 && ![401, 408, 429].includes(e.status);
}

/** `sendPending` after a reload, tried again a few times while it fails for a passing reason. */
async function resumePending(open: (id: string) => void): Promise<string | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await sendPending(open);
    } catch (e) {
      if (attempt >= 3 || !pending()) throw e;
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }
}

export function Editor(props: { onSubmitted: (id: string) => void; balance: number | null; description?: string }) {
  const { onSubmitted } = props;
  // Errors show beside the button that caused them; the next success clears them.
  const [error, setError] = useState<string | null>(null);
  const [refused402, setRefused402] = useState(false);
  const onError = useCallback((e: unknown) => {
    setError(explain(e));
    setRefused402(e instanceof ApiError && e.status === 402);
  }, []);
  const [styles, setStyles] = useState<Style[]>([]);
  // A form kept across the payment page comes back as it was (src/draft.ts).
  const [draft] = useState(loadDraft);
  const [photo, setPhoto] = useState<Photo | null>(() => draftPhoto(draft));
  const [originalId, setOriginalId] = useState<string | null>(draft?.originalId ?? null);
  const [target, setTarget] = useState<Target>(draft?.target ?? 'pet');
  const [style, setStyle] = useState<Style['id'] | null>(draft?.style ?? null);
  const [strength, setStrength] = useState<Strength>(draft?.strength ?? 'balanced');
  const [description, setDescription] = useState(props.description ?? draft?.description ?? '');
  const [strokes, setStrokes] = useState<Stroke[]>(draft?.strokes ?? []);
  const [brush, setBrush] = useState<BrushHandle | null>(null);
  // Each answer remembers what it answers, so a stale one is never shown.
  const [mask, setMask] = useState<{ for: BrushHandle; id: string } | null>(null);
  const maskId = target === 'brush' && brush && mask?.for === brush ? mask.id : null;
  const [quoted, setQuoted] = useState<{ for: string; quote: Quote } | null>(null);
  const [busy, setBusy] = useState<string | null>(() => (pending() ? 'Resuming your submitted edit…' : null));
  const sending = useRef(false);
  const started = useRef(false);

  useEffect(() => {
    if (started.current) return;
    started.current = true;
    api.styles().then(setStyles, onError);
    // A paid request saved before a reload: send it again with its key (same job, one charge).
    if (pending()) {
      resumePending((id) => { clearDraft(); onSubmitted(id); }).catch(onError).finally(() => setBusy(null));
    }
  }, [onError, onSubmitted]);

  // The brushed area is uploaded once the painting pauses, so the quote and submit can name it.
  useEffect(() => {
    if (target !== 'brush' || !brush) return;
    const t = setTimeout(() => {
      brush.exportMask().then((m) => api.upload('mask', m)).then((id) => { setMask({ for: brush, id }); }, onError);
    }, 600);
    return () => clearTimeout(t);
  }, [brush, target, onError]);

  const request = useCallback((): EditRequest | null => {
    if (!originalId || !style) return null;
    if (target === 'brush' && !maskId) return null;
    const req: EditRequest = { style, target, strength, original_asset_id: originalId };
    if (target === 'brush' && maskId) req.mask_asset_id = maskId;
    if ((target === 'pet' || target === 'person') && description.trim()) req.target_description = description.trim();
    return req;
  }, [originalId, style, target, strength, maskId, description]);

  const current = request();
  const currentKey = current ? JSON.stringify(current) : null;
  const quote = quoted && quoted.for === currentKey ? quoted.quote : null;
  useEffect(() => {
    if (!currentKey) return;
    api.quote(JSON.parse(currentKey) as EditRequest).then((q) => { setQuoted({ for: currentKey, quote: q }); }, onError);
  }, [currentKey, onError]);

  const [dragging, setDragging] = useState(false);
  const keepDraft = useKeptDraft({ target, style, strength, description, originalId, strokes }, photo);

  const choosePhoto = async (file: File | undefined) => {
    if (!file) return;
    setBusy('Preparing your photo…');
    try {
      setPhoto(null);
      setOriginalId(null);
      setStrokes([]);
      const p = await preparePhoto(file);
      setPhoto(p);
      const id = await api.upload('original', p.blob);
      setOriginalId(id);
      setError(null);
    } catch (e) {
      onError(e);
    } finally {
      setBusy(null);
    }
  };

  usePastedPhoto((f) => void choosePhoto(f));

  // A preview (the area first, refunded) keeps the form: the person may change it after looking.
  const submit = async (preview: boolean) => {
    const req = request();
    if (!req || sending.current) return;
    sending.current = true;
    begin('edit', preview ? { ...req, preview: true } : req);
    setBusy(preview ? 'Asking where the area is…' : 'Submitting…');
    try {
      await sendPending((id) => {
        if (!preview) clearDraft();
        onSubmitted(id);
      });
    } catch (e) {
      onError(e);
    } finally {
      sending.current = false;
      setBusy(null);
    }
  };

  const short = quote && props.balance !== null ? quote.credits - props.balance : 0;
  const tooLong = (target === 'pet' || target === 'person') && overLimit(description, TEXT_LIMITS.description);
  const ready = current !== null && quote !== null && short <= 0 && !tooLong;
  return (
    <form className="editor" onSubmit={(e) => { e.preventDefault(); void submit(false); }} aria-busy={busy !== null}>
      <h2>New edit</h2>
      <fieldset
        className={dragging ? 'drop dragging' : 'drop'}
        data-testid="drop-zone"
        onDragOver={(e) => { e.preventDefault(); setDragging(true); }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => { e.preventDefault(); setDragging(false); void choosePhoto(imageIn(e.dataTransfer)); }}
      >
        <legend>1. Your photo</legend>
        <p className="hint">Drop a photo here or paste one (Ctrl+V).</p>
        <label htmlFor="photo">Choose a photo (PNG, JPEG or WebP)</label>
        <input id="photo" type="file" accept="image/png,image/jpeg,image/webp" onChange={(e) => void choosePhoto(e.target.files?.[0])} />
        {photo && target !== 'brush' && <img className="preview" src={photo.url} alt="Your photo" data-testid="preview" />}
        {photo?.reducedFrom && (
          <p className="hint" data-testid="reduced">
            Your photo is {String(photo.reducedFrom.width)} × {String(photo.reducedFrom.height)} pixels, over the 40-megapixel limit, so it was reduced; the result will be this size.
          </p>
        )}
        {photo && <p className="hint">{String(photo.width)} × {String(photo.height)} pixels{originalId ? ', uploaded' : ', uploading…'}</p>}
      </fieldset>
      <fieldset>
        <legend>2. What to redraw</legend>
        <div className="choices">
          {TARGETS.map((t) => (
            <label key={t.id}>
              <input type="radio" name="target" value={t.id} checked={target === t.id} onChange={() => setTarget(t.id)} /> {t.label}
            </label>
          ))}
        </div>
        {(target === 'pet' || target === 'person') && (
          <>
            <label htmlFor="description">Which one? (optional; needed when there are several)</label>
            <input id="description" aria-describedby="description-count" aria-invalid={tooLong} value={description} onChange={(e) => setDescription(e.target.value)} placeholder="e.g. the grey cat on the left" />
            <LimitNote id="description-count" text={description} limit={TEXT_LIMITS.description} />
          </>
        )}
        {target === 'brush' && photo && (
          <Brush key={photo.url} photoUrl={photo.url} width={photo.width} height={photo.height} initial={strokes} onReady={setBrush} onStrokes={setStrokes} />
        )}
        {target === 'brush' && !photo && <p className="hint">Choose a photo first, then paint the area.</p>}
      </fieldset>
      <fieldset>
        <legend>3. The medium</legend>
        <div className="gallery">
          {styles.map((s) => (
            <label key={s.id} className={style === s.id ? 'medium chosen' : 'medium'}>
              <input type="radio" name="style" value={s.id} checked={style === s.id} onChange={() => setStyle(s.id)} />
              <span className={`swatch s-${s.id}`} aria-hidden="true" style={{ backgroundColor: `rgb(${s.swatch.join(',')})` }} />
              <strong>{s.name}</strong>
              <span className="blurb">{s.blurb}</span>
            </label>
          ))}
        </div>
        <label htmlFor="strength">Strength</label>
        <select id="strength" value={strength} onChange={(e) => setStrength(e.target.value as Strength)}>
          <option value="subtle">Subtle</option>
          <option value="balanced">Balanced</option>
          <option value="strong">Strong</option>
        </select>
      </fieldset>
      <p className="price" aria-live="polite" data-testid="price">
        {quote ? `Price: ${String(quote.credits)} credits` : 'Choose a photo, what to redraw and a medium to see the price.'}
      </p>
      {busy && <p role="status">{busy}</p>}
      {short > 0 && <p className="short" data-testid="short">You need {String(short)} more credit{short === 1 ? '' : 's'} for this edit.</p>}
      <button type="submit" disabled={!ready || busy !== null}>Make it{quote ? ` — ${String(quote.credits)} credits` : ''}</button>
      {target !== 'brush' && (
        <p className="hint">
          <button type="button" className="link" disabled={!ready || busy !== null} onClick={() => void submit(true)}>Show me the area first</button>
          {' '}— free: the checker outlines what it would redraw and nothing is drawn (the price is held for a few seconds and given back; 10 a day).
        </p>
      )}
      <InlineError message={error} />
      {(short > 0 || refused402) && (
        <BuyCredits onError={setError} beforeLeaving={keepDraft} />
      )}
    </form>
  );
}

type Form = Omit<Draft, 'photo'>;

/**
 * Keeps the form in session storage as it changes (a moment after the last change), so a
 * reload or the payment page loses nothing; returns the immediate save, for leaving the page.
 * The photo's small copy is made once per photo.
 */
function useKeptDraft(form: Form, photo: Photo | null): () => Promise<void> {
  const copied = useRef<{ for: Photo; shown: Awaited<ReturnType<typeof photoCopy>> } | null>(null);
  const keep = useCallback(async (alive: () => boolean) => {
    if (photo && copied.current?.for !== photo) copied.current = { for: photo, shown: await photoCopy(photo) };
    // A submit may have cleared the draft while the copy was made: keep nothing then.
    if (alive()) saveDraft(form, photo ? (copied.current?.shown ?? null) : null);
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the form's fields, not its object
  }, [photo, form.target, form.style, form.strength, form.description, form.originalId, form.strokes]);
  useEffect(() => {
    let alive = true;
    const t = setTimeout(() => { void keep(() => alive); }, 300);
    return () => { alive = false; clearTimeout(t); };
  }, [keep]);
  return useCallback(() => keep(() => true), [keep]);
}

/** The first image among dropped or pasted items. */
function imageIn(data: DataTransfer | null): File | undefined {
  return Array.from(data?.files ?? []).find((f) => f.type.startsWith('image/'));
}

/**
 * A photo pasted anywhere on the editor's page is the photo; a file dropped outside the drop
 * zone is refused instead of opening in the tab (which would lose the form).
 */
function usePastedPhoto(choose: (f: File) => void): void {
  useEffect(() => {
    const paste = (e: ClipboardEvent) => {
      const f = imageIn(e.clipboardData);
      if (!f) return;
      e.preventDefault();
      choose(f);
    };
    const refuse = (e: DragEvent) => { e.preventDefault(); };
    window.addEventListener('paste', paste);
    window.addEventListener('dragover', refuse);
    window.addEventListener('drop', refuse);
    return () => {
      window.removeEventListener('paste', paste);
      window.removeEventListener('dragover', refuse);
      window.removeEventListener('drop', refuse);
    };
  }, [choose]);
}
