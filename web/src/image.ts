// Photos in the browser: decoded with the file's orientation applied, downscaled to the API's
// limits, and masks exported the way the API reads them (an opaque PNG the photo's size,
// white = may change, black = keep; `shared/src/domain/imaging.rs`, `mask_from_png`).

/** The API's ceiling is 8192 px a side and 40 MP (`DecodeLimits::PHOTO`); 2048 keeps uploads
 *  small and is more than the image model uses. */
export const MAX_SIDE = 2048;
/** `AssetKind::Original::max_bytes`. */
export const MAX_ORIGINAL_BYTES = 20 * 1024 * 1024;

export interface Photo {
  blob: Blob;
  width: number;
  height: number;
  url: string;
}

export async function preparePhoto(file: Blob): Promise<Photo> {
  const bitmap = await createImageBitmap(file, { imageOrientation: 'from-image' });
  const scale = Math.min(1, MAX_SIDE / Math.max(bitmap.width, bitmap.height));
  const width = Math.max(1, Math.round(bitmap.width * scale));
  const height = Math.max(1, Math.round(bitmap.height * scale));
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d');
  if (!ctx) throw new Error('This browser cannot draw images.');
  ctx.drawImage(bitmap, 0, 0, width, height);
  bitmap.close();
  let blob = await toBlob(canvas, 'image/png');
  if (blob.size > MAX_ORIGINAL_BYTES) blob = await toBlob(canvas, 'image/jpeg', 0.92);
  return { blob, width, height, url: URL.createObjectURL(blob) };
}

export function toBlob(canvas: HTMLCanvasElement, type: string, quality?: number): Promise<Blob> {
  return new Promise((resolve, reject) => {
    canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('Could not encode the image.'))), type, quality);
  });
}
