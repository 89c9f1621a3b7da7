// The edit form kept across the payment page and a reload: buying credits leaves the app
// (Stripe Checkout) and comes back to a new page, and a reload starts one too, so the
// half-filled form — what to redraw, the medium, the strength, the description, the painted
// strokes and the uploaded photo — is written to session storage as it changes and read back
// when the editor opens. The photo comes back as its upload's id (the API has the bytes) and a
// small copy to show; the strokes as data at the photo's own size, so the mask is the same.
import type { Strength, Style, Target } from './api/client';
import type { Photo } from './image';
import type { Stroke } from './Brush';

const DRAFT = 'atelier.draft';
/** The long side of the copy shown after the return (session storage holds a few MB). */
const PREVIEW_SIDE = 1024;

export interface Draft {
  target: Target;
  style: Style['id'] | null;
  strength: Strength;
  description: string;
  originalId: string | null;
  strokes: Stroke[];
  photo: DraftPhoto | null;
}

type DraftPhoto = { width: number; height: number; url: string };

export function loadDraft(): Draft | null {
  const raw = sessionStorage.getItem(DRAFT);
  if (!raw) return null;
  try {
    return JSON.parse(raw) as Draft;
  } catch {
    return null;
  }
}

export function clearDraft(): void {
  sessionStorage.removeItem(DRAFT);
}

/** The small JPEG copy of the photo a draft keeps to show again. */
export async function photoCopy(photo: Photo): Promise<DraftPhoto> {
  // A photo that came back from a draft is that copy already.
  if (photo.url.startsWith('data:')) return { width: photo.width, height: photo.height, url: photo.url };
  const scale = Math.min(1, PREVIEW_SIDE / Math.max(photo.width, photo.height));
  const bitmap = await createImageBitmap(photo.blob, { imageOrientation: 'from-image' });
  const canvas = document.createElement('canvas');
  canvas.width = Math.max(1, Math.round(photo.width * scale));
  canvas.height = Math.max(1, Math.round(photo.height * scale));
  canvas.getContext('2d')?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  return { width: photo.width, height: photo.height, url: canvas.toDataURL('image/jpeg', 0.8) };
}

/** Keeps the form, with the photo's copy to show. */
export function saveDraft(form: Omit<Draft, 'photo'>, shown: DraftPhoto | null): void {
  try {
    sessionStorage.setItem(DRAFT, JSON.stringify({ ...form, photo: shown }));
  } catch {
    // Storage full: keep the form without the photo's copy rather than nothing.
    sessionStorage.setItem(DRAFT, JSON.stringify({ ...form, photo: null, originalId: null, strokes: [] }));
  }
}

/** The kept photo as the editor shows it (already uploaded: no bytes to send). */
export function draftPhoto(d: Draft | null): Photo | null {
  if (!d?.photo) return null;
  return { blob: new Blob(), width: d.photo.width, height: d.photo.height, url: d.photo.url, reducedFrom: null };
}
