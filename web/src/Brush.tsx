// The brush: paint or erase the area to redraw over the photo, with a size and undo. Strokes
// are kept as data and drawn at the photo's own size, so the exported mask matches the photo
// pixel for pixel whatever size it is shown at.
import { useEffect, useRef, useState } from 'react';
import { encode } from 'fast-png';

export interface Stroke {
  erase: boolean;
  size: number;
  points: [number, number][];
}

export interface BrushHandle {
  exportMask: () => Promise<Blob>;
}

function draw(ctx: CanvasRenderingContext2D, strokes: Stroke[], paint: string): void {
  ctx.clearRect(0, 0, ctx.canvas.width, ctx.canvas.height);
  ctx.lineCap = 'round';
  ctx.lineJoin = 'round';
  for (const s of strokes) {
    ctx.globalCompositeOperation = s.erase ? 'destination-out' : 'source-over';
    ctx.strokeStyle = paint;
    ctx.fillStyle = paint;
    ctx.lineWidth = s.size;
    const [first, ...rest] = s.points;
    if (!first) continue;
    ctx.beginPath();
    ctx.arc(first[0], first[1], s.size / 2, 0, Math.PI * 2);
    ctx.fill();
    ctx.beginPath();
    ctx.moveTo(first[0], first[1]);
    for (const [x, y] of rest) ctx.lineTo(x, y);
    ctx.stroke();
  }
  ctx.globalCompositeOperation = 'source-over';
}

/**
 * The painted strokes as a one-channel PNG: white where painted (redraw), black elsewhere
 * (keep), anti-aliased grey between. A canvas's own PNG is RGBA, four times the bytes for the
 * consumer to inflate (a 12 MP mask: 48 MB, a sixth of its image work) for the same weights.
 */
function greyMask(ctx: CanvasRenderingContext2D, width: number, height: number): Blob {
  // The strokes are drawn white on transparent: the alpha is the coverage, which is the grey.
  const rgba = ctx.getImageData(0, 0, width, height).data;
  const grey = new Uint8Array(width * height);
  for (let i = 0; i < grey.length; i++) grey[i] = rgba[i * 4 + 3] ?? 0;
  const png = encode({ width, height, data: grey, channels: 1, depth: 8 });
  return new Blob([png.slice().buffer], { type: 'image/png' });
}

