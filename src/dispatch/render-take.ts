import { PNG } from 'pngjs';

/** Frame size of the local backend, in pixels (16:9, small enough to render instantly). */
export const FRAME_WIDTH = 320;
export const FRAME_HEIGHT = 180;

/** Called with 25, 50, 75 and 100 as the frame is rendered. */
export type OnProgress = (percent: number) => void;

type Rgb = readonly [number, number, number];

// 75% SMPTE bars: grey, yellow, cyan, green, magenta, red, blue.
const BARS: readonly Rgb[] = [
  [191, 191, 191],
  [191, 191, 0],
  [0, 191, 191],
  [0, 191, 0],
  [191, 0, 191],
  [191, 0, 0],
  [0, 0, 191],
];
const BLACK: Rgb = [16, 16, 16];
const WHITE: Rgb = [235, 235, 235];

// 3x5 glyphs for the take label, one string of 15 bits per character, row by row.
const GLYPHS: Readonly<Record<string, string>> = {
  '0': '111101101101111',
  '1': '010110010010111',
  '2': '111001111100111',
  '3': '111001111001111',
  '4': '101101111001001',
  '5': '111100111001111',
  '6': '111100111101111',
  '7': '111001001001001',
  '8': '111101111101111',
  '9': '111101111001111',
  t: '010111010010011',
  k: '100101110101101',
  _: '000000000000111',
};
const GLYPH_SCALE = 4;

/** Renders one take with `local-testsrc-v1`: a 320x180 RGB PNG test pattern, deterministic per take id, varied per take number so takes look different. */
export function renderTestPattern(takeId: string, takeNumber: number, onProgress: OnProgress = () => {}): Buffer {
  const png = new PNG({ width: FRAME_WIDTH, height: FRAME_HEIGHT });
  const rotation = takeNumber % BARS.length;
  const barAt = (x: number, reversed: boolean): Rgb => {
    const index = Math.floor((x * BARS.length) / FRAME_WIDTH);
    const slot = (index + rotation) % BARS.length;
    if (!reversed) return BARS[slot] ?? BLACK;
    // SMPTE castellations: under every other bar, the bar mirrored in the palette; black between.
    return index % 2 === 1 ? BLACK : (BARS[BARS.length - 1 - slot] ?? BLACK);
  };
  const label = labelMask(takeId);
  const bandTop = 135;
  const quarter = FRAME_HEIGHT / 4;

  for (let y = 0; y < FRAME_HEIGHT; y++) {
    for (let x = 0; x < FRAME_WIDTH; x++) {
      let rgb: Rgb;
      if (y < 120) rgb = barAt(x, false);
      else if (y < bandTop) rgb = barAt(x, true);
      else if (x < label.width + 16) rgb = label.has(x - 8, y - bandTop - 12) ? WHITE : BLACK;
      else {
        const v = Math.round(((x * 255) / FRAME_WIDTH + takeNumber * 37) % 256);
        rgb = [v, v, v];
      }
      const offset = (y * FRAME_WIDTH + x) * 4;
      png.data[offset] = rgb[0];
      png.data[offset + 1] = rgb[1];
      png.data[offset + 2] = rgb[2];
      png.data[offset + 3] = 255;
    }
    if ((y + 1) % quarter === 0) onProgress(((y + 1) / quarter) * 25);
  }
  return PNG.sync.write(png, { colorType: 2 });
}

/** A pixel mask of `text` in the 3x5 font scaled by GLYPH_SCALE; unknown characters are blank. */
function labelMask(text: string): { width: number; has: (x: number, y: number) => boolean } {
  const advance = 4 * GLYPH_SCALE;
  return {
    width: text.length * advance,
    has: (x, y) => {
      if (x < 0 || y < 0 || y >= 5 * GLYPH_SCALE) return false;
      const glyph = GLYPHS[text[Math.floor(x / advance)] ?? ''];
      const gx = Math.floor((x % advance) / GLYPH_SCALE);
      if (glyph === undefined || gx > 2) return false;
      return glyph[Math.floor(y / GLYPH_SCALE) * 3 + gx] === '1';
    },
  };
}
