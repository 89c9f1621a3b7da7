// Photos in the browser: sent as chosen when the API takes them as they are (it applies the
// file's orientation itself), else decoded with the orientation applied and reduced to the
// API's limits; masks exported the way the API reads them (an opaque PNG the photo's size,
// white = may change, black = keep; `shared/src/domain/imaging/mask.rs`, `mask_from_png`).

/** `DecodeLimits::PHOTO`: at most 8192 px a side and 40 megapixels. */
export const MAX_SIDE = 8192;
export const MAX_PIXELS = 40_000_000;
/** `AssetKind::Original::max_bytes`. */
export const MAX_ORIGINAL_BYTES = 20 * 1024 * 1024;
/** The types uploads accept. */
export const PHOTO_TYPES = ['image/png', 'image/jpeg', 'image/webp'];

export interface Photo {
  blob: Blob;
  /** The photo as shown and edited (orientation applied). */
  width: number;
  height: number;
  url: string;
  /** Set when the photo had to be reduced to be accepted: its size before. */
  reducedFrom: { width: number; height: number } | null;
}

/** The file is not a photo the app can read (not an image, or a damaged one). */
export class NotAPhoto extends Error {
  constructor() {
    super('This file is not a photo we can read. Choose a PNG, JPEG or WebP image.');
  }
}

export async function preparePhoto(file: Blob): Promise<Photo> {
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file, { imageOrientation: 'from-image' });
  } catch {
    throw new NotAPhoto();
  }
  const { width, height } = bitmap;
  const fits = width <= MAX_SIDE && height <= MAX_SIDE && width * height <= MAX_PIXELS;
  if (fits && PHOTO_TYPES.includes(file.type) && file.size <= MAX_ORIGINAL_BYTES) {
    bitmap.close();
    return { blob: file, width, height, url: URL.createObjectURL(file), reducedFrom: null };
  }
  const scale = Math.min(1, MAX_SIDE / Math.max(width, height), Math.sqrt(MAX_PIXELS / (width * height)));
  const w = Math.max(1, Math.floor(width * scale + 1e-6));
  const h = Math.max(1, Math.floor(height * scale + 1e-6));
  const canvas = document.createElement('canvas');
  canvas.width = w;
  canvas.height = h;
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('This browser cannot draw images.');
  ctx.drawImage(bitmap, 0, 0, w, h);
  bitmap.close();
  let blob = await toBlob(canvas, 'image/png');
  if (blob.size > MAX_ORIGINAL_BYTES) blob = await toBlob(canvas, 'image/jpeg', 0.92);
  const reducedFrom = w === width && h === height ? null : { width, height };
  return { blob, width: w, height: h, url: URL.createObjectURL(blob), reducedFrom };
}

export function toBlob(canvas: HTMLCanvasElement, type: string, quality?: number): Promise<Blob> {
  return new Promise((resolve, reject) => {
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('Could not encode the image.'))), type, quality);
  });
}