export function Brush(props: {
  photoUrl: string;
  width: number;
  height: number;
  /** Strokes painted before (a kept draft). */
  initial: Stroke[];
  onReady: (h: BrushHandle | null) => void;
  /** Each finished change (a stroke ended, an undo, a clear), to keep it in the draft. */
  onStrokes: (s: Stroke[]) => void;
}) {
  const { photoUrl, width, height, onReady, onStrokes } = props;
  const canvas = useRef<HTMLCanvasElement>(null);
  const [strokes, setStrokes] = useState<Stroke[]>(props.initial);
  const current = useRef<Stroke | null>(null);
  const [erase, setErase] = useState(false);
  const [size, setSize] = useState(Math.round(Math.max(width, height) / 12));

  useEffect(() => {
    const ctx = canvas.current?.getContext('2d');
    if (ctx) draw(ctx, strokes, 'rgba(255, 64, 160, 0.55)');
  }, [strokes]);

  useEffect(() => {
    if (!current.current) onStrokes(strokes);
  }, [strokes, onStrokes]);

  useEffect(() => {
    onReady(
      strokes.length === 0
        ? null
        : {
            // A throw inside the executor (no 2-D context) is the promise's rejection.
            exportMask: () =>
              new Promise<Blob>((resolve) => {
                const c = document.createElement('canvas');
                c.width = width;
                c.height = height;
                const ctx = c.getContext('2d', { willReadFrequently: true });
                if (!ctx) throw new Error('This browser cannot draw images.');
                draw(ctx, strokes, '#ffffff');
                resolve(greyMask(ctx, width, height));
              }),
          },
    );
  }, [strokes, width, height, onReady]);

  const at = (e: React.PointerEvent<HTMLCanvasElement>): [number, number] => {
    const r = e.currentTarget.getBoundingClientRect();
    // A tenth of a photo pixel is finer than any brush, and keeps a kept draft small.
    const tenth = (v: number) => Math.round(v * 10) / 10;
    return [tenth(((e.clientX - r.left) * width) / r.width), tenth(((e.clientY - r.top) * height) / r.height)];
  };

  const keys = useKeyboardBrush({ width, height, size, setSize, paint: (at) => setStrokes((all) => [...all, { erase, size, points: [at] }]) });

  return (
    <div className="brush">
      <div className="brush-tools" role="toolbar" aria-label="Brush">
        <button type="button" aria-pressed={!erase} onClick={() => setErase(false)}>Paint</button>
        <button type="button" aria-pressed={erase} onClick={() => setErase(true)}>Erase</button>
        <label>
          Size
          <input type="range" min={4} max={Math.max(8, Math.round(Math.max(width, height) / 4))} value={size} onChange={(e) => setSize(Number(e.target.value))} />
        </label>
        <button type="button" disabled={strokes.length === 0} onClick={() => setStrokes((s) => s.slice(0, -1))}>Undo</button>
        <button type="button" disabled={strokes.length === 0} onClick={() => setStrokes([])}>Clear</button>
      </div>
      <div className="stage" style={{ aspectRatio: `${String(width)} / ${String(height)}` }}>
        <img src={photoUrl} alt="Your photo" />
        <canvas
          ref={canvas}
          width={width}
          height={height}
          data-testid="brush-canvas"
          aria-label="Paint over the area to redraw. With the keyboard: the arrows move the brush (with Shift, finely), + and − resize it, Enter or Space paints."
          aria-keyshortcuts="ArrowUp ArrowDown ArrowLeft ArrowRight + - Enter Space"
          role="application"
          aria-roledescription="brush"
          tabIndex={0}
          onBlur={keys.onBlur}
          onKeyDown={keys.onKeyDown}
          onPointerDown={(e) => {
            e.currentTarget.setPointerCapture(e.pointerId);
            const stroke: Stroke = { erase, size, points: [at(e)] };
            current.current = stroke;
            setStrokes((s) => [...s, stroke]);
          }}
          onPointerMove={(e) => {
            const s = current.current;
            if (!s) return;
            s.points.push(at(e));
            const copy = { ...s, points: [...s.points] };
            setStrokes((all) => [...all.slice(0, -1), copy]);
          }}
          onPointerUp={() => {
            current.current = null;
            onStrokes(strokes);
          }}
        />
        {keys.cursor && (
          <span
            className="brush-cursor"
            data-testid="brush-cursor"
            aria-hidden="true"
            style={{
              left: `${String(((keys.cursor[0] - size / 2) / width) * 100)}%`,
              top: `${String(((keys.cursor[1] - size / 2) / height) * 100)}%`,
              width: `${String((size / width) * 100)}%`,
              height: `${String((size / height) * 100)}%`,
            }}
          />
        )}
      </div>
      <p className="hint">{strokes.length === 0 ? 'Paint over the part to redraw.' : `${String(strokes.length)} stroke(s) painted.`}</p>
    </div>
  );
}

/**
 * The brush without a pointer: once a key is pressed on the focused canvas a round cursor
 * shows where the brush is; the arrows move it by a twentieth of the photo (a hundredth with
 * Shift), + and − resize it, and Enter or Space paints (or erases) one dab there.
 */
function useKeyboardBrush(b: {
  width: number;
  height: number;
  size: number;
  setSize: (s: number) => void;
  paint: (at: [number, number]) => void;
}) {
  const [cursor, setCursor] = useState<[number, number] | null>(null);
  const onKeyDown = (e: React.KeyboardEvent) => {
    const at = cursor ?? [b.width / 2, b.height / 2];
    const step = (e.shiftKey ? 0.01 : 0.05) * Math.max(b.width, b.height);
    const clamp = (v: number, max: number) => Math.min(max, Math.max(0, v));
    const move = (dx: number, dy: number) => setCursor([clamp(at[0] + dx, b.width), clamp(at[1] + dy, b.height)]);
    const most = Math.max(8, Math.round(Math.max(b.width, b.height) / 4));
    const actions: Record<string, () => void> = {
      ArrowLeft: () => move(-step, 0),
      ArrowRight: () => move(step, 0),
      ArrowUp: () => move(0, -step),
      ArrowDown: () => move(0, step),
      '+': () => b.setSize(Math.min(most, Math.round(b.size * 1.25))),
      '=': () => b.setSize(Math.min(most, Math.round(b.size * 1.25))),
      '-': () => b.setSize(Math.max(4, Math.round(b.size / 1.25))),
      Enter: () => b.paint(at),
      ' ': () => b.paint(at),
    };
    const act = actions[e.key];
    if (!act) return;
    e.preventDefault();
    act();
    // The first key shows the cursor (at the middle) before it moves it.
    setCursor((c) => c ?? at);
  };
  return {
    cursor,
    onKeyDown,
    onBlur: () => setCursor(null),
  };
}
