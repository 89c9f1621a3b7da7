// The brush: paint or erase the area to redraw over the photo, with a size and undo. Strokes
// are kept as data and drawn at the photo's own size, so the exported mask matches the photo
// pixel for pixel whatever size it is shown at.
import { useEffect, useRef, useState } from 'react';
import { toBlob } from './image';

interface Stroke {
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

export function Brush(props: { photoUrl: string; width: number; height: number; onReady: (h: BrushHandle | null) => void }) {
  const { photoUrl, width, height, onReady } = props;
  const canvas = useRef<HTMLCanvasElement>(null);
  const [strokes, setStrokes] = useState<Stroke[]>([]);
  const current = useRef<Stroke | null>(null);
  const [erase, setErase] = useState(false);
  const [size, setSize] = useState(Math.round(Math.max(width, height) / 12));

  useEffect(() => {
    const ctx = canvas.current?.getContext('2d');
    if (ctx) draw(ctx, strokes, 'rgba(255, 64, 160, 0.55)');
  }, [strokes]);

  useEffect(() => {
    onReady(
      strokes.length === 0
        ? null
        : {
            exportMask: async () => {
              const c = document.createElement('canvas');
              c.width = width;
              c.height = height;
              const ctx = c.getContext('2d');
              if (!ctx) throw new Error('This browser cannot draw images.');
              draw(ctx, strokes, '#ffffff');
              // Opaque: black where nothing is painted (keep), white where painted (redraw).
              ctx.globalCompositeOperation = 'destination-over';
              ctx.fillStyle = '#000000';
              ctx.fillRect(0, 0, width, height);
              return toBlob(c, 'image/png');
            },
          },
    );
  }, [strokes, width, height, onReady]);

  const at = (e: React.PointerEvent<HTMLCanvasElement>): [number, number] => {
    const r = e.currentTarget.getBoundingClientRect();
    return [((e.clientX - r.left) * width) / r.width, ((e.clientY - r.top) * height) / r.height];
  };

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
          aria-label="Paint over the area to redraw"
          role="img"
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
          }}
        />
      </div>
      <p className="hint">{strokes.length === 0 ? 'Paint over the part to redraw.' : `${String(strokes.length)} stroke(s) painted.`}</p>
    </div>
  );
}
