// The edit form kept across the payment page: buying credits leaves the app (Stripe Checkout)
// and comes back to a new page, so the half-filled form — what to redraw, the medium, the
// strength, the description and the uploaded photo — is written to session storage before
// leaving and read back when the editor opens. The photo comes back as its upload's id (the
// API has the bytes) and a small copy to show; a painted area is not kept (paint it again).
import type { Strength, Style, Target } from './api/client';
import type { Photo } from './image';

const DRAFT = 'atelier.draft';
/** The long side of the copy shown after the return (session storage holds a few MB). */
const PREVIEW_SIDE = 1024;

export interface Draft {
  target: Target;
  style: Style['id'] | null;
  strength: Strength;
  description: string;
  originalId: string | null;
  photo: { width: number; height: number; url: string } | null;
}

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

/** Keeps the form, with a small JPEG copy of the photo to show again. */
export async function saveDraft(form: Omit<Draft, 'photo'>, photo: Photo | null): Promise<void> {
  let shown: Draft['photo'] = null;
  if (photo) {
    const scale = Math.min(1, PREVIEW_SIDE / Math.max(photo.width, photo.height));
    const bitmap = await createImageBitmap(photo.blob, { imageOrientation: 'from-image' });
    const canvas = document.createElement('canvas');
    canvas.width = Math.max(1, Math.round(photo.width * scale));
    canvas.height = Math.max(1, Math.round(photo.height * scale));
    canvas.getContext('2d')?.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
    bitmap.close();
    shown = { width: photo.width, height: photo.height, url: canvas.toDataURL('image/jpeg', 0.8) };
  }
  try {
    sessionStorage.setItem(DRAFT, JSON.stringify({ ...form, photo: shown }));
  } catch {
    // Storage full: keep the form without the photo's copy rather than nothing.
    sessionStorage.setItem(DRAFT, JSON.stringify({ ...form, photo: null, originalId: null }));
  }
}

/** The kept photo as the editor shows it (already uploaded: no bytes to send). */
export function draftPhoto(d: Draft | null): Photo | null {
  if (!d?.photo) return null;
  return { blob: new Blob(), width: d.photo.width, height: d.photo.height, url: d.photo.url, reducedFrom: null };
}
