// The export as one file a person can keep: a .zip with everything the API keeps about them
// (data.json, every page of GET /v1/account/export merged), the photos their edits started
// from and the results, as files, and a README saying what is in it. The links inside
// data.json expire within minutes; the images in the archive do not.
import { strToU8, zipSync } from 'fflate';
import { api, type Schemas } from './api/client';

type ExportPage = Schemas['ExportPageView'];
type Job = ExportPage['jobs'][number];
export interface ExportData { account: ExportPage['account']; ledger: ExportPage['ledger']; jobs: ExportPage['jobs'] }

/** Every page of the export, merged into one document. */
async function exportAll(): Promise<ExportData> {
  const all: ExportData = { account: undefined, ledger: [], jobs: [] };
  let cursor: string | undefined;
  for (;;) {
    const page = await api.exportPage(cursor);
    all.account ??= page.account;
    all.ledger.push(...page.ledger);
    all.jobs.push(...page.jobs);
    if (!page.next_cursor) return all;
    cursor = page.next_cursor;
  }
}

const EXTENSIONS: Record<string, string> = { 'image/jpeg': 'jpg', 'image/png': 'png', 'image/webp': 'webp', 'image/heic': 'heic' };

/** Each image a job still has: the photo it started from and its result, by archive folder. */
function imagesOf(job: Job): { folder: 'photos' | 'results'; name: string; url: string }[] {
  const r = job.result;
  if (!r) return [];
  return [
    { folder: 'photos', name: `${job.id}-original`, url: r.original_url },
    { folder: 'results', name: job.id, url: r.url },
  ];
}

export interface Archive { zip: Uint8Array; edits: number; images: number; missing: string[]; rows: number }

/** The whole export with its images. An image that cannot be fetched is named in `missing` and
 *  in the README, never dropped without a word. */
export async function exportArchive(): Promise<Archive> {
  const data = await exportAll();
  const files: Record<string, Uint8Array> = {};
  // Repairs share their lineage's photo: one copy of each stored object.
  const seen = new Set<string>();
  const missing: string[] = [];
  for (const job of data.jobs) {
    for (const img of imagesOf(job)) {
      const key = new URL(img.url).pathname;
      if (seen.has(key)) continue;
      seen.add(key);
      try {
        const res = await fetch(img.url);
        if (!res.ok) throw new Error(String(res.status));
        const type = (res.headers.get('content-type') ?? '').split(';', 1)[0]?.trim() ?? '';
        files[`${img.folder}/${img.name}.${EXTENSIONS[type] ?? 'bin'}`] = new Uint8Array(await res.arrayBuffer());
      } catch {
        missing.push(`${img.folder}/${img.name}`);
      }
    }
  }
  files['data.json'] = strToU8(JSON.stringify(data, null, 2));
  files['README.txt'] = strToU8(readme(data, missing));
  // The images are compressed already: stored, not deflated again.
  return { zip: zipSync(files, { level: 0 }), edits: data.jobs.length, images: seen.size - missing.length, missing, rows: data.ledger.length };
}

function readme(data: ExportData, missing: string[]): string {
  const lines = [
    'Your Atelier data, as kept on the day of this download.',
    '',
    'data.json     your account (balance, settings), every ledger row (each purchase, charge and',
    '              refund) and every edit and repair with its settings, review and result.',
    'photos/       the photo each edit started from, named by the edit\'s id.',
    'results/      each edit\'s result at full resolution (PNG), named by the edit\'s id.',
    '',
    `${String(data.jobs.length)} edit(s), ${String(data.ledger.length)} ledger row(s).`,
    'The links inside data.json stop working a few minutes after the download; the images',
    'here do not. Edits whose images were deleted are listed without images.',
  ];
  if (missing.length > 0) lines.push('', 'Could not be fetched (download again to retry):', ...missing.map((m) => `  ${m}`));
  return `${lines.join('\n')}\n`;
}
